package ai.bespokelabs.sandbox.ledger;

import io.vertx.core.Future;
import io.vertx.sqlclient.SqlClient;
import io.vertx.sqlclient.Tuple;
import java.math.BigDecimal;
import java.util.List;

/**
 * Per-execution usage: a {@code runtime_seconds} usage event priced at the sandbox's captured rate, with its
 * provider and customer ledger entries, written once per execution (unique per request id), for a whole
 * batch in one statement. Cost summaries count these only for sandboxes without a lifecycle cost, so nothing
 * is counted twice.
 */
public final class UsageMeter {
  private static final String METER = """
      WITH u AS (
        INSERT INTO usage_events (id, organization_id, sandbox_id, execution_id, request_id, metric, quantity, unit,
          provider_cost_usd, customer_cost_usd, created_at)
        SELECT 'use_' || md5(e.id), e.organization_id, e.sandbox_id, e.id, e.request_id, 'runtime_seconds',
               COALESCE(e.duration_ms, 0) / 1000.0, 'second',
               s.hourly_rate_usd * COALESCE(e.duration_ms, 0) / 3600000.0,
               s.hourly_rate_usd * COALESCE(e.duration_ms, 0) / 3600000.0 * $2,
               COALESCE(e.completed_at, e.created_at)
        FROM executions e JOIN sandboxes s ON s.id = e.sandbox_id
        WHERE e.id = ANY($1) AND e.status <> 'running'
        ON CONFLICT DO NOTHING
        RETURNING id, organization_id, sandbox_id, provider_cost_usd, customer_cost_usd, created_at)
      INSERT INTO ledger_entries (id, organization_id, sandbox_id, usage_event_id, kind, amount_usd, price_version,
        created_at)
      SELECT 'led_' || md5(u.id || k.kind), u.organization_id, u.sandbox_id, u.id, k.kind,
             CASE WHEN k.kind = 'provider_cost' THEN u.provider_cost_usd ELSE u.customer_cost_usd END,
             s.pricing_source, u.created_at
      FROM u JOIN sandboxes s ON s.id = u.sandbox_id
      CROSS JOIN (VALUES ('provider_cost'), ('customer_cost')) AS k(kind)""";

  private final BigDecimal markup;

  public UsageMeter(BigDecimal markup) {
    this.markup = markup;
  }

  /** Meters finished executions; replays write nothing. */
  public Future<Void> meter(SqlClient conn, List<String> executionIds) {
    if (executionIds.isEmpty()) {
      return Future.succeededFuture();
    }
    return conn.preparedQuery(METER).execute(Tuple.tuple()
        .addArrayOfString(executionIds.toArray(String[]::new)).addBigDecimal(markup)).mapEmpty();
  }
}
