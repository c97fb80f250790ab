package ai.bespokelabs.sandbox.core.db;

import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.pgclient.PgConnectOptions;
import io.vertx.pgclient.pubsub.PgSubscriber;

/**
 * The wake-ups PostgreSQL sends the outbox's consumers: every transaction appending to {@code lifecycle_events}
 * notifies (a trigger, migration V10) {@link #LEDGER}, and {@link #SUPERVISOR} when it wrote a sandbox event.
 * Listeners on every node hear them. A wake-up only says "look again": a lost one delays work until the
 * listener's periodic backstop.
 */
public final class Wakeups {
  /** Any lifecycle event was written. */
  public static final String LEDGER = "ledger_wakeup";
  /** A sandbox event was written (a create, a new deadline, an end): the earliest deadline may have moved. */
  public static final String SUPERVISOR = "supervisor_wakeup";
  static final long RECONNECT_MS = 1_000;

  private final PgConnectOptions connect;

  public Wakeups(PgConnectOptions connect) {
    this.connect = new PgConnectOptions(connect);
  }

  /**
   * Listens on {@code channel} over a connection of its own, reconnecting after {@link #RECONNECT_MS} when it is
   * lost. {@code onWake} runs on the caller's context for each notification and after each (re)subscription,
   * since notifications sent while disconnected are lost. The caller closes the subscriber it is given.
   */
  public Future<PgSubscriber> listen(Vertx vertx, String channel, Runnable onWake) {
    Context context = vertx.getOrCreateContext();
    PgSubscriber subscriber = PgSubscriber.subscriber(vertx, connect).reconnectPolicy(retries -> RECONNECT_MS);
    subscriber.channel(channel)
        .subscribeHandler(v -> context.runOnContext(x -> onWake.run()))
        .handler(payload -> context.runOnContext(x -> onWake.run()));
    return subscriber.connect().map(subscriber)
        .recover(e -> subscriber.close().transform(ar -> Future.failedFuture(e)));
  }
}
