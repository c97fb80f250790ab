package ai.bespokelabs.sandbox.core.repo;

import ai.bespokelabs.sandbox.core.model.AttemptRecord;
import io.vertx.core.Future;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.Tuple;
import java.math.BigDecimal;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;

/** What happened to sandboxes on their way: creation attempts, provider observations, reconciliation counts. */
public final class SandboxHistoryRepository {
  private final Pool pool;

  public SandboxHistoryRepository(Pool pool) {
    this.pool = pool;
  }

  /** An organization's sandboxes counted by reconciliation state. */
  public record ReconciliationSummary(long total, long unreconciled, long providerReported, long reconciled,
      long missing, OffsetDateTime lastProviderObservedAt) {}

  /** One thing a provider reported about a sandbox. */
  public record Observation(String observationId, String providerResourceId, String status, OffsetDateTime observedAt,
      BigDecimal providerCostUsd, String currency, boolean missing) {}

  /** Counts of the organization's sandboxes by reconciliation state, for {@code GET /v1/reconciliation}. */
  public Future<ReconciliationSummary> reconciliationSummary(String orgId) {
    return pool.preparedQuery("""
            SELECT count(*) AS total,
                   count(*) FILTER (WHERE cost_state = 'estimated') AS unreconciled,
                   count(*) FILTER (WHERE cost_state = 'provider_reported') AS provider_reported,
                   count(*) FILTER (WHERE cost_state = 'reconciled') AS reconciled,
                   count(*) FILTER (WHERE provider_missing) AS missing,
                   max(last_provider_observed_at) AS last_provider_observed_at
            FROM sandboxes WHERE organization_id = $1""")
        .execute(Tuple.of(orgId))
        .map(rows -> {
          Row r = rows.iterator().next();
          return new ReconciliationSummary(r.getLong("total"), r.getLong("unreconciled"),
              r.getLong("provider_reported"), r.getLong("reconciled"), r.getLong("missing"),
              r.getOffsetDateTime("last_provider_observed_at"));
        });
  }

  /** What providers reported about the sandbox, newest first (at most 200). */
  public Future<List<Observation>> observations(String sandboxId) {
    return pool.preparedQuery("SELECT observation_id, provider_resource_id, status, observed_at, provider_cost_usd,"
            + " currency, missing FROM provider_observations WHERE sandbox_id = $1 ORDER BY observed_at DESC LIMIT 200")
        .execute(Tuple.of(sandboxId))
        .map(rows -> {
          List<Observation> out = new ArrayList<>();
          for (Row r : rows) {
            out.add(new Observation(r.getString("observation_id"), r.getString("provider_resource_id"),
                r.getString("status"), r.getOffsetDateTime("observed_at"), r.getBigDecimal("provider_cost_usd"),
                r.getString("currency"), r.getBoolean("missing")));
          }
          return out;
        });
  }

  /** The sandbox's creation attempts, in order. */
  public Future<List<AttemptRecord>> attempts(String sandboxId) {
    return pool.preparedQuery("SELECT " + AttemptRecord.COLUMNS
            + " FROM sandbox_creation_attempts WHERE sandbox_id = $1 ORDER BY attempt_number")
        .execute(Tuple.of(sandboxId))
        .map(rows -> {
          List<AttemptRecord> out = new ArrayList<>();
          rows.forEach(r -> out.add(AttemptRecord.from(r)));
          return out;
        });
  }
}
