package ai.bespokelabs.sandbox.adapters.e2b;

import io.vertx.core.buffer.Buffer;

/**
 * The Connect protocol's envelope framing for streaming calls: one flag byte, a four-byte big-endian
 * length, then the message. Flag {@link #COMPRESSED} marks a compressed message, {@link #END_STREAM} the
 * last envelope of a response, whose message is the end-of-stream JSON ({@code {}} or {@code {"error":..}}).
 */
public final class ConnectEnvelope {
  public static final int COMPRESSED = 0x01;
  public static final int END_STREAM = 0x02;
  /** Larger messages are refused rather than buffered. */
  public static final int MAX_MESSAGE_BYTES = 32 << 20;

  private ConnectEnvelope() {}

  /** One decoded envelope. */
  public record Frame(int flags, Buffer message) {
    public boolean endStream() {
      return (flags & END_STREAM) != 0;
    }

    public boolean compressed() {
      return (flags & COMPRESSED) != 0;
    }
  }

  public static Buffer encode(int flags, Buffer message) {
    return Buffer.buffer(5 + message.length()).appendByte((byte) flags).appendInt(message.length()).appendBuffer(message);
  }

  /** A malformed or oversized envelope. */
  public static final class FramingException extends RuntimeException {
    public FramingException(String message) {
      super(message, null, false, false);
    }
  }

  /**
   * Reassembles envelopes from arbitrarily cut chunks. Not thread-safe: one reader feeds and drains it.
   */
  public static final class Decoder {
    private Buffer pending = Buffer.buffer();
    private int offset;

    public void feed(Buffer chunk) {
      if (offset > 0 && offset == pending.length()) {
        pending = Buffer.buffer();
        offset = 0;
      } else if (offset > (1 << 16)) {
        pending = pending.getBuffer(offset, pending.length());
        offset = 0;
      }
      pending.appendBuffer(chunk);
    }

    /** The next complete envelope, or null until more bytes arrive. */
    public Frame next() {
      if (pending.length() - offset < 5) {
        return null;
      }
      int flags = pending.getUnsignedByte(offset);
      long length = pending.getUnsignedInt(offset + 1);
      if ((flags & ~(COMPRESSED | END_STREAM)) != 0) {
        throw new FramingException("unknown envelope flags " + flags);
      }
      if (length > MAX_MESSAGE_BYTES) {
        throw new FramingException("envelope of " + length + " bytes exceeds the limit");
      }
      if (pending.length() - offset - 5 < length) {
        return null;
      }
      Buffer message = pending.getBuffer(offset + 5, offset + 5 + (int) length);
      offset += 5 + (int) length;
      return new Frame(flags, message);
    }

    /** Bytes received that do not form a whole envelope yet. */
    public int buffered() {
      return pending.length() - offset;
    }
  }
}
