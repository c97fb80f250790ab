package ai.bespokelabs.sandbox.cli;

import ai.bespokelabs.sandbox.client.CreateSandbox;
import ai.bespokelabs.sandbox.client.LogEntry;
import ai.bespokelabs.sandbox.client.Page;
import ai.bespokelabs.sandbox.client.Sandbox;
import java.util.ArrayList;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** The sandbox commands: create, ls, get, rm, logs. */
final class SandboxCommands {
  private SandboxCommands() {
  }

  @Command(name = "create", description = "Create a sandbox and print its id.")
  static final class Create implements Callable<Integer> {
    private final Context ctx;

    @Option(names = "--backend", description = "local, bwrap, docker, e2b, daytona, ..., or auto (the cheapest "
        + "healthy backend that fits); omitted: the organization policy's default_backend.")
    String backend;
    @Option(names = "--isolation", description = "With auto: the weakest isolation, process, namespace, container "
        + "or vm.")
    String isolation;
    @Option(names = "--max-hourly", description = "With auto: the highest catalog price (USD per hour).")
    java.math.BigDecimal maxHourly;
    @Option(names = "--prefer", split = ",", description = "With auto: backends first among equal prices.")
    java.util.List<String> prefer;
    @Option(names = "--exclude", split = ",", description = "With auto: backends never chosen.")
    java.util.List<String> exclude;
    @Option(names = "--preset", description = "A built-in or organization preset.")
    String preset;
    @Option(names = "--timeout", description = "Lifetime in seconds (also each execution's time limit).")
    Integer timeout;
    @Option(names = "--cpu", description = "CPU cores.")
    Double cpu;
    @Option(names = "--memory", description = "Memory in MiB.")
    Integer memory;
    @Option(names = "--disk", description = "Disk in MiB.")
    Integer disk;
    @Option(names = "--gpu", description = "GPU type, such as A100 or H100:2.")
    String gpu;
    @Option(names = "--image", description = "Container image.")
    String image;
    @Option(names = "--template", description = "Provider template.")
    String template;
    @Option(names = "--snapshot", description = "Snapshot to start from.")
    String snapshot;
    @Option(names = "--workdir", description = "Working directory.")
    String workdir;
    @Option(names = "--git-repo", description = "A repository to clone into the sandbox.")
    String gitRepo;
    @Option(names = "--git-ref", description = "Branch, tag or commit of --git-repo.")
    String gitRef;
    @Option(names = {"-e", "--env"}, description = "An environment variable NAME=VALUE (repeatable).")
    Map<String, String> env;
    @Option(names = "--internet", negatable = true, description = "Allow (or with --no-internet forbid) "
        + "reaching the internet.")
    Boolean internet;
    @Option(names = "--idempotency-key", description = "Repeat-safe key (default: a fresh one).")
    String idempotencyKey;

    Create(Context ctx) {
      this.ctx = ctx;
    }

    @Override
    public Integer call() {
      CreateSandbox body = CreateSandbox.on(backend).withPreset(preset).withTimeoutSecs(timeout).withCpu(cpu)
          .withMemoryMb(memory).withDiskMb(disk).withGpu(gpu).withImage(image).withTemplate(template)
          .withSnapshotId(snapshot).withWorkdir(workdir).withGit(gitRepo, gitRef).withEnvVars(env)
          .withAllowInternet(internet).withIsolation(isolation).withMaxHourlyUsd(maxHourly).withPrefer(prefer)
          .withExclude(exclude);
      Sandbox sbx = idempotencyKey == null ? ctx.client().create(body) : ctx.client().create(body, idempotencyKey);
      if (ctx.json) {
        ctx.printJson(sbx);
      } else {
        ctx.out.println(sbx.id());
      }
      return 0;
    }
  }

  @Command(name = "ls", description = "List the organization's sandboxes, newest first.")
  static final class List implements Callable<Integer> {
    private final Context ctx;

    @Option(names = {"-a", "--all"}, description = "Also ended (destroyed and failed) sandboxes.")
    boolean all;

    List(Context ctx) {
      this.ctx = ctx;
    }

    @Override
    public Integer call() {
      java.util.List<Sandbox> shown = new ArrayList<>();
      for (Sandbox s : ctx.client().list()) {
        if (all || !("destroyed".equals(s.status()) || "failed".equals(s.status()))) {
          shown.add(s);
        }
      }
      if (ctx.json) {
        ctx.printJson(shown);
        return 0;
      }
      Table t = new Table("ID", "BACKEND", "STATUS", "CREATED", "EXPIRES");
      shown.forEach(s -> t.row(s.id(), s.backend(), s.status(), s.createdAt(), s.expiresAt()));
      t.print(ctx.out);
      return 0;
    }
  }

  @Command(name = "get", description = "Show one sandbox.")
  static final class Get implements Callable<Integer> {
    private final Context ctx;

    @Parameters(paramLabel = "ID", description = "The sandbox id.")
    String id;

    Get(Context ctx) {
      this.ctx = ctx;
    }

    @Override
    public Integer call() {
      Sandbox s = ctx.client().get(id);
      if (ctx.json) {
        ctx.printJson(s);
        return 0;
      }
      Table t = new Table("FIELD", "VALUE");
      t.row("id", s.id()).row("backend", s.backend()).row("status", s.status()).row("created_at", s.createdAt())
          .row("expires_at", s.expiresAt()).row("destroyed_at", s.destroyedAt())
          .row("termination_reason", s.terminationReason()).row("hourly_rate_usd", s.hourlyRateUsd())
          .row("cost_state", s.costState()).row("version", s.version()).row("config", s.config());
      if (s.latestError() != null) {
        t.row("latest_error", s.latestError().message() + " (code " + s.latestError().code() + ")");
      }
      t.print(ctx.out);
      return 0;
    }
  }

  @Command(name = "rm", description = "Destroy sandboxes.")
  static final class Remove implements Callable<Integer> {
    private final Context ctx;

    @Parameters(paramLabel = "ID", arity = "1..*", description = "The sandbox ids.")
    java.util.List<String> ids;

    Remove(Context ctx) {
      this.ctx = ctx;
    }

    @Override
    public Integer call() {
      java.util.List<Sandbox> gone = new ArrayList<>();
      for (String id : ids) {
        Sandbox s = ctx.client().destroy(id);
        gone.add(s);
        if (!ctx.json) {
          ctx.out.println(s.id() + " " + s.status());
        }
      }
      if (ctx.json) {
        ctx.printJson(gone);
      }
      return 0;
    }
  }

  @Command(name = "logs", description = "Print a sandbox's log (lifecycle and executions), oldest first.")
  static final class Logs implements Callable<Integer> {
    private final Context ctx;

    @Parameters(paramLabel = "ID", description = "The sandbox id.")
    String id;
    @Option(names = "--since", description = "Only entries after this ISO-8601 instant.")
    String since;

    Logs(Context ctx) {
      this.ctx = ctx;
    }

    @Override
    public Integer call() {
      java.util.List<LogEntry> entries = new ArrayList<>();
      String cursor = null;
      do {
        Page<LogEntry> page = ctx.client().logsPage(id, since, 1000, cursor);
        entries.addAll(page.items());
        cursor = page.nextCursor();
      } while (cursor != null);
      if (ctx.json) {
        ctx.printJson(entries);
        return 0;
      }
      for (LogEntry e : entries) {
        ctx.out.println(e.ts() + "  " + e.source() + (e.execId() != null ? " " + e.execId() : "") + "  "
            + e.message());
      }
      return 0;
    }
  }
}
