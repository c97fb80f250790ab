package ai.bespokelabs.sandbox.core.repo;

import ai.bespokelabs.sandbox.core.Ids;
import ai.bespokelabs.sandbox.core.Times;
import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.RowSet;
import io.vertx.sqlclient.Tuple;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;

/** Audit trail, alert configuration and events, and retention: the tenant's operational records. */
public final class OperationsRepository {
  /** A page of items and whether more follow. */
  public record Page(List<JsonObject> items, boolean more) {}

  private final Pool pool;

  public OperationsRepository(Pool pool) {
    this.pool = pool;
  }

  // ---- audit ----------------------------------------------------------------------------------------

  private static final String AUDIT_INSERT = "INSERT INTO audit_log (id, organization_id, api_key_id, action,"
      + " resource_type, resource_id, outcome, details, created_at, session_id)"
      + " VALUES ($1, $2, $3, $4, 'http_route', $5, $6, $7, $8, $9)";
  /** The most entries one write carries. */
  static final int AUDIT_BATCH = 256;

  private record PendingAudit(Tuple row, io.vertx.core.Promise<Void> written) {}

  private final java.util.ArrayDeque<PendingAudit> auditQueue = new java.util.ArrayDeque<>();
  private boolean auditWriting;

  /**
   * Appends an audit entry. Entries are group-committed: while one write is in flight, the entries that arrive
   * are queued and written together by the next, so a busy gateway spends one round trip on many entries and an
   * idle one writes each at once. Completes once the entry is stored.
   */
  public Future<Void> audit(String orgId, String keyId, String action, String resourceId, String outcome,
      JsonObject details, OffsetDateTime now) {
    return audit(orgId, keyId, null, action, resourceId, outcome, details, now);
  }

  /** As above, for a request made with a dashboard session ({@code sessionId}; null for a Bearer key). */
  public Future<Void> audit(String orgId, String keyId, String sessionId, String action, String resourceId,
      String outcome, JsonObject details, OffsetDateTime now) {
    Tuple row = Tuple.of(Ids.newId("aud"), orgId, keyId, action, resourceId.length() > 255
        ? resourceId.substring(0, 255) : resourceId, outcome).addValue(details).addValue(now).addValue(sessionId);
    io.vertx.core.Promise<Void> written = io.vertx.core.Promise.promise();
    boolean start;
    synchronized (auditQueue) {
      auditQueue.add(new PendingAudit(row, written));
      start = !auditWriting;
      auditWriting = true;
    }
    if (start) {
      writeAudit();
    }
    return written.future();
  }

  /** Writes what is queued, then again while entries keep arriving. */
  private void writeAudit() {
    List<PendingAudit> batch = new ArrayList<>();
    synchronized (auditQueue) {
      while (batch.size() < AUDIT_BATCH && !auditQueue.isEmpty()) {
        batch.add(auditQueue.poll());
      }
      if (batch.isEmpty()) {
        auditWriting = false;
        return;
      }
    }
    List<Tuple> rows = new ArrayList<>(batch.size());
    batch.forEach(e -> rows.add(e.row()));
    Future<RowSet<Row>> write = rows.size() == 1 ? pool.preparedQuery(AUDIT_INSERT).execute(rows.get(0))
        : pool.preparedQuery(AUDIT_INSERT).executeBatch(rows);
    write.onComplete(ar -> {
      batch.forEach(e -> {
        if (ar.succeeded()) {
          e.written().complete();
        } else {
          e.written().fail(ar.cause());
        }
      });
      writeAudit();
    });
  }

  public Future<Page> auditPage(String orgId, long offset, int limit) {
    return pool.preparedQuery("""
            SELECT a.id, a.action, a.resource_type, a.resource_id, a.outcome, a.details, a.created_at, a.api_key_id,
                   k.name AS api_key_name
            FROM audit_log a LEFT JOIN api_keys k ON k.id = a.api_key_id
            WHERE a.organization_id = $1 ORDER BY a.created_at DESC, a.id DESC OFFSET $2 LIMIT $3""")
        .execute(Tuple.of(orgId, offset, limit + 1))
        .map(rows -> page(rows, limit, r -> new JsonObject().put("id", r.getString("id"))
            .put("action", r.getString("action")).put("resource_type", r.getString("resource_type"))
            .put("resource_id", r.getString("resource_id")).put("outcome", r.getString("outcome"))
            .put("details", r.getValue("details")).put("created_at", Times.iso(r.getOffsetDateTime("created_at")))
            .put("api_key_id", r.getString("api_key_id")).put("api_key_name", r.getString("api_key_name"))));
  }

  // ---- alerts ---------------------------------------------------------------------------------------

  public static final JsonObject DEFAULT_ALERTS = new JsonObject().putNull("budget_threshold_percent")
      .putNull("repeated_failures_count").put("repeated_failures_window_minutes", 60)
      .put("provider_degradation_enabled", true).putNull("long_running_secs").put("failed_cleanup_enabled", true)
      .put("version", 1).putNull("updated_at").putNull("updated_by_api_key_id");

  private static final String ALERT_COLUMNS = "budget_threshold_percent, repeated_failures_count,"
      + " repeated_failures_window_minutes, provider_degradation_enabled, long_running_secs, failed_cleanup_enabled,"
      + " version, updated_at, updated_by_api_key_id";

  public Future<JsonObject> alertConfiguration(String orgId) {
    return pool.preparedQuery("SELECT " + ALERT_COLUMNS + " FROM alert_configurations WHERE organization_id = $1")
        .execute(Tuple.of(orgId))
        .map(rows -> rows.size() == 0 ? DEFAULT_ALERTS.copy() : alertJson(rows.iterator().next()));
  }

  public Future<JsonObject> replaceAlertConfiguration(String orgId, JsonObject c, String keyId, OffsetDateTime now) {
    return pool.preparedQuery("""
            INSERT INTO alert_configurations (organization_id, budget_threshold_percent, repeated_failures_count,
              repeated_failures_window_minutes, provider_degradation_enabled, long_running_secs, failed_cleanup_enabled,
              version, updated_at, updated_by_api_key_id)
            VALUES ($1, $2, $3, $4, $5, $6, $7, 2, $8, $9)
            ON CONFLICT (organization_id) DO UPDATE SET
              budget_threshold_percent = EXCLUDED.budget_threshold_percent,
              repeated_failures_count = EXCLUDED.repeated_failures_count,
              repeated_failures_window_minutes = EXCLUDED.repeated_failures_window_minutes,
              provider_degradation_enabled = EXCLUDED.provider_degradation_enabled,
              long_running_secs = EXCLUDED.long_running_secs, failed_cleanup_enabled = EXCLUDED.failed_cleanup_enabled,
              version = alert_configurations.version + 1, updated_at = EXCLUDED.updated_at,
              updated_by_api_key_id = EXCLUDED.updated_by_api_key_id
            RETURNING\s""" + ALERT_COLUMNS)
        .execute(Tuple.of(orgId, c.getInteger("budget_threshold_percent"), c.getInteger("repeated_failures_count"),
                c.getInteger("repeated_failures_window_minutes"), c.getBoolean("provider_degradation_enabled"),
                c.getInteger("long_running_secs")).addValue(c.getBoolean("failed_cleanup_enabled")).addValue(now)
            .addValue(keyId))
        .map(rows -> alertJson(rows.iterator().next()));
  }

  private static JsonObject alertJson(Row r) {
    return new JsonObject().put("budget_threshold_percent", r.getInteger("budget_threshold_percent"))
        .put("repeated_failures_count", r.getInteger("repeated_failures_count"))
        .put("repeated_failures_window_minutes", r.getInteger("repeated_failures_window_minutes"))
        .put("provider_degradation_enabled", r.getBoolean("provider_degradation_enabled"))
        .put("long_running_secs", r.getInteger("long_running_secs"))
        .put("failed_cleanup_enabled", r.getBoolean("failed_cleanup_enabled")).put("version", r.getInteger("version"))
        .put("updated_at", Times.iso(r.getOffsetDateTime("updated_at")))
        .put("updated_by_api_key_id", r.getString("updated_by_api_key_id"));
  }

  /** Raises an alert once per dedupe key. */
  public Future<Void> raise(String orgId, String type, String severity, String message, String resourceType,
      String resourceId, String dedupeKey, OffsetDateTime now) {
    return pool.preparedQuery("INSERT INTO alert_events (id, organization_id, alert_type, severity, message,"
            + " resource_type, resource_id, dedupe_key, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)"
            + " ON CONFLICT (organization_id, dedupe_key) DO NOTHING")
        .execute(Tuple.of(Ids.newId("alt"), orgId, type, severity, message, resourceType).addValue(resourceId)
            .addValue(dedupeKey).addValue(now))
        .mapEmpty();
  }

  public Future<Page> alertsPage(String orgId, long offset, int limit) {
    return pool.preparedQuery("SELECT id, alert_type, severity, message, resource_type, resource_id, created_at"
            + " FROM alert_events WHERE organization_id = $1 ORDER BY created_at DESC, id DESC OFFSET $2 LIMIT $3")
        .execute(Tuple.of(orgId, offset, limit + 1))
        .map(rows -> page(rows, limit, r -> new JsonObject().put("id", r.getString("id"))
            .put("alert_type", r.getString("alert_type")).put("severity", r.getString("severity"))
            .put("message", r.getString("message")).put("resource_type", r.getString("resource_type"))
            .put("resource_id", r.getString("resource_id"))
            .put("created_at", Times.iso(r.getOffsetDateTime("created_at")))));
  }

  /** Organizations that want an alert when a provider degrades. */
  public Future<List<String>> organizationsAlertedOnDegradation() {
    return pool.query("SELECT o.id FROM organizations o LEFT JOIN alert_configurations c ON c.organization_id = o.id"
            + " WHERE COALESCE(c.provider_degradation_enabled, true)")
        .execute()
        .map(rows -> {
          List<String> out = new ArrayList<>();
          rows.forEach(r -> out.add(r.getString(0)));
          return out;
        });
  }

  /** A sandbox whose termination failed (its resources may still exist), and when. */
  public record FailedTermination(String sandboxId, OffsetDateTime failedAt) {}

  /** Organizations that configured alerts. */
  public Future<List<String>> organizationsWithAlerts() {
    return pool.query("SELECT organization_id FROM alert_configurations").execute().map(rows -> {
      List<String> out = new ArrayList<>();
      rows.forEach(r -> out.add(r.getString(0)));
      return out;
    });
  }

  /** How many of the organization's sandboxes failed at or after {@code since}. */
  public Future<Long> failedSince(String orgId, OffsetDateTime since) {
    return pool.preparedQuery("SELECT count(*) FROM sandboxes WHERE organization_id = $1 AND failed_at >= $2")
        .execute(Tuple.of(orgId, since))
        .map(rows -> rows.iterator().next().getLong(0));
  }

  /** The organization's live sandboxes created at or before {@code before}. */
  public Future<List<String>> liveCreatedBefore(String orgId, OffsetDateTime before) {
    return pool.preparedQuery("SELECT id FROM sandboxes WHERE organization_id = $1 AND created_at <= $2"
            + " AND status IN ('creating', 'running', 'stopping')")
        .execute(Tuple.of(orgId, before))
        .map(rows -> {
          List<String> out = new ArrayList<>();
          rows.forEach(r -> out.add(r.getString(0)));
          return out;
        });
  }

  /** The organization's sandboxes that failed while being destroyed. */
  public Future<List<FailedTermination>> failedTerminations(String orgId) {
    return pool.preparedQuery("SELECT id, failed_at FROM sandboxes WHERE organization_id = $1 AND status = 'failed'"
            + " AND latest_error->>'op' = 'destroy'")
        .execute(Tuple.of(orgId))
        .map(rows -> {
          List<FailedTermination> out = new ArrayList<>();
          rows.forEach(r -> out.add(new FailedTermination(r.getString("id"), r.getOffsetDateTime("failed_at"))));
          return out;
        });
  }

  // ---- retention ------------------------------------------------------------------------------------

  public static final JsonObject DEFAULT_RETENTION = new JsonObject().put("operational_days", 90)
      .put("audit_days", 365).put("version", 1).putNull("updated_at").putNull("updated_by_api_key_id");

  public Future<JsonObject> retention(String orgId) {
    return pool.preparedQuery("SELECT operational_days, audit_days, version, updated_at, updated_by_api_key_id"
            + " FROM retention_policies WHERE organization_id = $1")
        .execute(Tuple.of(orgId))
        .map(rows -> rows.size() == 0 ? DEFAULT_RETENTION.copy() : retentionJson(rows.iterator().next()));
  }

  public Future<JsonObject> replaceRetention(String orgId, int operationalDays, int auditDays, String keyId,
      OffsetDateTime now) {
    return pool.preparedQuery("""
            INSERT INTO retention_policies (organization_id, operational_days, audit_days, version, updated_at,
              updated_by_api_key_id) VALUES ($1, $2, $3, 2, $4, $5)
            ON CONFLICT (organization_id) DO UPDATE SET operational_days = EXCLUDED.operational_days,
              audit_days = EXCLUDED.audit_days, version = retention_policies.version + 1,
              updated_at = EXCLUDED.updated_at, updated_by_api_key_id = EXCLUDED.updated_by_api_key_id
            RETURNING operational_days, audit_days, version, updated_at, updated_by_api_key_id""")
        .execute(Tuple.of(orgId, operationalDays, auditDays, now, keyId))
        .map(rows -> retentionJson(rows.iterator().next()));
  }

  private static JsonObject retentionJson(Row r) {
    return new JsonObject().put("operational_days", r.getInteger("operational_days"))
        .put("audit_days", r.getInteger("audit_days")).put("version", r.getInteger("version"))
        .put("updated_at", Times.iso(r.getOffsetDateTime("updated_at")))
        .put("updated_by_api_key_id", r.getString("updated_by_api_key_id"));
  }

  /**
   * Deletes the organization's alerts, policy denials and provider observations older than its operational
   * period and audit entries older than its audit period, in one transaction. Sandboxes, usage, lifecycle
   * costs and ledger rows are never deleted.
   */
  public Future<JsonObject> applyRetention(String orgId, OffsetDateTime now) {
    return retention(orgId).compose(r -> {
      OffsetDateTime operational = now.minusDays(r.getInteger("operational_days"));
      OffsetDateTime audit = now.minusDays(r.getInteger("audit_days"));
      return pool.withTransaction(conn -> conn.preparedQuery(
              "DELETE FROM alert_events WHERE organization_id = $1 AND created_at < $2").execute(Tuple.of(orgId, operational))
          .compose(a -> conn.preparedQuery("DELETE FROM policy_denials WHERE organization_id = $1 AND created_at < $2")
              .execute(Tuple.of(orgId, operational))
              .compose(d -> conn.preparedQuery(
                      "DELETE FROM provider_observations WHERE organization_id = $1 AND observed_at < $2")
                  .execute(Tuple.of(orgId, operational))
                  .compose(o -> conn.preparedQuery("DELETE FROM audit_log WHERE organization_id = $1 AND created_at < $2")
                      .execute(Tuple.of(orgId, audit))
                      .map(au -> new JsonObject().put("alerts_deleted", a.rowCount())
                          .put("denials_deleted", d.rowCount()).put("observations_deleted", o.rowCount())
                          .put("audit_deleted", au.rowCount()))))));
    });
  }

  private interface RowMapper {
    JsonObject map(Row r);
  }

  private static Page page(RowSet<Row> rows, int limit, RowMapper mapper) {
    List<JsonObject> items = new ArrayList<>();
    for (Row r : rows) {
      if (items.size() == limit) {
        break;
      }
      items.add(mapper.map(r));
    }
    return new Page(items, rows.size() > limit);
  }
}
