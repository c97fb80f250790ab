package ai.bespokelabs.sandbox.adapters.exec;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;

/** The first {@code limit} bytes of one output stream, and whether more was produced. Thread-safe. */
public final class CappedOutput {
  private final int limit;
  private final ByteArrayOutputStream kept = new ByteArrayOutputStream();
  private boolean truncated;

  public CappedOutput(int limit) {
    this.limit = Math.max(0, limit);
  }

  /** Keeps what fits; returns true when this call is the first to exceed the cap. */
  public synchronized boolean append(byte[] data) {
    int room = limit - kept.size();
    kept.write(data, 0, Math.max(0, Math.min(room, data.length)));
    boolean first = !truncated && data.length > room;
    truncated |= data.length > room;
    return first;
  }

  /** The kept bytes as UTF-8 (malformed or cut-off sequences become U+FFFD). */
  public synchronized String text() {
    return kept.toString(StandardCharsets.UTF_8);
  }

  public synchronized boolean truncated() {
    return truncated;
  }

  public int limit() {
    return limit;
  }
}
