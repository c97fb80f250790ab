package ai.bespokelabs.sandbox.core.bus;

import ai.bespokelabs.sandbox.core.bus.Messages.StreamEvent;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Base64;

/**
 * The JSON of an output event, {@code {"type":"stdout","seq":n,"data":"…"}}, written straight from the bytes.
 * The bytes travel as {@code "data_b64"} instead when they are not valid UTF-8, or when JSON escaping would
 * more than double them (output made mostly of control characters, such as NUL bytes, which escape to six
 * characters each; base64 costs a third more). One pass validates and measures (eight ASCII bytes at a time),
 * a second writes into an array of the exact size; output with nothing to escape is used as it is.
 *
 * <p>The string's {@link Body} is computed once per event, on the thread that read the output when a text
 * client watches ({@link StreamEvent#body()}), and shared by every client that watches it.
 */
public final class OutputJson {
  private static final byte[] HEX = "0123456789abcdef".getBytes(StandardCharsets.US_ASCII);
  private static final VarHandle LONGS = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
  private static final long ONES = 0x0101010101010101L;
  private static final long HIGHS = 0x8080808080808080L;
  private static final byte[] END = {'"', '}'};

  private OutputJson() {}

  /**
   * The content of the data string: JSON-escaped UTF-8 ({@code text}, the key {@code data}) or base64
   * (the key {@code data_b64}). {@code bytes} may be the output array itself; never modify it.
   */
  public record Body(boolean text, byte[] bytes) {}

  /** The data string of {@code data}. */
  public static Body body(byte[] data) {
    long limit = 2L * data.length;
    long escaped = escapedLength(data, limit);
    if (escaped < 0 || escaped > limit) {
      return new Body(false, Base64.getEncoder().encode(data));
    }
    if (escaped == data.length) {
      return new Body(true, data); // nothing to escape
    }
    byte[] out = new byte[(int) escaped];
    escape(data, out, 0);
    return new Body(true, out);
  }

  /** {@code prefix} + the event's JSON + {@code suffix}, as bytes. */
  public static byte[] encode(byte[] prefix, StreamEvent e, byte[] suffix) {
    byte[][] parts = parts(prefix, e, suffix);
    byte[] out = new byte[parts[0].length + parts[1].length + parts[2].length];
    System.arraycopy(parts[0], 0, out, 0, parts[0].length);
    System.arraycopy(parts[1], 0, out, parts[0].length, parts[1].length);
    System.arraycopy(parts[2], 0, out, parts[0].length + parts[1].length, parts[2].length);
    return out;
  }

  /**
   * The same bytes as {@link #encode} in three arrays: up to the data string, its body, the rest; the body is
   * the event's own (never copied again before the socket).
   */
  public static byte[][] parts(byte[] prefix, StreamEvent e, byte[] suffix) {
    Body body = e.body() != null ? e.body() : body(e.data());
    byte[] head = ("{\"type\":\"" + e.stream() + "\",\"seq\":" + e.seq()
        + (body.text() ? ",\"data\":\"" : ",\"data_b64\":\"")).getBytes(StandardCharsets.US_ASCII);
    byte[] start = new byte[prefix.length + head.length];
    System.arraycopy(prefix, 0, start, 0, prefix.length);
    System.arraycopy(head, 0, start, prefix.length, head.length);
    byte[] end = END;
    if (suffix.length > 0) {
      end = new byte[2 + suffix.length];
      end[0] = '"';
      end[1] = '}';
      System.arraycopy(suffix, 0, end, 2, suffix.length);
    }
    return new byte[][] {start, body.bytes(), end};
  }

  /** Whether none of the eight bytes of {@code w} needs escaping or is outside ASCII. */
  private static boolean plain(long w) {
    return (w & HIGHS) == 0 && (control(w) | quoteOrBackslash(w)) == 0;
  }

  /** For eight ASCII bytes: the high bit of each one below 0x20 (no borrow crosses bytes). */
  private static long control(long w) {
    return ~((w | HIGHS) - ONES * 0x20) & HIGHS;
  }

  /** The high bit of each byte that is a quote or a backslash. */
  private static long quoteOrBackslash(long w) {
    return zeros(w ^ (ONES * '"')) | zeros(w ^ (ONES * '\\'));
  }

  /** The high bit of each byte of {@code x} that is zero, exactly (no carry crosses bytes). */
  private static long zeros(long x) {
    return ~(((x & ~HIGHS) + ~HIGHS) | x) & HIGHS;
  }

  /** The length of the escaped JSON string body of {@code b}, or -1 when {@code b} is not well-formed UTF-8. */
  public static long escapedLength(byte[] b) {
    return escapedLength(b, Long.MAX_VALUE);
  }

  /**
   * As {@link #escapedLength(byte[])}, but stops measuring (and validating) as soon as the length is sure to
   * exceed {@code limit}, returning a value above it.
   */
  public static long escapedLength(byte[] b, long limit) {
    int i = 0;
    int len = b.length;
    long out = 0;
    while (i < len) {
      if (i + 8 <= len) {
        long w = (long) LONGS.get(b, i);
        if (w == 0) {
          // eight NUL bytes (common in binary output), six characters each
          i += 8;
          out += 48;
          if (out + (len - i) > limit) {
            return out + (len - i);
          }
          continue;
        }
        if ((w & HIGHS) == 0) {
          // eight ASCII bytes: count what each escape adds, exactly, without a branch per byte
          long control = control(w);
          long quoteOrBackslash = quoteOrBackslash(w);
          i += 8;
          if ((control | quoteOrBackslash) == 0) {
            out += 8;
            continue;
          }
          long shortEscape = zeros(w ^ (ONES * '\n')) | zeros(w ^ (ONES * '\r')) | zeros(w ^ (ONES * '\t'));
          out += 8 + Long.bitCount(quoteOrBackslash) + 5L * Long.bitCount(control) - 4L * Long.bitCount(shortEscape);
          if (out + (len - i) > limit) {
            return out + (len - i); // every byte left adds at least one
          }
          continue;
        }
      }
      int c = b[i] & 0xff;
      if (c < 0x80) {
        out += c >= 0x20 ? (c == '"' || c == '\\' ? 2 : 1) : (c == '\n' || c == '\r' || c == '\t' ? 2 : 6);
        i++;
        if (out + (len - i) > limit) {
          return out + (len - i); // every byte left adds at least one
        }
        continue;
      }
      int seq = sequenceLength(b, i);
      if (seq < 0) {
        return -1;
      }
      i += seq;
      out += seq;
    }
    return out;
  }

  /** Well-formed UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF, no cut sequence. */
  public static boolean validUtf8(byte[] b) {
    return escapedLength(b) >= 0;
  }

  /** The length of the multi-byte UTF-8 sequence at {@code i}, or -1 when it is not well-formed. */
  private static int sequenceLength(byte[] b, int i) {
    int c = b[i] & 0xff;
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
      return -1;
    }
    int cp = c & (0x3f >> need);
    for (int k = 1; k <= need; k++) {
      if (i + k >= b.length) {
        return -1;
      }
      int cc = b[i + k] & 0xff;
      if ((cc & 0xc0) != 0x80) {
        return -1;
      }
      cp = (cp << 6) | (cc & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
      return -1;
    }
    return need + 1;
  }

  /** JSON string escaping of (valid) UTF-8 bytes: quote, backslash and control characters; the rest as is. */
  private static int escape(byte[] in, byte[] out, int n) {
    int i = 0;
    int len = in.length;
    while (i < len) {
      int run = i;
      while (run + 8 <= len && plain((long) LONGS.get(in, run))) {
        run += 8;
      }
      while (run < len) {
        int c = in[run] & 0xff;
        if (c < 0x20 || c == '"' || c == '\\') {
          break;
        }
        run++;
        if (run + 8 <= len && (run & 7) == 0) {
          break; // back to eight at a time
        }
      }
      if (run > i) {
        System.arraycopy(in, i, out, n, run - i);
        n += run - i;
        i = run;
        continue;
      }
      int c = in[i++] & 0xff;
      out[n++] = '\\';
      switch (c) {
        case '"', '\\' -> out[n++] = (byte) c;
        case '\n' -> out[n++] = 'n';
        case '\r' -> out[n++] = 'r';
        case '\t' -> out[n++] = 't';
        default -> {
          out[n++] = 'u';
          out[n++] = '0';
          out[n++] = '0';
          out[n++] = HEX[c >> 4];
          out[n++] = HEX[c & 0xf];
        }
      }
    }
    return n;
  }
}
