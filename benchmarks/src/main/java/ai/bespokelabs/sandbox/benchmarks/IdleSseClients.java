package ai.bespokelabs.sandbox.benchmarks;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;

/**
 * The client side of {@link StreamBenchmark}'s idle streams, run in a JVM of its own so that the gateway's
 * process holds only the server side of each stream (its heap and one file descriptor). With one NIO
 * selector it sends {@code streams} SSE requests ({@code GET path}), at most {@value #MAX_CONNECTING} waiting
 * for their response head at a time; a stream is open once its {@code 200} head arrived. Then it holds them
 * all for {@code holdSecs}, watching for closes and heartbeat comments, and closes them. It reports on
 * stdout, one line per phase: {@code opened N failed N closed N millis N}, then {@code alive N heartbeats
 * N}; the first failure goes to stderr.
 *
 * <p>A raw NIO selector rather than testkit's SseClient on purpose: ten thousand idle streams cost it one
 * small buffer each, and nothing else runs in this JVM to blur what the gateway holds.
 *
 * <p>Arguments: {@code port path key streams holdSecs}
 */
final class IdleSseClients {
  private static final int MAX_CONNECTING = 256;
  private static final long OPEN_TIMEOUT_SECS = 120;
  private static final byte[] HEARTBEAT = ": keep-alive".getBytes(StandardCharsets.US_ASCII);

  /** One stream: its response head until complete, then whether a heartbeat followed. */
  private static final class Stream {
    final ByteBuffer head = ByteBuffer.allocate(4096);
    boolean open;
    boolean heartbeat;
  }

  private final Selector selector = Selector.open();
  private final ByteBuffer scratch = ByteBuffer.allocate(64 * 1024);
  private final byte[] request;
  private int connecting;
  private int opened;
  private int failed;
  private int closed;
  private int heartbeats;
  private String firstFailure;

  private IdleSseClients(byte[] request) throws IOException {
    this.request = request;
  }

  public static void main(String[] args) throws IOException {
    InetSocketAddress server = new InetSocketAddress("127.0.0.1", Integer.parseInt(args[0]));
    IdleSseClients c = new IdleSseClients(("GET " + args[1] + " HTTP/1.1\r\nHost: gateway\r\nAuthorization: Bearer "
        + args[2] + "\r\nAccept: text/event-stream\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
    int streams = Integer.parseInt(args[3]);
    long holdNanos = TimeUnit.SECONDS.toNanos(Long.parseLong(args[4]));

    long t0 = System.nanoTime();
    long giveUp = t0 + TimeUnit.SECONDS.toNanos(OPEN_TIMEOUT_SECS);
    int started = 0;
    while (c.opened + c.failed < streams && System.nanoTime() < giveUp) {
      for (; started < streams && c.connecting < MAX_CONNECTING; started++) {
        c.connect(server);
      }
      c.poll(100);
    }
    int unanswered = streams - c.opened - c.failed;
    if (unanswered > 0) {
      c.failed += unanswered;
      c.failure(unanswered + " streams got no response head within " + OPEN_TIMEOUT_SECS + " s");
    }
    System.out.printf("opened %d failed %d closed %d millis %d%n", c.opened, c.failed, c.closed,
        TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0));

    long holdEnd = System.nanoTime() + holdNanos;
    for (long left; (left = holdEnd - System.nanoTime()) > 0; ) {
      c.poll(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
    }
    System.out.printf("alive %d heartbeats %d%n", c.opened - c.closed, c.heartbeats);
    for (SelectionKey k : c.selector.keys()) {
      k.channel().close();
    }
    if (c.firstFailure != null) {
      System.err.println("idle SSE clients: first failure: " + c.firstFailure);
    }
  }

  private void connect(InetSocketAddress server) {
    connecting++;
    try {
      SocketChannel ch = SocketChannel.open();
      ch.configureBlocking(false);
      ch.connect(server);
      ch.register(selector, SelectionKey.OP_CONNECT, new Stream());
    } catch (IOException e) {
      connecting--;
      failed++;
      failure("connect: " + e);
    }
  }

  private void poll(long timeoutMs) throws IOException {
    selector.select(key -> {
      Stream s = (Stream) key.attachment();
      SocketChannel ch = (SocketChannel) key.channel();
      try {
        if (key.isConnectable()) {
          ch.finishConnect();
          if (ch.write(ByteBuffer.wrap(request)) != request.length) {
            throw new IOException("the request did not fit the socket's send buffer");
          }
          key.interestOps(SelectionKey.OP_READ);
        } else if (s.open) {
          scratch.clear();
          if (ch.read(scratch) < 0) {
            closed++;
            ch.close();
          } else if (!s.heartbeat && contains(scratch.array(), scratch.position(), HEARTBEAT)) {
            s.heartbeat = true;
            heartbeats++;
          }
        } else if (ch.read(s.head) < 0) {
          throw new IOException("the gateway closed the connection before the response head");
        } else {
          responseHead(s);
        }
      } catch (IOException e) {
        if (s.open) {
          closed++;
        } else {
          connecting--;
          failed++;
        }
        failure(e.getMessage());
        try {
          ch.close();
        } catch (IOException ignored) {
          // already failed
        }
      }
    }, timeoutMs);
  }

  /** Opens the stream once its whole head is in; throws on another status than 200. */
  private void responseHead(Stream s) throws IOException {
    String head = new String(s.head.array(), 0, s.head.position(), StandardCharsets.ISO_8859_1);
    int endOfHead = head.indexOf("\r\n\r\n");
    if (endOfHead < 0) {
      if (!s.head.hasRemaining()) {
        throw new IOException("response head larger than " + s.head.capacity() + " bytes");
      }
      return;
    }
    if (!head.startsWith("HTTP/1.1 200 ")) {
      throw new IOException("the gateway answered " + head.substring(0, head.indexOf('\r')));
    }
    s.open = true;
    connecting--;
    opened++;
  }

  private static boolean contains(byte[] data, int length, byte[] part) {
    outer:
    for (int i = 0; i + part.length <= length; i++) {
      for (int j = 0; j < part.length; j++) {
        if (data[i + j] != part[j]) {
          continue outer;
        }
      }
      return true;
    }
    return false;
  }

  private void failure(String message) {
    if (firstFailure == null) {
      firstFailure = message;
    }
  }
}
