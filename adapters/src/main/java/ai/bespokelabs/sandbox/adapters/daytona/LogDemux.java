package ai.bespokelabs.sandbox.adapters.daytona;

import ai.bespokelabs.sandbox.adapters.exec.Utf8;
import ai.bespokelabs.sandbox.adapters.spi.OutputSink.Stream;
import java.util.Arrays;

/**
 * Splits a Daytona session command's log back into stdout and stderr. The daemon prefixes every chunk it
 * logs with a 3-byte marker, {@code 01 01 01} for stdout and {@code 02 02 02} for stderr; WebSocket frames
 * cut the log anywhere, so a marker may straddle two frames and is held back until the next one decides.
 * Output is handed on in order, cut on UTF-8 character boundaries per stream (an incomplete character
 * waits for that stream's next bytes). Not thread-safe: one reader feeds it.
 */
final class LogDemux {
  /** Where demultiplexed output goes. */
  interface Out {
    void accept(Stream stream, byte[] data);
  }

  private static final byte[] NONE = new byte[0];

  private final Out out;
  private Stream current = Stream.STDOUT;
  private byte[] pending = NONE;
  private final byte[][] carry = {NONE, NONE};

  LogDemux(Out out) {
    this.out = out;
  }

  /** One piece of the log, as it arrived. */
  void feed(byte[] frame) {
    byte[] b = pending.length == 0 ? frame : concat(pending, frame, 0, frame.length);
    pending = NONE;
    int start = 0;
    int i = 0;
    while (i < b.length) {
      byte c = b[i];
      if (c == 1 || c == 2) {
        int run = 1;
        while (run < 3 && i + run < b.length && b[i + run] == c) {
          run++;
        }
        if (run == 3) {
          emit(b, start, i);
          current = c == 1 ? Stream.STDOUT : Stream.STDERR;
          i += 3;
          start = i;
          continue;
        }
        if (i + run == b.length) {
          // the frame ends inside what may be a marker: decide when the next frame arrives
          emit(b, start, i);
          pending = Arrays.copyOfRange(b, i, b.length);
          return;
        }
      }
      i++;
    }
    emit(b, start, b.length);
  }

  /** The log ended: whatever was held back is output after all. */
  void finish() {
    byte[] held = pending;
    pending = NONE;
    emit(held, 0, held.length);
    for (Stream s : Stream.values()) {
      byte[] rest = carry[s.ordinal()];
      carry[s.ordinal()] = NONE;
      if (rest.length > 0) {
        out.accept(s, rest);
      }
    }
  }

  private void emit(byte[] b, int from, int to) {
    if (to <= from) {
      return;
    }
    int k = current.ordinal();
    byte[] joined = concat(carry[k], b, from, to);
    int cut = Utf8.completePrefix(joined, joined.length);
    carry[k] = cut == joined.length ? NONE : Arrays.copyOfRange(joined, cut, joined.length);
    if (cut > 0) {
      out.accept(current, cut == joined.length ? joined : Arrays.copyOf(joined, cut));
    }
  }

  private static byte[] concat(byte[] head, byte[] b, int from, int to) {
    byte[] r = new byte[head.length + to - from];
    System.arraycopy(head, 0, r, 0, head.length);
    System.arraycopy(b, from, r, head.length, to - from);
    return r;
  }
}
