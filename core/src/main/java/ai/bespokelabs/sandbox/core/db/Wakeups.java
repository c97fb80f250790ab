package ai.bespokelabs.sandbox.core.db;

import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.pgclient.PgConnectOptions;
import io.vertx.pgclient.pubsub.PgChannel;
import io.vertx.pgclient.pubsub.PgSubscriber;

/**
 * The wake-ups PostgreSQL sends the outbox's consumers: every transaction appending to {@code lifecycle_events}
 * notifies (triggers, migration V10) {@link #LEDGER} (unless it only started an execution, which the ledger
 * passes over), and {@link #SUPERVISOR} when it wrote a sandbox event.
 * Listeners on every node hear them. A wake-up only says "look again": a lost one delays work until the
 * listener's periodic backstop.
 *
 * <p>The listeners of one node share one connection: PostgreSQL signals every listening connection at each
 * notifying commit, so each more connection would cost every write another backend woken.
 */
public final class Wakeups {
  /** Any lifecycle event was written. */
  public static final String LEDGER = "ledger_wakeup";
  /** A sandbox event was written (a create, a new deadline, an end): the earliest deadline may have moved. */
  public static final String SUPERVISOR = "supervisor_wakeup";
  static final long RECONNECT_MS = 1_000;

  private final PgConnectOptions connect;
  private PgSubscriber subscriber;
  private Future<PgSubscriber> connected;
  private int listeners;

  /** One channel listened to; closing the last one closes the shared connection. */
  public interface Listening {
    Future<Void> close();
  }

  public Wakeups(PgConnectOptions connect) {
    this.connect = new PgConnectOptions(connect);
  }

  /**
   * Listens on {@code channel}, reconnecting after {@link #RECONNECT_MS} when the connection is lost.
   * {@code onWake} runs on the caller's context for each notification and after each (re)subscription, since
   * notifications sent while disconnected are lost. The caller closes what it is given.
   */
  public Future<Listening> listen(Vertx vertx, String channel, Runnable onWake) {
    return listen(vertx, channel, onWake, payload -> onWake.run());
  }

  /**
   * Listens on {@code channel} for notifications that carry a payload: {@code onPayload} runs on the caller's
   * context with each one's. Notifications sent while disconnected are lost.
   */
  public Future<Listening> listenPayloads(Vertx vertx, String channel, java.util.function.Consumer<String> onPayload) {
    return listen(vertx, channel, () -> { }, onPayload);
  }

  private synchronized Future<Listening> listen(Vertx vertx, String channel, Runnable onSubscribed,
      java.util.function.Consumer<String> onPayload) {
    Context context = vertx.getOrCreateContext();
    if (subscriber == null) {
      subscriber = PgSubscriber.subscriber(vertx, connect).reconnectPolicy(retries -> RECONNECT_MS);
      connected = null;
    }
    PgSubscriber shared = subscriber;
    PgChannel ch = shared.channel(channel)
        .subscribeHandler(v -> context.runOnContext(x -> onSubscribed.run()))
        .handler(payload -> context.runOnContext(x -> onPayload.accept(payload)));
    listeners++;
    if (connected == null) {
      connected = shared.connect().map(shared);
    }
    java.util.concurrent.atomic.AtomicBoolean open = new java.util.concurrent.atomic.AtomicBoolean(true);
    Listening listening = () -> open.compareAndSet(true, false) ? release(shared, ch) : Future.succeededFuture();
    return connected.<Listening>map(listening)
        .recover(e -> listening.close().transform(ar -> Future.failedFuture(e)));
  }

  private synchronized Future<Void> release(PgSubscriber shared, PgChannel ch) {
    if (shared != subscriber) {
      return Future.succeededFuture(); // its connection is closed already
    }
    if (--listeners > 0) {
      ch.handler(null); // stops listening on the channel; the connection serves the others
      return Future.succeededFuture();
    }
    // the last one: closing the connection ends its listening (an UNLISTEN racing the close would fail)
    subscriber = null;
    connected = null;
    return shared.close();
  }
}
