package ai.bespokelabs.sandbox.ledger;

import ai.bespokelabs.sandbox.core.db.Wakeups;
import ai.bespokelabs.sandbox.core.outbox.OutboxConsumer;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.sqlclient.Pool;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Consumes the lifecycle-event outbox as the {@code ledger} consumer: woken by PostgreSQL after each commit that
 * wrote events ({@link Wakeups#LEDGER}, on any node) and by a periodic timer as a backstop (a lost wake-up only
 * delays work). Pricing of events is added by the ledger's handler; this verticle owns the exactly-once
 * delivery loop.
 */
public final class LedgerVerticle extends VerticleBase {
  private static final Logger LOG = LoggerFactory.getLogger(LedgerVerticle.class);
  public static final String CONSUMER = "ledger";
  static final long BACKSTOP_MS = 5_000;
  /** Wake-ups within this window are served by one pass, so a busy gateway does not poll per request. */
  static final long COALESCE_MS = 50;

  private final OutboxConsumer consumer;
  private final Wakeups wakeups;
  private Wakeups.Listening subscriber;
  private boolean running;
  private boolean stopping;
  private Future<Integer> current = Future.succeededFuture(0);
  private boolean again;
  private boolean scheduled;
  private long timer;

  public LedgerVerticle(Pool pool, Wakeups wakeups, OutboxConsumer.Handler handler) {
    this.consumer = new OutboxConsumer(pool, CONSUMER, 1000, handler);
    this.wakeups = wakeups;
  }

  @Override
  public Future<?> start() {
    timer = vertx.setPeriodic(BACKSTOP_MS, t -> drain());
    return consumer.register()
        .compose(v -> wakeups.listen(vertx, Wakeups.LEDGER, this::wakeUp))
        .onSuccess(s -> {
          subscriber = s;
          drain();
        });
  }

  /** Lets a pass in progress finish (its transaction commits or rolls back) before the pool closes. */
  @Override
  public Future<?> stop() {
    stopping = true;
    vertx.cancelTimer(timer);
    Future<Void> closed = subscriber == null ? Future.succeededFuture() : subscriber.close();
    return Future.join(closed, current).otherwiseEmpty();
  }

  private void wakeUp() {
    if (!scheduled) {
      scheduled = true;
      vertx.setTimer(COALESCE_MS, t -> {
        scheduled = false;
        drain();
      });
    }
  }

  /** Runs batches until caught up; wake-ups arriving meanwhile schedule one more pass. */
  private void drain() {
    if (stopping) {
      return;
    }
    if (running) {
      again = true;
      return;
    }
    running = true;
    again = false;
    current = consumer.pollOnce();
    current.onComplete(ar -> {
      running = false;
      if (ar.failed()) {
        LOG.warn("Ledger outbox pass failed: {}", ar.cause().toString());
      } else if (ar.result() > 0 || again) {
        drain();
      }
    });
  }
}
