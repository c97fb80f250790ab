package ai.bespokelabs.sandbox.adapters.runpod;

import ai.bespokelabs.sandbox.adapters.exec.Timeouts;
import ai.bespokelabs.sandbox.adapters.spi.Execution;
import ai.bespokelabs.sandbox.adapters.spi.OutputSink;
import ai.bespokelabs.sandbox.adapters.spi.OutputSink.Stream;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import io.vertx.core.AsyncResult;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.buffer.Buffer;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.apache.sshd.client.session.ClientSession;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One program on a pod, run detached from any SSH connection ({@link RunPodScripts}): its output is streamed by
 * following its files from the byte offsets delivered so far ({@link RunPodFollow}); when the connection drops,
 * the gateway reconnects (bounded retries with backoff) and resumes from those offsets, so output is neither
 * lost nor repeated and the program keeps running meanwhile. Stdin is written at byte offsets of a file (a
 * retried write is harmless) and ended by a marker file; signals go to the program's process group; the exit
 * status is read from the file the wrapper writes, then the directory is removed. Runs on the adapter's context.
 * When the pod stays unreachable through every retry, the execution ends with exit code -1 and a line on stderr
 * saying so.
 */
final class RunPodExecution implements Execution {
  private static final Logger LOG = LoggerFactory.getLogger(RunPodExecution.class);
  /** Waits before each reconnection; their number bounds the retries of one step. */
  static final long[] BACKOFF_MS = {200, 500, 1_000, 2_000, 4_000, 8_000};
  static final int LOST = -1;
  static final String LOST_MESSAGE = "runpod: the SSH connection to the pod was lost and could not be restored; "
      + "the program's end is unknown\n";
  private static final Set<String> SIGNALS = Set.of("HUP", "INT", "QUIT", "KILL", "TERM", "PIPE", "ALRM", "USR1",
      "USR2");

  private final Context context;
  private final Function<String, Future<ClientSession>> sessions;
  private final String dir;
  private final OutputSink sink;
  private final long commandTimeoutMs;
  private final int timeoutSecs;
  private final long startedNanos = System.nanoTime();
  private final long[] offsets = new long[2];
  private Future<Void> stdin = Future.succeededFuture();
  private long stdinOffset;
  private boolean stdinOpen;
  private boolean cancelled;
  private boolean timedOut;
  private long timer = -1;

  private RunPodExecution(Context context, Function<String, Future<ClientSession>> sessions, String dir,
      OutputSink sink, boolean keepStdin, int timeoutSecs, long commandTimeoutMs) {
    this.context = context;
    this.sessions = sessions;
    this.dir = dir;
    this.sink = sink;
    this.stdinOpen = keepStdin;
    this.timeoutSecs = timeoutSecs;
    this.commandTimeoutMs = commandTimeoutMs;
  }

  /**
   * Starts the program with {@code launch} (see {@link RunPodScripts#launch}) and follows its output on the same
   * channel ({@link RunPodScripts#start}); completes once it runs.
   *
   * @param sessions the pod's SSH session for an operation, connected anew when the last one dropped
   */
  static Future<Execution> start(Context context, Function<String, Future<ClientSession>> sessions, String dir,
      String launch, OutputSink sink, boolean keepStdin, int timeoutSecs, long commandTimeoutMs) {
    RunPodExecution run = new RunPodExecution(context, sessions, dir, sink, keepStdin, timeoutSecs,
        commandTimeoutMs);
    Promise<Execution> started = Promise.promise();
    run.launch(RunPodScripts.start(dir, launch), started, 0);
    return started.future();
  }

  /**
   * The launch and the first follow on one channel; retried whole while it drops before the program runs (the
   * launch starts nothing twice), followed like any other once it does.
   */
  private void launch(String script, Promise<Execution> started, int failures) {
    Promise<Void> running = Promise.promise();
    running.future().onSuccess(v -> started.tryComplete(running()));
    sessions.apply("execute")
        .compose(s -> RunPodFollow.run(context, s, script, sink, offsets, running, commandTimeoutMs))
        .onComplete(ar -> {
          if (running.future().succeeded()) {
            followed(ar, 0, 0);
            return;
          }
          if (ar.succeeded() && ar.result() != null) {
            started.fail(RunPodErrors.transportError("execute",
                new IOException("the program did not start (status " + ar.result() + ")"), false));
            return;
          }
          Throwable t = ar.failed() ? ar.cause()
              : new IOException("the SSH channel closed before the program started");
          if (!retryable(t) || failures >= BACKOFF_MS.length) {
            started.fail(RunPodErrors.transportError("execute", t, false));
            return;
          }
          context.owner().setTimer(BACKOFF_MS[failures], x -> launch(script, started, failures + 1));
        });
  }

  private Execution running() {
    if (timeoutSecs > 0) {
      timer = context.owner().setTimer(TimeUnit.SECONDS.toMillis(timeoutSecs), t -> {
        timedOut = true;
        kill("KILL");
      });
    }
    return this;
  }

  /** One follow from the offsets delivered so far; a drop resumes with the next, until the retries run out. */
  private void follow(int failures) {
    long before = offsets[0] + offsets[1];
    sessions.apply("execute")
        .compose(s -> RunPodFollow.run(context, s, RunPodScripts.follow(dir, offsets[0], offsets[1]), sink, offsets))
        .onComplete(ar -> followed(ar, before, failures));
  }

  /**
   * A follow ended: with the program's status, with {@link RunPodScripts#UNSURE} (ask for it) or with null
   * (dropped: resume, unless the retries without progress since {@code before} ran out).
   */
  private void followed(AsyncResult<Integer> ar, long before, int failures) {
    Integer status = ar.succeeded() ? ar.result() : null;
    if (status != null && status != RunPodScripts.UNSURE) {
      command("cleanup", RunPodScripts.cleanup(dir), null); // best effort: the directory is in /tmp
      finish(status);
      return;
    }
    if (status != null) {
      exitStatus();
      return;
    }
    int next = offsets[0] + offsets[1] > before ? 0 : failures; // progress resets the count
    if (ar.failed() && !retryable(ar.cause()) || next >= BACKOFF_MS.length) {
      lost(ar.failed() ? ar.cause() : null);
      return;
    }
    context.owner().setTimer(BACKOFF_MS[next], t -> follow(next + 1));
  }

  /** Reads the exit status the wrapper wrote, removes the directory and reports the end. */
  private void exitStatus() {
    command("status", RunPodScripts.status(dir), null).onComplete(ar -> {
      Integer code = null;
      if (ar.succeeded() && ar.result().status() == 0) {
        try {
          code = Integer.parseInt(ar.result().stdout().trim());
        } catch (NumberFormatException e) {
          code = null;
        }
      }
      if (code == null) {
        lost(ar.failed() ? ar.cause() : null);
        return;
      }
      command("cleanup", RunPodScripts.cleanup(dir), null); // best effort: the directory is in the pod's /tmp
      finish(code);
    });
  }

  private void finish(int code) {
    if (timer >= 0) {
      context.owner().cancelTimer(timer);
    }
    long durationMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startedNanos);
    if (timedOut) {
      sink.output(Stream.STDERR, Timeouts.message(timeoutSecs))
          .onComplete(ar -> sink.exited(Timeouts.EXIT_CODE, true, false, durationMs));
      return;
    }
    sink.exited(code, false, cancelled, durationMs);
  }

  private void lost(Throwable cause) {
    LOG.warn("runpod execution in {} lost its pod: {}", dir, cause == null ? "no exit status"
        : cause.getClass().getSimpleName());
    if (timer >= 0) {
      context.owner().cancelTimer(timer);
    }
    long durationMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startedNanos);
    sink.output(Stream.STDERR, LOST_MESSAGE.getBytes(StandardCharsets.UTF_8))
        .onComplete(ar -> sink.exited(LOST, false, cancelled, durationMs));
  }

  /** Runs {@code script} on the pod, reconnecting and retrying while the connection fails. */
  private Future<RunPodCommand.Result> command(String op, String script, byte[] input) {
    return attempt(op, script, input, 0);
  }

  private Future<RunPodCommand.Result> attempt(String op, String script, byte[] input, int failures) {
    return sessions.apply(op)
        .compose(s -> RunPodCommand.run(context, s, script, input, commandTimeoutMs))
        .recover(t -> {
          if (!retryable(t) || failures >= BACKOFF_MS.length) {
            return Future.failedFuture(RunPodErrors.transportError(op, t, false));
          }
          return context.owner().timer(BACKOFF_MS[failures], TimeUnit.MILLISECONDS)
              .compose(v -> attempt(op, script, input, failures + 1));
        });
  }

  /** Connection failures are retried; a refused host key, a pod that is gone or a caller's mistake are not. */
  private static boolean retryable(Throwable t) {
    if (t instanceof ProviderException p) {
      return p.error().retryable();
    }
    return !(t instanceof ApiException);
  }

  @Override
  public Future<Void> write(Buffer data) {
    if (!stdinOpen) {
      return Future.failedFuture(new ApiException(409, "stdin is closed"));
    }
    byte[] bytes = data.getBytes();
    if (bytes.length == 0) {
      return stdin;
    }
    stdin = stdin.compose(v -> command("stdin", RunPodScripts.stdin(dir, stdinOffset), bytes).compose(r -> {
      if (r.status() != 0) {
        return Future.failedFuture(new ApiException(409, "stdin is closed"));
      }
      stdinOffset += bytes.length;
      return Future.succeededFuture();
    }));
    return stdin;
  }

  @Override
  public Future<Void> closeStdin() {
    if (!stdinOpen) {
      return Future.succeededFuture();
    }
    stdinOpen = false;
    stdin = stdin.transform(ar -> command("stdin", RunPodScripts.eof(dir), null).mapEmpty());
    return stdin;
  }

  @Override
  public Future<Void> signal(String signal) {
    if (!SIGNALS.contains(signal)) {
      return Future.failedFuture(new ApiException(422, "unsupported signal: " + signal));
    }
    cancelled = true;
    return kill(signal);
  }

  /** {@code kill -s SIG} to the program's process group. */
  private Future<Void> kill(String signal) {
    return command("signal", RunPodScripts.signal(dir, signal), null).mapEmpty();
  }
}
