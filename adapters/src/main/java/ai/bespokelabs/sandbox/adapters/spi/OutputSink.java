package ai.bespokelabs.sandbox.adapters.spi;

import io.vertx.core.Future;

/**
 * Receives what a started program produces; may be called from any thread, in order per stream. Flow
 * control: the future {@link #output} returns completes when the sink can take more, and until then the
 * backend reads no more of that stream (the program then blocks on a full pipe or the provider's buffer),
 * which is how a slow client slows the program down. A backend reading on its own thread may wait for it.
 */
public interface OutputSink {
  /** The two output streams. */
  enum Stream {
    STDOUT, STDERR;

    public String wire() {
      return this == STDOUT ? "stdout" : "stderr";
    }
  }

  /** A chunk of output; chunks end on UTF-8 character boundaries where possible. */
  Future<Void> output(Stream stream, byte[] data);

  /**
   * The program ended; called once, after the last {@link #output} of both streams.
   *
   * @param cancelled ended by a signal sent through {@link Execution#signal}
   */
  void exited(int exitCode, boolean timedOut, boolean cancelled, long durationMs);
}
