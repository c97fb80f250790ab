package ai.bespokelabs.sandbox.gateway.http;

import ai.bespokelabs.sandbox.core.db.Database;
import ai.bespokelabs.sandbox.core.repo.ReadinessRepository;
import ai.bespokelabs.sandbox.gateway.routing.Backends;
import ai.bespokelabs.sandbox.ledger.LedgerVerticle;
import io.vertx.core.Future;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import java.time.Clock;
import java.time.Duration;
import java.time.OffsetDateTime;

/**
 * {@code GET /readyz}, for load balancers and readiness probes (no authentication): 200 when every check passes,
 * else 503 naming the failing ones. Checks: a database round trip; the ledger's lag (its oldest unpriced
 * lifecycle event) under {@link #LEDGER_LAG_BOUND}; this node's supervisor having passed within its stale
 * period; and the node not draining (it is stopping). {@code /healthz} stays liveness only.
 */
public final class ReadinessApi implements Endpoints {
  static final Duration LEDGER_LAG_BOUND = Duration.ofSeconds(60);

  private final Backends backends;
  private final Pool pool;
  private final ReadinessRepository readiness;
  private final int supervisionIntervalSecs;
  private final Clock clock;

  public ReadinessApi(Backends backends, Pool pool, ReadinessRepository readiness, int supervisionIntervalSecs,
      Clock clock) {
    this.backends = backends;
    this.pool = pool;
    this.readiness = readiness;
    this.supervisionIntervalSecs = supervisionIntervalSecs;
    this.clock = clock;
  }

  @Override
  public void register(Api api) {
    api.open(HttpMethod.GET, "/readyz", ctx -> ready());
  }

  private Future<Reply> ready() {
    if (backends.draining()) {
      return Future.succeededFuture(Reply.of(503, new JsonObject().put("status", "draining")
          .put("checks", new JsonObject().put("draining", check(false, "the node is stopping")))));
    }
    OffsetDateTime now = OffsetDateTime.now(clock);
    JsonObject checks = new JsonObject();
    return Database.ping(pool).transform(db -> {
      checks.put("database", check(db.succeeded(), db.succeeded() ? null : "no round trip to the database"));
      if (db.failed()) {
        return Future.succeededFuture();
      }
      return Future.join(ledger(now, checks), supervisor(now, checks)).mapEmpty();
    }).transform(v -> {
      boolean ok = checks.stream().allMatch(e -> ((JsonObject) e.getValue()).getBoolean("ok"));
      JsonObject body = new JsonObject().put("status", ok ? "ready" : "not_ready").put("checks", checks);
      return Future.succeededFuture(ok ? Reply.ok(body) : Reply.of(503, body));
    });
  }

  private Future<Void> ledger(OffsetDateTime now, JsonObject checks) {
    return readiness.ledgerBacklog(LedgerVerticle.CONSUMER).transform(ar -> {
      if (ar.failed()) {
        checks.put("ledger", check(false, "the ledger's backlog could not be read"));
      } else {
        long lagSecs = ar.result().oldest().map(o -> Math.max(0, Duration.between(o, now).toSeconds())).orElse(0L);
        boolean ok = lagSecs <= LEDGER_LAG_BOUND.toSeconds();
        checks.put("ledger", check(ok, ok ? null : "the ledger is " + lagSecs + " s behind")
            .put("lag_secs", lagSecs).put("waiting_events", ar.result().waiting()));
      }
      return Future.succeededFuture();
    });
  }

  private Future<Void> supervisor(OffsetDateTime now, JsonObject checks) {
    if (supervisionIntervalSecs == 0) {
      checks.put("supervisor", check(true, null).put("disabled", true));
      return Future.succeededFuture();
    }
    long boundSecs = Math.max(60, 3L * supervisionIntervalSecs);
    return readiness.heartbeat(backends.nodeId()).transform(ar -> {
      if (ar.failed()) {
        checks.put("supervisor", check(false, "the supervisor's last pass could not be read"));
      } else {
        long ageSecs = ar.result().map(h -> Math.max(0, Duration.between(h, now).toSeconds())).orElse(-1L);
        boolean ok = ageSecs >= 0 && ageSecs <= boundSecs;
        checks.put("supervisor", check(ok, ok ? null : ageSecs < 0 ? "the supervisor has not passed yet"
            : "the supervisor last passed " + ageSecs + " s ago").put("last_pass_secs_ago", ageSecs));
      }
      return Future.succeededFuture();
    });
  }

  private static JsonObject check(boolean ok, String problem) {
    JsonObject c = new JsonObject().put("ok", ok);
    return problem == null ? c : c.put("problem", problem);
  }
}
