package ai.bespokelabs.sandbox.benchmarks;

import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonObject;
import java.io.BufferedInputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Base64;
import java.util.Locale;

/**
 * Stream clients on a plain socket that parse only what they must (HTTP head, chunked encoding, SSE lines,
 * WebSocket frames, the escapes of a JSON string) and hand the output bytes on, the way a pipe's reader
 * does: the throughput and latency figures are then the gateway's, not a general-purpose client's. They stay
 * on a raw socket on purpose: the tests' clients (testkit's SseClient and WsClient, on Vert.x) decode every
 * event into JSON and would put their own cost into the MiB/s and latency compared with a pipe.
 */
final class SocketClients {
  private static final int BUFFER = 1 << 18;

  /** Receives {@code len} output bytes of stdout at {@code off} in {@code buf}, read at {@code at} (epoch ns). */
  @FunctionalInterface
  interface Sink {
    void accept(byte[] buf, int off, int len, long at);
  }

  private SocketClients() {}

  /**
   * {@code POST path} with {@code Accept: text/event-stream}: stdout events to {@code sink} until the exit
   * event, which is returned.
   */
  static JsonObject sse(int port, String key, String path, String body, Sink sink) throws IOException {
    try (Socket socket = open(port)) {
      byte[] json = body.getBytes(StandardCharsets.UTF_8);
      write(socket, "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + key
          + "\r\nAccept: text/event-stream\r\nContent-Type: application/json\r\nContent-Length: " + json.length
          + "\r\n\r\n", json);
      DataInputStream in = new DataInputStream(new BufferedInputStream(socket.getInputStream(), BUFFER));
      String head = head(in);
      if (!head.startsWith("HTTP/1.1 200")) {
        throw new IOException("SSE execute answered " + head.lines().findFirst().orElse(""));
      }
      if (!head.toLowerCase(Locale.ROOT).contains("transfer-encoding: chunked")) {
        throw new IOException("the SSE response is not chunked");
      }
      Chunked chunks = new Chunked(in);
      byte[] block = new byte[4 * BUFFER];
      byte[] line = new byte[BUFFER];
      JsonString data = new JsonString();
      int lineLength = 0;
      String event = "message";
      for (int n; (n = chunks.read(block)) > 0; ) {
        long at = StreamBenchmark.epochNanos();
        int from = 0;
        while (from < n) {
          int end = Bytes.indexOf(block, from, n, (byte) '\n');
          int part = (end < 0 ? n : end) - from;
          if (end < 0 || lineLength > 0) {
            if (lineLength + part > line.length) {
              line = Arrays.copyOf(line, Math.max(2 * line.length, lineLength + part));
            }
            System.arraycopy(block, from, line, lineLength, part);
            lineLength += part;
            if (end < 0) {
              break;
            }
          }
          // the line is in the block where it arrived whole, else in line
          byte[] text = lineLength > 0 ? line : block;
          int start = lineLength > 0 ? 0 : from;
          int stop = lineLength > 0 ? lineLength : end;
          from = end + 1;
          lineLength = 0;
          if (stop == start) {
            event = "message";
          } else if (startsWith(text, start, stop, "event: ")) {
            event = new String(text, start + 7, stop - start - 7, StandardCharsets.US_ASCII);
          } else if (startsWith(text, start, stop, "data: ")) {
            switch (event) {
              case "stdout" -> {
                data.decode(text, start + 6, stop);
                sink.accept(data.bytes, data.offset, data.length, at);
              }
              case "exit" -> {
                return new JsonObject(Buffer.buffer(Arrays.copyOfRange(text, start + 6, stop)));
              }
              case "error" -> throw new IOException("SSE error event: "
                  + new String(text, start + 6, stop - start - 6, StandardCharsets.UTF_8));
              default -> {
                // started, stderr, notice: nothing to count
              }
            }
          }
        }
      }
      throw new IOException("the SSE stream ended without an exit event");
    }
  }

  /**
   * The WebSocket at {@code path} ({@code .../executions/ws?mode=...}): sends {@code start}, then stdout (binary
   * frames {@code [stream][seq][payload]} or JSON text frames) to {@code sink} until the gateway closes with
   * 1000 after the exit frame, which is returned.
   */
  static JsonObject webSocket(int port, String key, String path, String start, Sink sink) throws IOException {
    try (Socket socket = open(port)) {
      write(socket, "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + key
          + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13"
          + "\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n", new byte[0]);
      DataInputStream in = new DataInputStream(new BufferedInputStream(socket.getInputStream(), BUFFER));
      String head = head(in);
      if (!head.startsWith("HTTP/1.1 101")) {
        throw new IOException("the WebSocket handshake answered " + head.lines().findFirst().orElse(""));
      }
      sendText(socket.getOutputStream(), start);
      byte[] buf = new byte[BUFFER];
      byte[] text = new byte[4096];
      JsonString data = new JsonString();
      int textLength = 0;
      boolean binaryMessage = false;
      long position = 0;
      int stream = 0;
      JsonObject exit = null;
      while (true) {
        int b0 = in.readUnsignedByte();
        int b1 = in.readUnsignedByte();
        int opcode = b0 & 0x0f;
        long length = b1 & 0x7f;
        if (length == 126) {
          length = in.readUnsignedShort();
        } else if (length == 127) {
          length = in.readLong();
        }
        if ((b1 & 0x80) != 0) {
          throw new IOException("the server masked a frame");
        }
        if (opcode == 8) {
          byte[] payload = in.readNBytes((int) length);
          int status = payload.length >= 2 ? ((payload[0] & 0xff) << 8) | (payload[1] & 0xff) : 1005;
          if (status != 1000 || exit == null) {
            throw new IOException("the WebSocket closed with " + status + (exit == null ? " before an exit frame" : ""));
          }
          return exit;
        }
        if (opcode == 2 || (opcode == 0 && binaryMessage)) {
          binaryMessage = true;
          if (opcode == 2) {
            position = 0;
          }
          while (length > 0) {
            int n = in.read(buf, 0, (int) Math.min(buf.length, length));
            if (n < 0) {
              throw new EOFException("the WebSocket ended inside a frame");
            }
            long at = StreamBenchmark.epochNanos();
            int skip = (int) Math.max(0, Math.min(n, 9 - position));
            if (position == 0) {
              stream = buf[0];
            }
            if (stream == 1 && n > skip) {
              sink.accept(buf, skip, n - skip, at);
            }
            position += n;
            length -= n;
          }
          if ((b0 & 0x80) != 0) {
            binaryMessage = false;
          }
          continue;
        }
        if (opcode == 1 || opcode == 0) {
          if (opcode == 1) {
            textLength = 0;
          }
          if (textLength + length > text.length) {
            text = Arrays.copyOf(text, (int) Math.max(2L * text.length, textLength + length));
          }
          in.readFully(text, textLength, (int) length);
          textLength += (int) length;
          if ((b0 & 0x80) == 0) {
            continue;
          }
          long at = StreamBenchmark.epochNanos();
          if (startsWith(text, textLength, "{\"type\":\"stdout\"")) {
            data.decode(text, 0, textLength);
            sink.accept(data.bytes, data.offset, data.length, at);
            continue;
          }
          JsonObject frame = new JsonObject(Buffer.buffer(Arrays.copyOf(text, textLength)));
          switch (frame.getString("type", "")) {
            case "exit" -> exit = frame;
            case "error" -> throw new IOException("WebSocket error frame: " + frame.getString("message"));
            default -> {
              // started, stderr, notice
            }
          }
          continue;
        }
        in.skipNBytes(length); // ping, pong
      }
    }
  }

  private static Socket open(int port) throws IOException {
    Socket socket = new Socket("127.0.0.1", port);
    socket.setTcpNoDelay(true);
    socket.setReceiveBufferSize(BUFFER);
    socket.setSoTimeout(120_000);
    return socket;
  }

  private static void write(Socket socket, String head, byte[] body) throws IOException {
    OutputStream out = socket.getOutputStream();
    out.write(head.getBytes(StandardCharsets.US_ASCII));
    out.write(body);
    out.flush();
  }

  /** A masked, final text frame (clients must mask). */
  private static void sendText(OutputStream out, String text) throws IOException {
    byte[] payload = text.getBytes(StandardCharsets.UTF_8);
    byte[] mask = {0x12, 0x34, 0x56, 0x78};
    Buffer frame = Buffer.buffer().appendByte((byte) 0x81);
    if (payload.length < 126) {
      frame.appendByte((byte) (0x80 | payload.length));
    } else {
      frame.appendByte((byte) (0x80 | 126)).appendShort((short) payload.length);
    }
    frame.appendBytes(mask);
    for (int i = 0; i < payload.length; i++) {
      payload[i] ^= mask[i & 3];
    }
    out.write(frame.appendBytes(payload).getBytes());
    out.flush();
  }

  /** The response head up to its empty line. */
  private static String head(DataInputStream in) throws IOException {
    StringBuilder sb = new StringBuilder();
    while (!sb.toString().endsWith("\r\n\r\n")) {
      int c = in.read();
      if (c < 0) {
        throw new EOFException("the connection closed before the response head ended");
      }
      sb.append((char) c);
    }
    return sb.toString();
  }

  private static boolean startsWith(byte[] line, int length, String prefix) {
    return startsWith(line, 0, length, prefix);
  }

  private static boolean startsWith(byte[] line, int from, int to, String prefix) {
    if (to - from < prefix.length()) {
      return false;
    }
    for (int i = 0; i < prefix.length(); i++) {
      if (line[from + i] != prefix.charAt(i)) {
        return false;
      }
    }
    return true;
  }

  /** The body of a chunked response. */
  private static final class Chunked {
    private final DataInputStream in;
    private long left;
    private boolean first = true;
    private boolean done;

    Chunked(DataInputStream in) {
      this.in = in;
    }

    /** The rest of the current chunk, up to {@code buf.length} bytes; 0 at the end. */
    int read(byte[] buf) throws IOException {
      if (done) {
        return 0;
      }
      if (left == 0) {
        if (!first) {
          line(); // the CRLF that ends the previous chunk
        }
        first = false;
        left = Long.parseLong(line().split(";", 2)[0].trim(), 16);
        if (left == 0) {
          done = true;
          return 0;
        }
      }
      // the whole chunk where it fits (the server writes each event as one), so lines rarely straddle reads
      int n = (int) Math.min(buf.length, left);
      in.readFully(buf, 0, n);
      left -= n;
      return n;
    }

    private String line() throws IOException {
      StringBuilder sb = new StringBuilder();
      for (int c; (c = in.read()) != '\n'; ) {
        if (c < 0) {
          throw new EOFException("the response ended inside a chunk header");
        }
        if (c != '\r') {
          sb.append((char) c);
        }
      }
      return sb.toString();
    }
  }

  /** Finding bytes eight at a time, as a native client's {@code memchr} does. */
  static final class Bytes {
    private static final java.lang.invoke.VarHandle LONGS = java.lang.invoke.MethodHandles.byteArrayViewVarHandle(
        long[].class, java.nio.ByteOrder.LITTLE_ENDIAN);
    private static final long ONES = 0x0101010101010101L;
    private static final long HIGHS = 0x8080808080808080L;

    private Bytes() {}

    /** Whether a byte of {@code w} is zero (exact: no false positives for the lowest such byte). */
    private static long zeros(long w) {
      return (w - ONES) & ~w & HIGHS;
    }

    /** The index of the first {@code b} in {@code a[from, to)}, or -1. */
    static int indexOf(byte[] a, int from, int to, byte b) {
      long pattern = ONES * (b & 0xff);
      int i = from;
      for (; i + 32 <= to; i += 32) {
        long w0 = (long) LONGS.get(a, i) ^ pattern;
        long w1 = (long) LONGS.get(a, i + 8) ^ pattern;
        long w2 = (long) LONGS.get(a, i + 16) ^ pattern;
        long w3 = (long) LONGS.get(a, i + 24) ^ pattern;
        if ((zeros(w0) | zeros(w1) | zeros(w2) | zeros(w3)) != 0) {
          break; // found below in eight-byte steps
        }
      }
      for (; i + 8 <= to; i += 8) {
        long hit = zeros((long) LONGS.get(a, i) ^ pattern);
        if (hit != 0) {
          return i + (Long.numberOfTrailingZeros(hit) >>> 3);
        }
      }
      for (; i < to; i++) {
        if (a[i] == b) {
          return i;
        }
      }
      return -1;
    }

    /** The index of the first quote or backslash in {@code a[from, to)}, or -1. */
    static int indexOfQuoteOrBackslash(byte[] a, int from, int to) {
      int i = from;
      for (; i + 8 <= to; i += 8) {
        long w = (long) LONGS.get(a, i);
        long hit = zeros(w ^ (ONES * '"')) | zeros(w ^ (ONES * '\\'));
        if (hit != 0) {
          return i + (Long.numberOfTrailingZeros(hit) >>> 3);
        }
      }
      for (; i < to; i++) {
        if (a[i] == '"' || a[i] == '\\') {
          return i;
        }
      }
      return -1;
    }
  }

  /**
   * The bytes of an output event's {@code "data"} (a JSON string of UTF-8 text) or {@code "data_b64"}: after
   * {@link #decode}, {@code bytes[offset, offset + length)}.
   */
  static final class JsonString {
    private static final byte[] DATA = "\"data".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] TEXT = "\":\"".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] B64 = "_b64\":\"".getBytes(StandardCharsets.US_ASCII);
    byte[] bytes = new byte[BUFFER];
    int offset;
    int length;
    private byte[] text = new byte[BUFFER];

    /** Decodes the output bytes of the JSON object in {@code json[from, to)}. */
    void decode(byte[] json, int from, int to) throws IOException {
      int at = indexOf(json, from, to, DATA);
      if (at < 0) {
        throw new IOException("an output event without data");
      }
      at += DATA.length;
      if (regionMatches(json, at, to, B64)) {
        int start = at + B64.length;
        // the gateway writes the data last: the string ends where the object does (checked), else search
        int end = to - 2 > start && json[to - 2] == '"' && json[to - 1] == '}' ? to - 2
            : Bytes.indexOf(json, start, to, (byte) '"');
        if (end < 0) {
          throw new IOException("an unterminated data_b64 string");
        }
        ByteBuffer decoded = Base64.getDecoder().decode(ByteBuffer.wrap(json, start, end - start));
        bytes = decoded.array();
        offset = decoded.arrayOffset() + decoded.position();
        length = decoded.remaining();
        return;
      }
      if (!regionMatches(json, at, to, TEXT)) {
        throw new IOException("an output event without data");
      }
      if (text.length < to - from) {
        text = new byte[to - from];
      }
      bytes = text;
      offset = 0;
      length = unescape(json, at + TEXT.length, to, text);
    }

    private static int unescape(byte[] json, int from, int to, byte[] out) throws IOException {
      int n = 0;
      int i = from;
      while (i < to) {
        int special = Bytes.indexOfQuoteOrBackslash(json, i, to);
        if (special < 0) {
          break;
        }
        System.arraycopy(json, i, out, n, special - i);
        n += special - i;
        i = special;
        if (json[i] == '"') {
          return n;
        }
        byte e = json[++i];
        i++;
        switch (e) {
          case 'n' -> out[n++] = '\n';
          case 'r' -> out[n++] = '\r';
          case 't' -> out[n++] = '\t';
          case 'b' -> out[n++] = '\b';
          case 'f' -> out[n++] = '\f';
          case 'u' -> {
            int cp = (hex(json[i]) << 12) | (hex(json[i + 1]) << 8) | (hex(json[i + 2]) << 4) | hex(json[i + 3]);
            i += 4;
            if (cp >= 0x80) {
              throw new IOException("an escape beyond ASCII in output data");
            }
            out[n++] = (byte) cp;
          }
          default -> out[n++] = e; // quote, backslash, slash
        }
      }
      throw new IOException("an unterminated data string");
    }

    private static int hex(byte c) throws IOException {
      int v = Character.digit(c, 16);
      if (v < 0) {
        throw new IOException("a malformed escape in output data");
      }
      return v;
    }

    private static boolean regionMatches(byte[] hay, int at, int to, byte[] needle) {
      if (at + needle.length > to) {
        return false;
      }
      for (int k = 0; k < needle.length; k++) {
        if (hay[at + k] != needle[k]) {
          return false;
        }
      }
      return true;
    }

    private static int indexOf(byte[] hay, int from, int to, byte[] needle) {
      for (int i = from; i + needle.length <= to; i++) {
        if (regionMatches(hay, i, to, needle)) {
          return i;
        }
      }
      return -1;
    }
  }
}
