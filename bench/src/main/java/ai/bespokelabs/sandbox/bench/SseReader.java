package ai.bespokelabs.sandbox.bench;

import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * Reads Server-Sent Events from a response body as bytes (the stream is never decoded to characters; only
 * each event's JSON is parsed): one event at a time, comments and ids skipped. The gateway sends one
 * {@code data:} line per event.
 */
final class SseReader {
  /** An event: its name and its JSON data. */
  record Event(String name, JsonObject data) {}

  private final InputStream in;
  private byte[] buf = new byte[1 << 16];
  /** The first byte not consumed yet. */
  private int start;
  /** The end of the bytes read so far. */
  private int end;

  SseReader(InputStream in) {
    this.in = in;
  }

  /** The next event, or null at the end of the stream. */
  Event next() throws IOException {
    String name = "message";
    JsonObject data = null;
    int eol;
    while ((eol = lineEnd()) >= 0) {
      int from = start;
      start = eol + 1;
      if (eol == from && data != null) {
        return new Event(name, data);
      }
      if (startsWith(from, eol, "event: ")) {
        name = new String(buf, from + 7, eol - from - 7, StandardCharsets.UTF_8);
      } else if (startsWith(from, eol, "data: ")) {
        data = new JsonObject(Buffer.buffer(Arrays.copyOfRange(buf, from + 6, eol)));
      }
    }
    return null;
  }

  private boolean startsWith(int from, int to, String prefix) {
    if (to - from < prefix.length()) {
      return false;
    }
    for (int i = 0; i < prefix.length(); i++) {
      if (buf[from + i] != prefix.charAt(i)) {
        return false;
      }
    }
    return true;
  }

  /** The index of the next {@code '\n'} at or after {@code start}, reading as needed; -1 at the end. */
  private int lineEnd() throws IOException {
    int scanned = start;
    while (true) {
      for (int i = scanned; i < end; i++) {
        if (buf[i] == '\n') {
          return i;
        }
      }
      scanned = end - start;
      System.arraycopy(buf, start, buf, 0, end - start);
      end -= start;
      start = 0;
      if (end == buf.length) {
        buf = Arrays.copyOf(buf, buf.length * 2);
      }
      int n = in.read(buf, end, buf.length - end);
      if (n < 0) {
        return -1;
      }
      end += n;
    }
  }
}
