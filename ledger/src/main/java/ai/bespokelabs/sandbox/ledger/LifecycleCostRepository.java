package ai.bespokelabs.sandbox.ledger;

import io.vertx.core.Future;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.SqlClient;
import io.vertx.sqlclient.Tuple;
import java.math.BigDecimal;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * The lifecycle-cost tables, written set-based on the caller's connection inside its transaction: lock the
 * sandboxes with their totals (in id order), claim observation ids, then insert all ledger rows, upsert all
 * totals and set the sandboxes' cost states.
 */
final class LifecycleCostRepository {
  /** A locked sandbox: its pricing and its lifecycle totals so far (null totals: none yet). */
  record Locked(String id, String orgId, OffsetDateTime started, BigDecimal rate, String currency,
      String pricingSource, BigDecimal seconds, BigDecimal effective, BigDecimal customer, BigDecimal reported,
      String costState) {}

  /** One delta row of {@code lifecycle_ledger_entries}. */
  record Entry(String id, String orgId, String sandboxId, String observationId, BigDecimal seconds,
      BigDecimal provider, BigDecimal customer, String state, OffsetDateTime at) {}

  /** A sandbox's new totals. */
  record Total(String id, String orgId, BigDecimal seconds, BigDecimal estimate, BigDecimal reported,
      BigDecimal effective, BigDecimal customer, String currency, String pricingSource, String state,
      OffsetDateTime updatedAt) {}

  private static final String LOCK = """
      SELECT s.id, s.organization_id, COALESCE(s.provisioning_at, s.created_at) AS started, s.hourly_rate_usd,
             s.currency, s.pricing_source, c.billable_seconds, c.effective_cost_usd, c.customer_cost_usd,
             c.provider_reported_cost_usd, c.cost_state
      FROM sandboxes s LEFT JOIN lifecycle_costs c ON c.sandbox_id = s.id
      WHERE s.id = ANY($1) ORDER BY s.id FOR UPDATE OF s""";
  private static final String CLAIM = """
      INSERT INTO lifecycle_observations (sandbox_id, observation_id)
      SELECT * FROM unnest($1::text[], $2::text[]) ON CONFLICT DO NOTHING
      RETURNING sandbox_id, observation_id""";
  private static final String ENTRIES = """
      INSERT INTO lifecycle_ledger_entries (id, organization_id, sandbox_id, observation_id, billable_seconds_delta,
        provider_delta_usd, customer_delta_usd, cost_state, created_at)
      SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::numeric[], $6::numeric[],
        $7::numeric[], $8::text[], $9::timestamptz[])""";
  private static final String TOTALS = """
      INSERT INTO lifecycle_costs (sandbox_id, organization_id, billable_seconds, estimated_cost_usd,
        provider_reported_cost_usd, effective_cost_usd, customer_cost_usd, currency, pricing_source, cost_state,
        updated_at)
      SELECT id, org, secs, est, rep::numeric, eff, cust, cur, src, st, upd
      FROM unnest($1::text[], $2::text[], $3::numeric[], $4::numeric[], $5::text[], $6::numeric[],
        $7::numeric[], $8::text[], $9::text[], $10::text[], $11::timestamptz[])
        AS x(id, org, secs, est, rep, eff, cust, cur, src, st, upd)
      ON CONFLICT (sandbox_id) DO UPDATE SET billable_seconds = EXCLUDED.billable_seconds,
        estimated_cost_usd = EXCLUDED.estimated_cost_usd,
        provider_reported_cost_usd = EXCLUDED.provider_reported_cost_usd,
        effective_cost_usd = EXCLUDED.effective_cost_usd, customer_cost_usd = EXCLUDED.customer_cost_usd,
        cost_state = EXCLUDED.cost_state, updated_at = EXCLUDED.updated_at""";
  private static final String STATES = """
      UPDATE sandboxes s SET cost_state = x.state FROM unnest($1::text[], $2::text[]) AS x(id, state)
      WHERE s.id = x.id""";

  private LifecycleCostRepository() {}

  /** Locks the sandboxes among {@code ids} that exist, in id order, with their totals. */
  static Future<List<Locked>> lock(SqlClient conn, Collection<String> ids) {
    return conn.preparedQuery(LOCK).execute(Tuple.tuple().addArrayOfString(ids.toArray(String[]::new)))
        .map(rows -> {
          List<Locked> out = new ArrayList<>();
          for (Row r : rows) {
            out.add(new Locked(r.getString("id"), r.getString("organization_id"), r.getOffsetDateTime("started"),
                r.getBigDecimal("hourly_rate_usd"), r.getString("currency"), r.getString("pricing_source"),
                r.getBigDecimal("billable_seconds"), r.getBigDecimal("effective_cost_usd"),
                r.getBigDecimal("customer_cost_usd"), r.getBigDecimal("provider_reported_cost_usd"),
                r.getString("cost_state")));
          }
          return out;
        });
  }

  /** Claims observation ids (pairs at the same index); completes with the {@link #key}s claimed now. */
  static Future<Set<String>> claim(SqlClient conn, List<String> sandboxIds, List<String> observationIds) {
    return conn.preparedQuery(CLAIM)
        .execute(Tuple.tuple()
            .addArrayOfString(sandboxIds.toArray(String[]::new))
            .addArrayOfString(observationIds.toArray(String[]::new)))
        .map(claimed -> {
          Set<String> fresh = new HashSet<>();
          claimed.forEach(r -> fresh.add(key(r.getString(0), r.getString(1))));
          return fresh;
        });
  }

  static String key(String sandboxId, String observationId) {
    return sandboxId + "\n" + observationId;
  }

  /** Inserts the ledger rows, upserts the totals and sets the sandboxes' cost states. */
  static Future<Void> write(SqlClient conn, List<Entry> entries, List<Total> totals) {
    return conn.preparedQuery(ENTRIES).execute(Tuple.tuple()
            .addArrayOfString(entries.stream().map(Entry::id).toArray(String[]::new))
            .addArrayOfString(entries.stream().map(Entry::orgId).toArray(String[]::new))
            .addArrayOfString(entries.stream().map(Entry::sandboxId).toArray(String[]::new))
            .addArrayOfString(entries.stream().map(Entry::observationId).toArray(String[]::new))
            .addArrayOfBigDecimal(entries.stream().map(Entry::seconds).toArray(BigDecimal[]::new))
            .addArrayOfBigDecimal(entries.stream().map(Entry::provider).toArray(BigDecimal[]::new))
            .addArrayOfBigDecimal(entries.stream().map(Entry::customer).toArray(BigDecimal[]::new))
            .addArrayOfString(entries.stream().map(Entry::state).toArray(String[]::new))
            .addArrayOfOffsetDateTime(entries.stream().map(Entry::at).toArray(OffsetDateTime[]::new)))
        .compose(r -> conn.preparedQuery(TOTALS).execute(Tuple.tuple()
            .addArrayOfString(totals.stream().map(Total::id).toArray(String[]::new))
            .addArrayOfString(totals.stream().map(Total::orgId).toArray(String[]::new))
            .addArrayOfBigDecimal(totals.stream().map(Total::seconds).toArray(BigDecimal[]::new))
            .addArrayOfBigDecimal(totals.stream().map(Total::estimate).toArray(BigDecimal[]::new))
            // text, not numeric: the client cannot encode null elements of a numeric array
            .addArrayOfString(totals.stream().map(t -> t.reported() == null ? null : t.reported().toPlainString())
                .toArray(String[]::new))
            .addArrayOfBigDecimal(totals.stream().map(Total::effective).toArray(BigDecimal[]::new))
            .addArrayOfBigDecimal(totals.stream().map(Total::customer).toArray(BigDecimal[]::new))
            .addArrayOfString(totals.stream().map(Total::currency).toArray(String[]::new))
            .addArrayOfString(totals.stream().map(Total::pricingSource).toArray(String[]::new))
            .addArrayOfString(totals.stream().map(Total::state).toArray(String[]::new))
            .addArrayOfOffsetDateTime(totals.stream().map(Total::updatedAt).toArray(OffsetDateTime[]::new))))
        .compose(r -> conn.preparedQuery(STATES).execute(Tuple.tuple()
            .addArrayOfString(totals.stream().map(Total::id).toArray(String[]::new))
            .addArrayOfString(totals.stream().map(Total::state).toArray(String[]::new))))
        .mapEmpty();
  }
}
