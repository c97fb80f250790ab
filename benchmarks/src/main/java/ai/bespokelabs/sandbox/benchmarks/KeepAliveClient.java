package ai.bespokelabs.sandbox.benchmarks;

import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.Locale;

/**
 * A minimal HTTP/1.1 client on one keep-alive connection, so the benchmark measures the gateway rather than
 * a general-purpose client's own overhead. Understands Content-Length responses only (all the gateway's
 * JSON endpoints send one).
 */
final class KeepAliveClient implements AutoCloseable {
  private final Socket socket;
  private final OutputStream out;
  private final BufferedInputStream in;
  private byte[] body = new byte[0];

  KeepAliveClient(int port) {
    try {
      socket = new Socket("127.0.0.1", port);
      socket.setTcpNoDelay(true);
      out = socket.getOutputStream();
      in = new BufferedInputStream(socket.getInputStream(), 64 * 1024);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** A prepared request: method, path, headers and JSON body serialized once. */
  static byte[] request(String method, String path, String bearer, String body) {
    StringBuilder sb = new StringBuilder(method).append(' ').append(path).append(" HTTP/1.1\r\nHost: gateway\r\n");
    if (bearer != null) {
      sb.append("Authorization: Bearer ").append(bearer).append("\r\n");
    }
    byte[] bytes = body == null ? new byte[0] : body.getBytes(StandardCharsets.UTF_8);
    if (body != null) {
      sb.append("Content-Type: application/json\r\nContent-Length: ").append(bytes.length).append("\r\n");
    }
    sb.append("\r\n");
    byte[] head = sb.toString().getBytes(StandardCharsets.US_ASCII);
    byte[] all = new byte[head.length + bytes.length];
    System.arraycopy(head, 0, all, 0, head.length);
    System.arraycopy(bytes, 0, all, head.length, bytes.length);
    return all;
  }

  /** Sends {@code request} and returns the status code after reading the whole response. */
  int send(byte[] request) {
    try {
      out.write(request);
      out.flush();
      int status = -1;
      int length = 0;
      StringBuilder line = new StringBuilder();
      while (true) {
        int c = in.read();
        if (c < 0) {
          throw new IOException("connection closed by the gateway");
        }
        if (c != '\n') {
          line.append((char) c);
          continue;
        }
        String l = line.toString().trim();
        line.setLength(0);
        if (l.isEmpty()) {
          break;
        }
        if (status < 0) {
          status = Integer.parseInt(l.split(" ")[1]);
        } else if (l.toLowerCase(Locale.ROOT).startsWith("content-length:")) {
          length = Integer.parseInt(l.substring("content-length:".length()).trim());
        }
      }
      body = in.readNBytes(length);
      return status;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The body of the last response. */
  byte[] body() {
    return body;
  }

  @Override
  public void close() throws IOException {
    socket.close();
  }
}
