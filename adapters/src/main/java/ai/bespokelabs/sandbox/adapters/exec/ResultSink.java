package ai.bespokelabs.sandbox.adapters.exec;

import ai.bespokelabs.sandbox.adapters.spi.OutputSink;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecResult;
import io.vertx.core.Future;
import io.vertx.core.Promise;

/** Collects a program's capped output; {@link #result()} completes when it ended. */
public final class ResultSink implements OutputSink {
  private static final Future<Void> TAKEN = Future.succeededFuture();
  private final CappedOutput stdout;
  private final CappedOutput stderr;
  private final Promise<ExecResult> result = Promise.promise();

  public ResultSink(int limitBytes) {
    this.stdout = new CappedOutput(limitBytes);
    this.stderr = new CappedOutput(limitBytes);
  }

  @Override
  public Future<Void> output(Stream stream, byte[] data) {
    synchronized (this) {
      (stream == Stream.STDOUT ? stdout : stderr).append(data);
    }
    return TAKEN;
  }

  @Override
  public void exited(int exitCode, boolean timedOut, boolean cancelled, long durationMs) {
    ExecResult r;
    synchronized (this) {
      r = new ExecResult(exitCode, stdout.text(), stderr.text(), stdout.truncated(), stderr.truncated(), timedOut,
          durationMs, cancelled, 0);
    }
    result.tryComplete(r);
  }

  /** The program's result, once it ended. */
  public Future<ExecResult> result() {
    return result.future();
  }
}
