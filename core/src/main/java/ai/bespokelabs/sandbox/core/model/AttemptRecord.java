package ai.bespokelabs.sandbox.core.model;

import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Row;
import java.time.OffsetDateTime;

/** One row of {@code sandbox_creation_attempts}; {@code backend} is null for attempts older than placement. */
public record AttemptRecord(int attemptNumber, String status, String retryStatus, String cleanupStatus,
    String providerResourceId, OffsetDateTime startedAt, OffsetDateTime completedAt, JsonObject error, String backend) {

  public static final String COLUMNS =
      "attempt_number, status, retry_status, cleanup_status, provider_resource_id, started_at, completed_at, error,"
      + " backend";

  public static AttemptRecord from(Row r) {
    return new AttemptRecord(r.getInteger("attempt_number"), r.getString("status"), r.getString("retry_status"),
        r.getString("cleanup_status"), r.getString("provider_resource_id"), r.getOffsetDateTime("started_at"),
        r.getOffsetDateTime("completed_at"), (JsonObject) r.getValue("error"), r.getString("backend"));
  }
}
