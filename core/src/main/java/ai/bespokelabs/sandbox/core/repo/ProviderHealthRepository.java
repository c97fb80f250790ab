package ai.bespokelabs.sandbox.core.repo;

import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.Tuple;
import java.time.OffsetDateTime;
import java.util.HashMap;
import java.util.Map;

/** The last health check of each backend (deployment-wide). */
public final class ProviderHealthRepository {
  private final Pool pool;

  public ProviderHealthRepository(Pool pool) {
    this.pool = pool;
  }

  /** Backend → {status, checked_at, message}. */
  public Future<Map<String, JsonObject>> all() {
    return pool.query("SELECT backend, status, checked_at, message FROM provider_health").execute().map(rows -> {
      Map<String, JsonObject> out = new HashMap<>();
      for (Row r : rows) {
        out.put(r.getString("backend"), new JsonObject().put("status", r.getString("status"))
            .put("checked_at", ai.bespokelabs.sandbox.core.Times.iso(r.getOffsetDateTime("checked_at")))
            .put("message", r.getString("message")));
      }
      return out;
    });
  }

  /** Records a check; returns the previous status (null when never checked) to detect transitions. */
  public Future<String> record(String backend, String status, String message, String keyId, OffsetDateTime now) {
    return pool.preparedQuery("""
            WITH prev AS (SELECT status FROM provider_health WHERE backend = $1)
            INSERT INTO provider_health (backend, status, checked_at, message, checked_by_api_key_id)
            VALUES ($1, $2, $3, $4, $5)
            ON CONFLICT (backend) DO UPDATE SET status = EXCLUDED.status, checked_at = EXCLUDED.checked_at,
              message = EXCLUDED.message, checked_by_api_key_id = EXCLUDED.checked_by_api_key_id
            RETURNING (SELECT status FROM prev) AS previous""")
        .execute(Tuple.of(backend, status, now, message, keyId))
        .map(rows -> rows.iterator().next().getString("previous"));
  }
}
