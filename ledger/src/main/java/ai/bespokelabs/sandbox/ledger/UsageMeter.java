package ai.bespokelabs.sandbox.ledger;

import ai.bespokelabs.sandbox.core.Ids;
import io.vertx.core.Future;
import io.vertx.sqlclient.SqlClient;
import io.vertx.sqlclient.Tuple;
import java.math.BigDecimal;
import java.time.OffsetDateTime;

/**
 * Per-execution usage: a {@code runtime_seconds} usage event priced at the sandbox's captured rate, with its
 * provider and customer ledger entries, written once per execution (unique per request id). Cost summaries
 * count these only for sandboxes without a lifecycle cost, so nothing is counted twice.
 */
public final class UsageMeter {
  private static final String METER = """
      WITH u AS (
        INSERT INTO usage_events (id, organization_id, sandbox_id, execution_id, request_id, metric, quantity, unit,
          provider_cost_usd, customer_cost_usd, created_at)
        SELECT $2, e.organization_id, e.sandbox_id, e.id, e.request_id, 'runtime_seconds',
               COALESCE(e.duration_ms, 0) / 1000.0, 'second',
               s.hourly_rate_usd * COALESCE(e.duration_ms, 0) / 3600000.0,
               s.hourly_rate_usd * COALESCE(e.duration_ms, 0) / 3600000.0 * $3,
               COALESCE(e.completed_at, $4)
        FROM executions e JOIN sandboxes s ON s.id = e.sandbox_id
        WHERE e.id = $1 AND e.status <> 'running'
        ON CONFLICT DO NOTHING
        RETURNING id, organization_id, sandbox_id, provider_cost_usd, customer_cost_usd, created_at),
      v AS (SELECT s.pricing_source FROM sandboxes s JOIN u ON u.sandbox_id = s.id)
      INSERT INTO ledger_entries (id, organization_id, sandbox_id, usage_event_id, kind, amount_usd, price_version,
        created_at)
      SELECT $5, u.organization_id, u.sandbox_id, u.id, 'provider_cost', u.provider_cost_usd, v.pricing_source,
             u.created_at FROM u, v
      UNION ALL
      SELECT $6, u.organization_id, u.sandbox_id, u.id, 'customer_cost', u.customer_cost_usd, v.pricing_source,
             u.created_at FROM u, v""";

  private final BigDecimal markup;

  public UsageMeter(BigDecimal markup) {
    this.markup = markup;
  }

  /** Meters one finished execution; a replay writes nothing. */
  public Future<Void> meter(SqlClient conn, String executionId, OffsetDateTime at) {
    return conn.preparedQuery(METER)
        .execute(Tuple.of(executionId, Ids.newId("use"), markup, at, Ids.newId("led"), Ids.newId("led")))
        .mapEmpty();
  }
}
