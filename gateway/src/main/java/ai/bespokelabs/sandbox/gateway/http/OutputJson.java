package ai.bespokelabs.sandbox.gateway.http;

import ai.bespokelabs.sandbox.core.bus.Messages.StreamEvent;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Base64;

/**
 * The JSON of an output event, {@code {"type":"stdout","seq":n,"data":"…"}} (or {@code "data_b64"} when the
 * bytes are not valid UTF-8), written straight from the bytes: validating and escaping in one pass with no
 * intermediate strings is what keeps text streams fast.
 */
final class OutputJson {
  private static final byte[] HEX = "0123456789abcdef".getBytes(StandardCharsets.US_ASCII);

  private OutputJson() {}

  /** {@code prefix} + the event's JSON + {@code suffix}, as bytes. */
  static byte[] encode(byte[] prefix, StreamEvent e, byte[] suffix) {
    byte[] data = e.data();
    boolean text = validUtf8(data);
    byte[] head = ("{\"type\":\"" + e.stream() + "\",\"seq\":" + e.seq() + (text ? ",\"data\":\"" : ",\"data_b64\":\""))
        .getBytes(StandardCharsets.US_ASCII);
    byte[] body = text ? null : Base64.getEncoder().encode(data);
    int max = prefix.length + head.length + (text ? data.length * 6 : body.length) + 2 + suffix.length;
    byte[] out = new byte[max];
    int n = 0;
    System.arraycopy(prefix, 0, out, n, prefix.length);
    n += prefix.length;
    System.arraycopy(head, 0, out, n, head.length);
    n += head.length;
    if (text) {
      n = escape(data, out, n);
    } else {
      System.arraycopy(body, 0, out, n, body.length);
      n += body.length;
    }
    out[n++] = '"';
    out[n++] = '}';
    System.arraycopy(suffix, 0, out, n, suffix.length);
    n += suffix.length;
    return n == out.length ? out : Arrays.copyOf(out, n);
  }

  /** JSON string escaping of UTF-8 bytes: quote, backslash and control characters; other bytes as they are. */
  private static int escape(byte[] in, byte[] out, int n) {
    for (byte b : in) {
      int c = b & 0xff;
      if (c >= 0x20 && c != '"' && c != '\\') {
        out[n++] = b;
      } else if (c == '"' || c == '\\') {
        out[n++] = '\\';
        out[n++] = b;
      } else if (c == '\n') {
        out[n++] = '\\';
        out[n++] = 'n';
      } else if (c == '\r') {
        out[n++] = '\\';
        out[n++] = 'r';
      } else if (c == '\t') {
        out[n++] = '\\';
        out[n++] = 't';
      } else {
        out[n++] = '\\';
        out[n++] = 'u';
        out[n++] = '0';
        out[n++] = '0';
        out[n++] = HEX[c >> 4];
        out[n++] = HEX[c & 0xf];
      }
    }
    return n;
  }

  /** Well-formed UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF, no cut sequence. */
  static boolean validUtf8(byte[] b) {
    int i = 0;
    int len = b.length;
    while (i < len) {
      int c = b[i] & 0xff;
      if (c < 0x80) {
        i++;
        continue;
      }
      int need;
      int min;
      if (c >= 0xc2 && c <= 0xdf) {
        need = 1;
        min = 0x80;
      } else if (c >= 0xe0 && c <= 0xef) {
        need = 2;
        min = 0x800;
      } else if (c >= 0xf0 && c <= 0xf4) {
        need = 3;
        min = 0x10000;
      } else {
        return false;
      }
      int cp = c & (0x3f >> need);
      for (int k = 1; k <= need; k++) {
        if (i + k >= len) {
          return false;
        }
        int cc = b[i + k] & 0xff;
        if ((cc & 0xc0) != 0x80) {
          return false;
        }
        cp = (cp << 6) | (cc & 0x3f);
      }
      if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
        return false;
      }
      i += need + 1;
    }
    return true;
  }
}
