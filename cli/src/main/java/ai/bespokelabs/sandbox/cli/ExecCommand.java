package ai.bespokelabs.sandbox.cli;

import ai.bespokelabs.sandbox.client.ExecuteRequest;
import ai.bespokelabs.sandbox.client.Execution;
import ai.bespokelabs.sandbox.client.ExecutionResult;
import ai.bespokelabs.sandbox.client.ExecutionStream;
import ai.bespokelabs.sandbox.client.SandboxClient;
import ai.bespokelabs.sandbox.client.StreamEvent;
import java.io.IOException;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Flow;
import java.util.concurrent.atomic.AtomicInteger;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code sandbox exec ID -- COMMAND [ARGS...]}: starts the program, streams its output live over a WebSocket
 * that reconnects and resumes after a drop, forwards this process's stdin and Ctrl-C (as INT; a second Ctrl-C
 * leaves it running and exits 130), and exits with the program's exit code.
 */
@Command(name = "exec", description = {"Run a program in a sandbox, streaming its output; exits with its exit code.",
    "One word is a command line for the sandbox's shell (sandbox exec ID -- 'ls | wc -l'); several are a "
        + "program and its arguments. Stdin is forwarded; Ctrl-C sends INT to the program."})
final class ExecCommand implements Callable<Integer> {
  private final Context ctx;

  @Parameters(index = "0", paramLabel = "ID", description = "The sandbox id.")
  String id;
  @Parameters(index = "1..*", arity = "1..*", paramLabel = "COMMAND", description = "The program and its arguments.")
  List<String> command;
  @Option(names = "--no-stdin", description = "Do not forward stdin (the program reads end of file).")
  boolean noStdin;
  @Option(names = "--timeout", description = "Time limit in seconds.")
  Integer timeout;
  @Option(names = "--cwd", description = "Working directory inside the sandbox.")
  String cwd;
  @Option(names = {"-e", "--env"}, description = "An environment variable NAME=VALUE (repeatable).")
  Map<String, String> env;

  ExecCommand(Context ctx) {
    this.ctx = ctx;
  }

  @Override
  public Integer call() throws Exception {
    List<String> argv = command;
    SandboxClient client = ctx.client();
    ExecuteRequest req = ExecuteRequest.command(argv.get(0), argv.subList(1, argv.size()))
        .withStdin(!noStdin).withTimeoutSecs(timeout).withCwd(cwd).withEnv(env);
    Execution started = client.start(id, req);
    AtomicInteger interrupts = new AtomicInteger();
    Interrupts.set(() -> {
      if (interrupts.incrementAndGet() > 1) {
        return false;
      }
      try {
        client.signal(id, started.id(), "INT");
      } catch (RuntimeException e) {
        ctx.err.println("error: " + SandboxCommand.describe(e));
      }
      return true;
    });
    try {
      if (!noStdin) {
        Thread.ofPlatform().daemon().name("sandbox-stdin").start(() -> forwardStdin(client, started.id()));
      }
      ExecutionStream stream = client.stream(id, started.id());
      stream.subscribe(new Printer());
      ExecutionResult result;
      try {
        result = stream.result().get();
      } catch (ExecutionException e) {
        throw e.getCause() instanceof Exception cause ? cause : e;
      }
      if (ctx.json) {
        ctx.printJsonLine(Map.of("type", "exit", "result", result));
      }
      ctx.out.flush();
      ctx.err.flush();
      return result.exitCode();
    } finally {
      Interrupts.clear();
    }
  }

  /** Sends what this process reads on stdin to the program, then closes its stdin; stops once it ended. */
  private void forwardStdin(SandboxClient client, String execId) {
    byte[] buf = new byte[64 * 1024];
    try {
      int n;
      while ((n = ctx.in.read(buf)) >= 0) {
        if (n > 0) {
          client.stdin(id, execId, Arrays.copyOf(buf, n));
        }
      }
      client.closeStdin(id, execId);
    } catch (IOException | RuntimeException e) {
      // the program ended or stopped reading: nothing more to send
    }
  }

  /** Writes output as it arrives, asking for the next chunk only once this one is written (backpressure). */
  private final class Printer implements Flow.Subscriber<StreamEvent> {
    private Flow.Subscription subscription;

    @Override
    public void onSubscribe(Flow.Subscription s) {
      subscription = s;
      s.request(1);
    }

    @Override
    public void onNext(StreamEvent event) {
      switch (event) {
        case StreamEvent.OutputChunk c when ctx.json -> {
          Map<String, Object> line = new LinkedHashMap<>();
          line.put("type", c.stream());
          line.put("seq", c.seq());
          line.put("data", c.text());
          ctx.printJsonLine(line);
        }
        case StreamEvent.OutputChunk c -> {
          var target = c.isStderr() ? ctx.err : ctx.out;
          target.write(c.data(), 0, c.data().length);
          target.flush();
        }
        case StreamEvent.Gap g -> ctx.err.println("sandbox: " + g.message() + " (output " + g.fromSeq() + " to "
            + g.toSeq() + " is lost)");
        case StreamEvent.Notice n -> ctx.err.println("sandbox: " + n.message());
        case StreamEvent.Exit x -> {
          // the caller reports the result
        }
      }
      subscription.request(1);
    }

    @Override
    public void onError(Throwable t) {
      // the result future carries the failure
    }

    @Override
    public void onComplete() {
      // the result future carries the result
    }
  }
}
