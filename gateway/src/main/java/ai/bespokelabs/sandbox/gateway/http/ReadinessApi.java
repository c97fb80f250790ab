package ai.bespokelabs.sandbox.gateway.http;

import ai.bespokelabs.sandbox.core.db.Database;
import ai.bespokelabs.sandbox.gateway.routing.Backends;
import io.vertx.core.Future;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;

/**
 * {@code GET /readyz}, for load balancers and readiness probes: 200 when a database round trip succeeds, 503
 * while the node drains (it is stopping) or cannot reach the database. No authentication.
 */
public final class ReadinessApi implements Endpoints {
  private final Backends backends;
  private final Pool pool;

  public ReadinessApi(Backends backends, Pool pool) {
    this.backends = backends;
    this.pool = pool;
  }

  @Override
  public void register(Api api) {
    api.open(HttpMethod.GET, "/readyz", ctx -> ready());
  }

  private Future<Reply> ready() {
    if (backends.draining()) {
      return Future.succeededFuture(Reply.of(503, new JsonObject().put("status", "draining")));
    }
    return Database.ping(pool).transform(ar -> Future.succeededFuture(ar.succeeded()
        ? Reply.ok(new JsonObject().put("status", "ready"))
        : Reply.of(503, new JsonObject().put("status", "database_unavailable"))));
  }
}
