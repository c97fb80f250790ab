package ai.bespokelabs.sandbox.adapters.host;

import ai.bespokelabs.sandbox.adapters.spi.OutputSink.Stream;

/**
 * Receives what a program started by a {@link BlockingProvider} produces, on the provider's own threads:
 * {@link #output} may block, and while it does the provider reads no more of that stream (the program then
 * blocks on a full pipe), which is how a slow client slows the program down.
 */
public interface ExecSink {
  /** A chunk of output, in order per stream; chunks end on UTF-8 character boundaries where possible. */
  void output(Stream stream, byte[] data) throws InterruptedException;

  /**
   * The program ended; called once, after the last {@link #output} of both streams returned.
   *
   * @param cancelled ended by a signal sent through {@link ExecHandle#signal}
   */
  void exited(int exitCode, boolean timedOut, boolean cancelled, long durationMs);
}
