package ai.bespokelabs.sandbox.gateway.bench;

import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonObject;
import java.io.BufferedInputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Base64;
import java.util.Locale;

/**
 * Stream clients on a plain socket that parse only what they must (HTTP head, chunked encoding, SSE lines,
 * WebSocket frames, the escapes of a JSON string) and hand the output bytes on, the way a pipe's reader
 * does: the throughput and latency figures are then the gateway's, not a general-purpose client's.
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
      byte[] block = new byte[BUFFER];
      byte[] line = new byte[BUFFER];
      byte[] decoded = new byte[BUFFER];
      int lineLength = 0;
      String event = "message";
      for (int n; (n = chunks.read(block)) > 0; ) {
        long at = StreamBenchmark.epochNanos();
        int from = 0;
        for (int i = 0; i < n; i++) {
          if (block[i] != '\n') {
            continue;
          }
          int part = i - from;
          if (lineLength + part > line.length) {
            line = Arrays.copyOf(line, Math.max(2 * line.length, lineLength + part));
          }
          System.arraycopy(block, from, line, lineLength, part);
          lineLength += part;
          from = i + 1;
          if (lineLength == 0) {
            event = "message";
          } else if (startsWith(line, lineLength, "event: ")) {
            event = new String(line, 7, lineLength - 7, StandardCharsets.US_ASCII);
          } else if (startsWith(line, lineLength, "data: ")) {
            switch (event) {
              case "stdout" -> {
                if (decoded.length < lineLength) {
                  decoded = new byte[lineLength];
                }
                int len = JsonString.decodeData(line, 6, lineLength, decoded);
                sink.accept(decoded, 0, len, at);
              }
              case "exit" -> {
                return new JsonObject(Buffer.buffer(Arrays.copyOfRange(line, 6, lineLength)));
              }
              case "error" -> throw new IOException("SSE error event: "
                  + new String(line, 6, lineLength - 6, StandardCharsets.UTF_8));
              default -> {
                // started, stderr, notice: nothing to count
              }
            }
          }
          lineLength = 0;
        }
        int rest = n - from;
        if (lineLength + rest > line.length) {
          line = Arrays.copyOf(line, Math.max(2 * line.length, lineLength + rest));
        }
        System.arraycopy(block, from, line, lineLength, rest);
        lineLength += rest;
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
      byte[] decoded = new byte[BUFFER];
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
            if (decoded.length < textLength) {
              decoded = new byte[textLength];
            }
            sink.accept(decoded, 0, JsonString.decodeData(text, 0, textLength, decoded), at);
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
    if (length < prefix.length()) {
      return false;
    }
    for (int i = 0; i < prefix.length(); i++) {
      if (line[i] != prefix.charAt(i)) {
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

    /** Up to {@code buf.length} body bytes; 0 at the end. */
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
      int n = in.read(buf, 0, (int) Math.min(buf.length, left));
      if (n < 0) {
        throw new EOFException("the response ended inside a chunk");
      }
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

  /** The bytes of an output event's {@code "data"} (a JSON string of UTF-8 text) or {@code "data_b64"}. */
  static final class JsonString {
    private static final byte[] DATA = "\"data\":\"".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] DATA_B64 = "\"data_b64\":\"".getBytes(StandardCharsets.US_ASCII);

    private JsonString() {}

    /** Decodes the output bytes of the JSON object in {@code json[from, to)} into {@code out}; returns their count. */
    static int decodeData(byte[] json, int from, int to, byte[] out) throws IOException {
      int at = indexOf(json, from, to, DATA);
      if (at < 0) {
        int b64 = indexOf(json, from, to, DATA_B64);
        if (b64 < 0) {
          throw new IOException("an output event without data");
        }
        int start = b64 + DATA_B64.length;
        int end = start;
        while (json[end] != '"') {
          end++;
        }
        byte[] bytes = Base64.getDecoder().decode(Arrays.copyOfRange(json, start, end));
        System.arraycopy(bytes, 0, out, 0, bytes.length);
        return bytes.length;
      }
      int n = 0;
      for (int i = at + DATA.length; i < to; i++) {
        byte c = json[i];
        if (c == '"') {
          return n;
        }
        if (c != '\\') {
          out[n++] = c;
          continue;
        }
        byte e = json[++i];
        switch (e) {
          case 'n' -> out[n++] = '\n';
          case 'r' -> out[n++] = '\r';
          case 't' -> out[n++] = '\t';
          case 'b' -> out[n++] = '\b';
          case 'f' -> out[n++] = '\f';
          case 'u' -> {
            int cp = (hex(json[i + 1]) << 12) | (hex(json[i + 2]) << 8) | (hex(json[i + 3]) << 4) | hex(json[i + 4]);
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

    private static int indexOf(byte[] hay, int from, int to, byte[] needle) {
      outer:
      for (int i = from; i + needle.length <= to; i++) {
        for (int k = 0; k < needle.length; k++) {
          if (hay[i + k] != needle[k]) {
            continue outer;
          }
        }
        return i;
      }
      return -1;
    }
  }
}
