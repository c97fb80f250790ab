package ai.bespokelabs.sandbox.gateway.http;

import ai.bespokelabs.sandbox.core.config.AddressRange;
import ai.bespokelabs.sandbox.core.config.HttpConfig;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpConnection;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.json.JsonObject;
import io.vertx.core.net.SocketAddress;
import io.vertx.ext.web.RoutingContext;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps clients from holding the server's connections, for one HTTP verticle instance (its state is confined
 * to that instance's event loop; only {@link Clients} is shared).
 *
 * <ul>
 *   <li>A connection with no request in progress (none yet, or its last exchange ended) is closed after the
 *       idle timeout. A request in progress is never cut, however long it streams, waits on backpressure or
 *       pauses its upload: the timer only runs between requests.
 *   <li>Each client address holds at most {@code maxConnectionsPerClient} connections at once (IPv6 clients
 *       by their /64, which one host usually owns whole); more are closed as they are accepted. A connection
 *       from a trusted proxy is not counted itself: each of its requests counts, while it is in progress, for
 *       the client its {@code X-Forwarded-For} names, and one over the limit is answered 429.
 * </ul>
 */
public final class ConnectionGuard {
  private static final Logger LOG = LoggerFactory.getLogger(ConnectionGuard.class);
  static final String FORWARDED_FOR = "X-Forwarded-For";
  static final String OVER_LIMIT = "too many concurrent connections from this client";
  private static final long WARN_EVERY_NANOS = TimeUnit.MINUTES.toNanos(1);

  /** Open connections per client address, across every HTTP verticle instance of this process. */
  public static final class Clients {
    private final ConcurrentHashMap<String, Integer> open = new ConcurrentHashMap<>();
    private final AtomicLong refused = new AtomicLong();
    private final AtomicLong lastWarned = new AtomicLong(System.nanoTime() - WARN_EVERY_NANOS);

    /** Counts one more for {@code client} unless that would pass {@code max} (0: no limit). */
    boolean acquire(String client, int max) {
      boolean[] taken = {false};
      open.compute(client, (k, n) -> {
        int now = n == null ? 0 : n;
        if (max > 0 && now >= max) {
          return n;
        }
        taken[0] = true;
        return now + 1;
      });
      if (!taken[0]) {
        refused(client, max);
      }
      return taken[0];
    }

    void release(String client) {
      open.computeIfPresent(client, (k, n) -> n <= 1 ? null : n - 1);
    }

    /** What one client holds now; for tests. */
    int open(String client) {
      return open.getOrDefault(client, 0);
    }

    /** One warning a minute at most, however hard a flood pushes. */
    private void refused(String client, int max) {
      long total = refused.incrementAndGet();
      long now = System.nanoTime();
      long last = lastWarned.get();
      if (now - last >= WARN_EVERY_NANOS && lastWarned.compareAndSet(last, now)) {
        LOG.warn("Refusing connections from {}: it holds the {} allowed per client"
            + " (BESPOKE_HTTP_MAX_CONNECTIONS_PER_CLIENT); {} refused since start", client, max, total);
      }
    }
  }

  /** One accepted connection. */
  private static final class Conn {
    final HttpConnection connection;
    /** The address counted for it at accept; null for a trusted proxy's. */
    final String client;
    long timer = -1;
    /** When its last exchange ended (or it was accepted); -1 while a request is in progress. */
    long idleSince;
    HttpServerRequest current;
    /** Counts the requests it carried; names the current one across the router's wrapper of it. */
    long exchange;
    long bodyBytesSeen;
    /** The forwarded client its current request counts for (trusted proxies only). */
    String heldFor;
    boolean closed;

    Conn(HttpConnection connection, String client) {
      this.connection = connection;
      this.client = client;
      this.idleSince = System.nanoTime();
    }
  }

  private final Vertx vertx;
  private final Clients clients;
  private final long idleNanos;
  private final int maxPerClient;
  private final List<AddressRange> trustedProxies;
  private final Map<HttpConnection, Conn> connections = new HashMap<>();

  ConnectionGuard(Vertx vertx, HttpConfig config, Clients clients) {
    this.vertx = vertx;
    this.clients = clients;
    this.idleNanos = TimeUnit.SECONDS.toNanos(config.idleTimeoutSecs());
    this.maxPerClient = config.maxConnectionsPerClient();
    this.trustedProxies = config.trustedProxies();
  }

  /** The server's connection handler: counts the connection for its client (or closes it) and starts its timer. */
  void accept(HttpConnection connection) {
    byte[] peer = peer(connection.remoteAddress());
    boolean proxy = peer != null && trustedProxies.stream().anyMatch(r -> r.contains(peer));
    String client = proxy ? null : clientKey(peer, connection.remoteAddress());
    if (client != null && !clients.acquire(client, maxPerClient)) {
      connection.close();
      return;
    }
    Conn c = new Conn(connection, client);
    connections.put(connection, c);
    onClose(connection, () -> closed(c));
    arm(c, idleNanos);
  }

  /**
   * Runs {@code action} on the connection's event loop when its socket closes, whatever carries it by then. A
   * connection upgraded to a WebSocket no longer reports its close to its {@code closeHandler} (the WebSocket
   * took the channel over), so the channel's own close is watched where Vert.x exposes it.
   */
  private static void onClose(HttpConnection connection, Runnable action) {
    if (connection instanceof io.vertx.core.net.impl.ConnectionBase base) {
      base.closeFuture().onComplete(ar -> action.run());
    } else {
      connection.closeHandler(v -> action.run());
    }
  }

  /**
   * A request's head arrived: its connection is busy until the exchange ends. False when it was refused and
   * answered here (a trusted proxy's request for a client over its limit).
   */
  boolean started(HttpServerRequest req) {
    Conn c = connections.get(req.connection());
    if (c == null) {
      return true;
    }
    release(c);
    c.current = req;
    c.exchange++;
    c.idleSince = -1;
    c.bodyBytesSeen = 0;
    if (c.timer == -1) {
      arm(c, idleNanos); // looks again later; a request in progress is never cut
    }
    if (c.client == null) {
      String client = forwardedClient(req, c.connection.remoteAddress());
      if (!clients.acquire(client, maxPerClient)) {
        refuse(req);
        return false;
      }
      c.heldFor = client;
    }
    return true;
  }

  /**
   * The router's first handler, run as the router takes the request {@link #started} just saw: notes when the
   * exchange ends, so the idle time is counted from then.
   */
  void routed(RoutingContext ctx) {
    Conn c = connections.get(ctx.request().connection());
    if (c != null) {
      long exchange = c.exchange;
      ctx.addEndHandler(ar -> {
        if (c.exchange == exchange && !c.closed) {
          release(c);
          c.idleSince = System.nanoTime();
          cancel(c);
          arm(c, idleNanos);
        }
      });
    }
  }

  /**
   * The timer: a connection busy with a request is looked at again later; one idle for the timeout is closed.
   * Busy means its response is still being written, or the rest of its request's body is still arriving.
   */
  private void check(Conn c) {
    c.timer = -1;
    if (c.closed) {
      return;
    }
    HttpServerRequest req = c.current;
    if (req != null && busy(c, req)) {
      c.idleSince = -1;
      arm(c, idleNanos);
      return;
    }
    release(c);
    long now = System.nanoTime();
    if (c.idleSince == -1) {
      c.idleSince = now; // the exchange ended without passing the router's end handlers
    }
    long left = idleNanos - (now - c.idleSince);
    if (left <= 0) {
      c.connection.close();
    } else {
      arm(c, left);
    }
  }

  private static boolean busy(Conn c, HttpServerRequest req) {
    HttpServerResponse res = req.response();
    if (!res.ended() && !res.closed()) {
      return true;
    }
    if (req.isEnded()) {
      return false;
    }
    long read = req.bytesRead();
    boolean moving = read != c.bodyBytesSeen;
    c.bodyBytesSeen = read;
    return moving;
  }

  private void closed(Conn c) {
    if (c.closed) {
      return;
    }
    c.closed = true;
    cancel(c);
    release(c);
    connections.remove(c.connection);
    if (c.client != null) {
      clients.release(c.client);
    }
  }

  private void release(Conn c) {
    if (c.heldFor != null) {
      clients.release(c.heldFor);
      c.heldFor = null;
    }
  }

  private void arm(Conn c, long nanos) {
    c.timer = vertx.setTimer(Math.max(1, TimeUnit.NANOSECONDS.toMillis(nanos)), id -> check(c));
  }

  private void cancel(Conn c) {
    if (c.timer != -1) {
      vertx.cancelTimer(c.timer);
      c.timer = -1;
    }
  }

  /** 429 in the contract's shape; the connection is closed after it, since the request's body is unread. */
  private static void refuse(HttpServerRequest req) {
    req.response().headers().addAll(SecurityHeaders.HEADERS);
    req.response().setStatusCode(429).putHeader("Content-Type", "application/json").putHeader("Connection", "close")
        .putHeader("Retry-After", "1")
        .end(new JsonObject().put("detail", OVER_LIMIT).toBuffer())
        .onComplete(v -> req.connection().close());
  }

  /**
   * The client a trusted proxy's request is for: the rightmost {@code X-Forwarded-For} entry that is not itself
   * a trusted proxy (what the nearest proxy appended; entries to its left are the client's to write). Without a
   * usable entry, the proxy itself.
   */
  String forwardedClient(HttpServerRequest req, SocketAddress proxy) {
    List<String> headers = req.headers().getAll(FORWARDED_FOR);
    for (int h = headers.size() - 1; h >= 0; h--) {
      String[] entries = headers.get(h).split(",");
      for (int i = entries.length - 1; i >= 0; i--) {
        byte[] address = AddressRange.literal(entries[i]);
        if (address == null) {
          return clientKey(peer(proxy), proxy);
        }
        if (trustedProxies.stream().noneMatch(r -> r.contains(address))) {
          return clientKey(address, null);
        }
      }
    }
    return clientKey(peer(proxy), proxy);
  }

  private static byte[] peer(SocketAddress address) {
    return address == null || address.hostAddress() == null ? null : AddressRange.literal(address.hostAddress());
  }

  /** An IPv4 address as itself; an IPv6 one by its /64; anything else (a Unix socket) by its text. */
  static String clientKey(byte[] address, SocketAddress fallback) {
    if (address == null) {
      return fallback == null ? "unknown" : String.valueOf(fallback.hostAddress() != null ? fallback.hostAddress()
          : fallback.path());
    }
    if (address.length == 4) {
      return (address[0] & 0xff) + "." + (address[1] & 0xff) + "." + (address[2] & 0xff) + "." + (address[3] & 0xff);
    }
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < 8; i += 2) {
      b.append(Integer.toHexString(((address[i] & 0xff) << 8) | (address[i + 1] & 0xff))).append(':');
    }
    return b.append(":/64").toString();
  }
}
