package ai.bespokelabs.sandbox.adapters.docker;

import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;

/**
 * The raw duplex stream of {@code POST /exec/{id}/start}: the engine answers {@code 101} and from then on
 * the connection carries the program's stdin one way and its multiplexed stdout/stderr the other. Stdin's
 * end is a write half-close, which the Vert.x socket API does not offer, so this one connection is a plain
 * blocking channel, read on the execution's own (virtual) thread: while the reader waits for the client,
 * nothing reads the socket and the engine stops reading the program's pipes.
 */
final class HijackedStream implements AutoCloseable {
  private final SocketChannel channel;
  private final InputStream in;
  private final Object writeLock = new Object();
  private boolean writeClosed;

  private HijackedStream(SocketChannel channel, InputStream in) {
    this.channel = channel;
    this.in = in;
  }

  /**
   * Starts the exec and upgrades the connection.
   *
   * @return the stream, or {@code null} with {@code status[0]} set when the engine answered with an error
   */
  static HijackedStream start(DockerHost host, String execId, int[] status) throws IOException {
    SocketChannel ch = host.open();
    try {
      byte[] body = "{\"Detach\":false,\"Tty\":false}".getBytes(StandardCharsets.US_ASCII);
      String head = "POST " + DockerEngine.API + "/exec/" + execId + "/start HTTP/1.1\r\n"
          + "Host: " + host.authority() + "\r\n"
          + "Content-Type: application/json\r\n"
          + "Connection: Upgrade\r\n"
          + "Upgrade: tcp\r\n"
          + "Content-Length: " + body.length + "\r\n\r\n";
      writeFully(ch, ByteBuffer.wrap(head.getBytes(StandardCharsets.US_ASCII)));
      writeFully(ch, ByteBuffer.wrap(body));
      InputStream in = new java.io.BufferedInputStream(Channels.newInputStream(ch), 64 * 1024);
      int code = readStatus(in);
      if (code != 101 && code != 200) {
        status[0] = code;
        ch.close();
        return null;
      }
      return new HijackedStream(ch, in);
    } catch (IOException | RuntimeException e) {
      ch.close();
      throw e;
    }
  }

  /** Reads the response head; returns its status code and leaves the stream at the first body byte. */
  private static int readStatus(InputStream in) throws IOException {
    ByteArrayOutputStream line = new ByteArrayOutputStream();
    int status = -1;
    boolean first = true;
    while (true) {
      int b = in.read();
      if (b < 0) {
        throw new EOFException("the engine closed the connection before answering");
      }
      if (b != '\n') {
        if (line.size() > 16 * 1024) {
          throw new IOException("response head too long");
        }
        line.write(b);
        continue;
      }
      String text = line.toString(StandardCharsets.ISO_8859_1).strip();
      line.reset();
      if (first) {
        String[] parts = text.split(" ", 3);
        if (parts.length < 2 || !parts[0].startsWith("HTTP/")) {
          throw new IOException("not an HTTP response");
        }
        status = Integer.parseInt(parts[1]);
        first = false;
      } else if (text.isEmpty()) {
        return status;
      }
    }
  }

  /**
   * Reads one frame of the multiplexed stream into {@code frame}: returns the stream type (1 stdout,
   * 2 stderr) and fills {@code frame[0]} with its payload, or returns -1 at the end of the stream.
   */
  int readFrame(byte[][] frame) throws IOException {
    byte[] header = in.readNBytes(8);
    if (header.length == 0) {
      return -1;
    }
    if (header.length < 8) {
      throw new EOFException("truncated frame header");
    }
    int size = ((header[4] & 0xff) << 24) | ((header[5] & 0xff) << 16) | ((header[6] & 0xff) << 8) | (header[7] & 0xff);
    if (size < 0) {
      throw new IOException("bad frame size");
    }
    byte[] payload = in.readNBytes(size);
    if (payload.length < size) {
      throw new EOFException("truncated frame");
    }
    frame[0] = payload;
    return header[0];
  }

  void write(byte[] data) throws IOException {
    synchronized (writeLock) {
      if (writeClosed) {
        throw new IOException("stdin is closed");
      }
      writeFully(channel, ByteBuffer.wrap(data));
    }
  }

  /** Ends stdin: the program reads end-of-file. Harmless when repeated or after the stream ended. */
  void closeWrite() {
    synchronized (writeLock) {
      if (writeClosed) {
        return;
      }
      writeClosed = true;
      try {
        channel.shutdownOutput();
      } catch (IOException ignored) {
        // the connection is already gone: the program has no stdin any more either way
      }
    }
  }

  private static void writeFully(SocketChannel ch, ByteBuffer buf) throws IOException {
    while (buf.hasRemaining()) {
      ch.write(buf);
    }
  }

  @Override
  public void close() {
    try {
      channel.close();
    } catch (IOException ignored) {
      // nothing left to release
    }
  }
}
