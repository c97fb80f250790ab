package ai.bespokelabs.sandbox.core.repo;

import ai.bespokelabs.sandbox.core.Ids;
import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.SqlClient;
import io.vertx.sqlclient.Tuple;
import java.time.OffsetDateTime;

/** Appends rows to the {@code lifecycle_events} outbox; always called inside the state change's transaction. */
public final class LifecycleEvents {
  static final String INSERT = "INSERT INTO lifecycle_events"
      + " (id, organization_id, sandbox_id, execution_id, type, status, occurred_at, data)"
      + " VALUES ($1, $2, $3, $4, $5, $6, $7, $8)";

  private LifecycleEvents() {}

  public static Future<Void> append(SqlClient conn, String orgId, String sandboxId, String executionId, String type,
      String status, OffsetDateTime at, JsonObject data) {
    return conn.preparedQuery(INSERT)
        .execute(Tuple.of(Ids.newId("evt"), orgId, sandboxId, executionId, type, status, at,
            data == null ? new JsonObject() : data))
        .mapEmpty();
  }
}
