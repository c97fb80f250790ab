package ai.bespokelabs.sandbox.adapters.docker;

import io.netty.channel.Channel;
import io.netty.channel.socket.DuplexChannel;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.internal.net.NetSocketInternal;
import io.vertx.core.net.NetSocket;
import io.vertx.core.parsetools.RecordParser;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.function.BiFunction;
import java.util.function.Consumer;

/**
 * The raw duplex stream of {@code POST /exec/{id}/start}: the engine answers {@code 101} and from then on
 * the connection carries the program's stdin one way and its multiplexed stdout/stderr the other (frames of
 * an 8-byte header, whose first byte is the stream and last four the size, and the payload). The frames are
 * read one at a time on demand: the next only once the previous one was taken, so while the client is slow
 * nothing reads the socket and the engine stops reading the program's pipes. Stdin's end is a write
 * half-close of the connection.
 */
final class HijackedStream {
  private static final Duration UPGRADE = Duration.ofSeconds(30);

  private final NetSocket socket;
  private final RecordParser parser;
  private final Context context;
  private Future<Void> lastWrite = Future.succeededFuture();
  private boolean writeClosed;
  /** The next record is a frame header (else a payload of {@link #type}). */
  private boolean header = true;
  private int type;
  private volatile boolean broken;

  private HijackedStream(NetSocket socket, RecordParser parser, Context context) {
    this.socket = socket;
    this.parser = parser;
    this.context = context;
  }

  /** The engine refused to start the exec with this HTTP status. */
  static final class Refused extends RuntimeException {
    final int status;

    Refused(int status) {
      super("exec start answered " + status, null, false, false);
      this.status = status;
    }
  }

  /** Starts the exec and upgrades the connection; fails with {@link Refused} when the engine answers otherwise. */
  static Future<HijackedStream> start(DockerEngine engine, String execId) {
    DockerHost host = engine.host();
    return engine.guarded("execute", UPGRADE, () -> engine.rawClient().connect(host.vertxAddress()).compose(socket -> {
      Promise<HijackedStream> upgraded = Promise.promise();
      Context context = Vertx.currentContext();
      RecordParser parser = RecordParser.newDelimited("\r\n\r\n", socket);
      parser.exceptionHandler(upgraded::tryFail);
      parser.endHandler(v -> upgraded.tryFail(new java.io.EOFException("the engine closed before answering")));
      parser.handler(head -> {
        parser.pause();
        int status = status(head.toString(StandardCharsets.ISO_8859_1));
        if (status != 101 && status != 200) {
          socket.close();
          upgraded.tryFail(new Refused(status));
          return;
        }
        parser.fixedSizeMode(8);
        upgraded.tryComplete(new HijackedStream(socket, parser, context));
      });
      byte[] body = "{\"Detach\":false,\"Tty\":false}".getBytes(StandardCharsets.US_ASCII);
      String head = "POST " + DockerEngine.API + "/exec/" + execId + "/start HTTP/1.1\r\n"
          + "Host: " + host.authority() + "\r\n"
          + "Content-Type: application/json\r\n"
          + "Connection: Upgrade\r\n"
          + "Upgrade: tcp\r\n"
          + "Content-Length: " + body.length + "\r\n\r\n";
      socket.write(Buffer.buffer(head).appendBytes(body)).onFailure(upgraded::tryFail);
      return upgraded.future().onFailure(t -> socket.close());
    }));
  }

  private static int status(String head) {
    String[] parts = head.split("\r?\n", 2)[0].split(" ", 3);
    if (parts.length < 2 || !parts[0].startsWith("HTTP/")) {
      return -1;
    }
    try {
      return Integer.parseInt(parts[1]);
    } catch (NumberFormatException e) {
      return -1;
    }
  }

  /**
   * Reads the frames: {@code frame} gets each one's stream (1 stdout, 2 stderr) and payload and answers when
   * the next may be read; {@code end} is called once at the end, with whether the stream broke off.
   */
  void read(BiFunction<Integer, byte[], Future<Void>> frame, Consumer<Boolean> end) {
    boolean[] ended = new boolean[1];
    Consumer<Boolean> once = b -> {
      if (!ended[0]) {
        ended[0] = true;
        socket.close();
        end.accept(b);
      }
    };
    parser.exceptionHandler(t -> once.accept(true));
    parser.endHandler(v -> once.accept(broken || !header));
    parser.handler(record -> {
      if (header) {
        int size = record.getInt(4);
        if (size < 0) {
          broken = true;
          once.accept(true);
          return;
        }
        if (size > 0) {
          type = record.getByte(0);
          header = false;
          parser.fixedSizeMode(size);
        }
        return;
      }
      header = true;
      parser.fixedSizeMode(8);
      parser.pause();
      frame.apply(type, record.getBytes()).onComplete(ar -> fetch());
    });
    parser.resume();
  }

  private void fetch() {
    if (Vertx.currentContext() == context) {
      parser.resume();
    } else {
      context.runOnContext(v -> parser.resume());
    }
  }

  /** Writes to the program's stdin; fails when stdin is closed. */
  Future<Void> write(Buffer data) {
    if (writeClosed) {
      return Future.failedFuture(new IllegalStateException("stdin is closed"));
    }
    Future<Void> written = socket.write(data);
    lastWrite = written;
    return written;
  }

  /** Ends stdin once what was written went out: the program reads end-of-file. Harmless when repeated. */
  Future<Void> closeWrite() {
    if (writeClosed) {
      return Future.succeededFuture();
    }
    writeClosed = true;
    Promise<Void> done = Promise.promise();
    lastWrite.onComplete(ar -> {
      Channel ch = ((NetSocketInternal) socket).channelHandlerContext().channel();
      if (ch instanceof DuplexChannel duplex && ch.isActive()) {
        // the connection may already be gone: the program has no stdin any more either way
        duplex.shutdownOutput().addListener(f -> done.tryComplete());
      } else {
        done.tryComplete();
      }
    });
    return done.future();
  }
}
