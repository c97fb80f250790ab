package ai.bespokelabs.sandbox.core.model;

import io.vertx.sqlclient.Row;
import java.time.OffsetDateTime;

/** One row of {@code executions}; {@code response} and {@code error} are the stored JSON documents. */
public record ExecutionRecord(String id, String organizationId, String sandboxId, String requestId, String status,
    Object response, Object error, Integer exitCode, Long durationMs, OffsetDateTime createdAt,
    OffsetDateTime completedAt, String nodeId, boolean stdinOpen) {

  public static final String COLUMNS =
      "id, organization_id, sandbox_id, request_id, status, response, error, exit_code, duration_ms, created_at,"
          + " completed_at, node_id, stdin_open";

  public static ExecutionRecord from(Row r) {
    return new ExecutionRecord(r.getString("id"), r.getString("organization_id"), r.getString("sandbox_id"),
        r.getString("request_id"), r.getString("status"),
        r.getString("response") == null ? null : new io.vertx.core.json.JsonObject(r.getString("response")),
        r.getValue("error"),
        r.getInteger("exit_code"), r.getLong("duration_ms"), r.getOffsetDateTime("created_at"),
        r.getOffsetDateTime("completed_at"), r.getString("node_id"), r.getBoolean("stdin_open"));
  }
}
