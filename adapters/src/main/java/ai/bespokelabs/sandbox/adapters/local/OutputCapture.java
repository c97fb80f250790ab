package ai.bespokelabs.sandbox.adapters.local;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;

/**
 * Drains one output pipe of a child to its end, keeping the first {@code limit} bytes and reading and
 * discarding the rest, so the child never blocks on a full pipe. Every chunk read passes through
 * {@link #run()}; that is where a streaming listener would hook in.
 */
final class OutputCapture implements Runnable {
  private static final int CHUNK = 8192;

  private final InputStream in;
  private final int limit;
  private final ByteArrayOutputStream kept = new ByteArrayOutputStream();
  private boolean truncated;
  private boolean finished;

  OutputCapture(InputStream in, int limit) {
    this.in = in;
    this.limit = Math.max(0, limit);
  }

  @Override
  public void run() {
    byte[] buf = new byte[CHUNK];
    try (in) {
      int n;
      while ((n = in.read(buf)) >= 0) {
        keep(buf, n);
      }
    } catch (IOException ignored) {
      // the pipe was closed under us: what was read so far is the output
    }
  }

  private synchronized void keep(byte[] buf, int n) {
    if (finished) {
      return;
    }
    int room = limit - kept.size();
    kept.write(buf, 0, Math.min(room, n));
    truncated |= n > room;
  }

  /**
   * Freezes the capture and returns the bytes kept, decoded as UTF-8 (malformed or cut-off sequences
   * become U+FFFD). Anything still read afterwards, from a background child, is discarded unseen.
   */
  synchronized String finish() {
    finished = true;
    return kept.toString(StandardCharsets.UTF_8);
  }

  /** True when a byte beyond the limit was seen before {@link #finish()}. */
  synchronized boolean truncated() {
    return truncated;
  }
}
