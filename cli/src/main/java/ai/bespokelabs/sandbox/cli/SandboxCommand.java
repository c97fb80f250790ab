package ai.bespokelabs.sandbox.cli;

import ai.bespokelabs.sandbox.client.PolicyDeniedException;
import ai.bespokelabs.sandbox.client.ProviderException;
import ai.bespokelabs.sandbox.client.SandboxException;
import java.io.InputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.lang.reflect.Constructor;
import java.util.LinkedHashMap;
import java.util.Map;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ScopeType;
import picocli.CommandLine.Spec;

/** The root of the {@code sandbox} command. */
@Command(name = "sandbox", mixinStandardHelpOptions = true, scope = ScopeType.INHERIT,
    version = "sandbox 0.1.0",
    description = "Drive a sandbox gateway from the terminal: sandboxes, executions, files, costs, policies, keys.",
    footer = {"", "The gateway and key come from BESPOKE_URL and BESPOKE_API_KEY, else from `sandbox login`.",
        "Errors print the gateway's message and code and exit with 1 (2 for a usage mistake)."},
    subcommands = {LoginCommand.class, SandboxCommands.Create.class, SandboxCommands.List.class,
        SandboxCommands.Get.class, SandboxCommands.Remove.class, ExecCommand.class, CopyCommand.class,
        SandboxCommands.Logs.class, OrgCommands.CostsCommand.class, OrgCommands.PolicyCommand.class,
        OrgCommands.KeysCommand.class})
public final class SandboxCommand implements Runnable {
  private final Context ctx;
  @Spec
  CommandSpec spec;

  SandboxCommand(Context ctx) {
    this.ctx = ctx;
  }

  @Option(names = "--json", scope = ScopeType.INHERIT, description = "Print JSON for scripts instead of text.")
  void json(boolean value) {
    ctx.json = value;
  }

  @Override
  public void run() {
    spec.commandLine().usage(ctx.out);
  }

  /** Runs the command line {@code args} and answers its exit code. */
  public static int run(String[] args, InputStream in, PrintStream out, PrintStream err, Map<String, String> env) {
    Context ctx = new Context(in, out, err, env);
    CommandLine cmd = new CommandLine(SandboxCommand.class, new Factory(ctx));
    cmd.setOut(new PrintWriter(out, true));
    cmd.setErr(new PrintWriter(err, true));
    cmd.setExecutionExceptionHandler((e, line, parsed) -> report(ctx, e));
    try {
      return cmd.execute(args);
    } finally {
      out.flush();
      err.flush();
    }
  }

  /** Prints an error as the contract gives it (message and code) and answers the exit code 1. */
  static int report(Context ctx, Exception e) {
    Throwable t = e;
    if (ctx.json) {
      Map<String, Object> error = new LinkedHashMap<>();
      if (t instanceof SandboxException s) {
        error.put("status", s.status());
        error.put("detail", s.detail() != null ? s.detail() : s.getMessage());
      } else {
        error.put("message", String.valueOf(t.getMessage()));
      }
      ctx.err.println(ai.bespokelabs.sandbox.client.Json.MAPPER.valueToTree(Map.of("error", error)));
      return 1;
    }
    ctx.err.println("error: " + describe(t));
    return 1;
  }

  static String describe(Throwable t) {
    if (t instanceof ProviderException p) {
      StringBuilder s = new StringBuilder(p.getMessage()).append(" (code ").append(p.code()).append(", backend ")
          .append(p.backend()).append(", op ").append(p.op()).append(", outcome ").append(p.outcome());
      if (p.retryable()) {
        s.append(", retryable");
      }
      if (!p.context().isEmpty()) {
        s.append(", context ").append(p.context());
      }
      return s.append(", HTTP ").append(p.status()).append(')').toString();
    }
    if (t instanceof PolicyDeniedException p) {
      return p.getMessage() + " (code policy_denied, policy " + p.policy() + ", current " + p.current()
          + ", limit " + p.limit() + ", HTTP " + p.status() + ")";
    }
    if (t instanceof SandboxException s) {
      String status = s.status() > 0 ? "HTTP " + s.status() : "stream error";
      return s.getMessage() + (s.code() != null ? " (code " + s.code() + ", " : " (") + status + ")";
    }
    if (t instanceof CliException) {
      return t.getMessage();
    }
    return t.getClass().getSimpleName() + ": " + t.getMessage();
  }

  /** Makes commands, handing the context to those whose constructor takes it. */
  private record Factory(Context ctx) implements CommandLine.IFactory {
    @Override
    public <K> K create(Class<K> cls) throws Exception {
      for (Constructor<?> c : cls.getDeclaredConstructors()) {
        if (c.getParameterCount() == 1 && c.getParameterTypes()[0] == Context.class) {
          c.setAccessible(true);
          return cls.cast(c.newInstance(ctx));
        }
      }
      return CommandLine.defaultFactory().create(cls);
    }
  }
}
