package ai.bespokelabs.sandbox.adapters.host;

import ai.bespokelabs.sandbox.adapters.exec.CappedOutput;
import ai.bespokelabs.sandbox.adapters.spi.OutputSink.Stream;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecResult;
import java.util.concurrent.CountDownLatch;

/** Collects an execution's capped output and waits for its end. */
public final class CapturingSink implements ExecSink {
  private final CappedOutput stdout;
  private final CappedOutput stderr;
  private final CountDownLatch done = new CountDownLatch(1);
  private volatile ExecResult result;

  public CapturingSink(int limitBytes) {
    this.stdout = new CappedOutput(limitBytes);
    this.stderr = new CappedOutput(limitBytes);
  }

  @Override
  public void output(Stream stream, byte[] data) {
    (stream == Stream.STDOUT ? stdout : stderr).append(data);
  }

  @Override
  public void exited(int exitCode, boolean timedOut, boolean cancelled, long durationMs) {
    result = new ExecResult(exitCode, stdout.text(), stderr.text(), stdout.truncated(), stderr.truncated(), timedOut,
        durationMs, cancelled, 0);
    done.countDown();
  }

  /** Blocks until the program ended. */
  public ExecResult await() {
    try {
      done.await();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while waiting for an execution", e);
    }
    return result;
  }
}
