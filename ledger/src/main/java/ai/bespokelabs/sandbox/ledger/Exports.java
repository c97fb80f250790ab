package ai.bespokelabs.sandbox.ledger;

import ai.bespokelabs.sandbox.core.Times;
import io.vertx.core.Future;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.Tuple;
import java.math.BigDecimal;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * CSV exports of usage, lifecycle costs and the ledger, one page at a time (offset pages fetched with one
 * extra row to tell whether more follow). Every page repeats the header; text cells that a spreadsheet would
 * run as a formula are neutralized with a leading quote, numeric columns keep their sign.
 */
public final class Exports {
  /** One page: CSV text and whether another page follows. */
  public record Page(String csv, boolean more) {}

  private record Kind(List<String> columns, String sql) {}

  private static final Set<String> NUMERIC = Set.of("quantity", "provider_cost_usd", "customer_cost_usd",
      "billable_seconds", "estimated_cost_usd", "provider_reported_cost_usd", "effective_cost_usd", "runtime_seconds",
      "provider_delta_usd", "customer_delta_usd", "exit_code", "input_tokens", "output_tokens", "cache_read_tokens",
      "cache_write_tokens", "llm_cost_usd", "compute_seconds", "compute_cost_usd");

  private static final Map<String, Kind> KINDS = Map.of(
      "agent_runs", new Kind(List.of("id", "sandbox_id", "execution_id", "agent", "session_id", "exit_code",
          "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "llm_cost_usd",
          "compute_seconds", "compute_cost_usd", "created_at"), """
          SELECT id, sandbox_id, execution_id, agent, session_id, exit_code, input_tokens, output_tokens,
                 cache_read_tokens, cache_write_tokens, llm_cost_usd, compute_seconds, compute_cost_usd, created_at
          FROM agent_runs WHERE organization_id = $1 ORDER BY created_at, id OFFSET $2 LIMIT $3"""),
      "usage", new Kind(List.of("id", "sandbox_id", "request_id", "metric", "quantity", "unit", "provider_cost_usd",
          "customer_cost_usd", "created_at"), """
          SELECT id, sandbox_id, request_id, metric, quantity, unit, provider_cost_usd, customer_cost_usd, created_at
          FROM usage_events WHERE organization_id = $1 ORDER BY created_at, id OFFSET $2 LIMIT $3"""),
      "costs", new Kind(List.of("sandbox_id", "backend", "billable_seconds", "estimated_cost_usd",
          "provider_reported_cost_usd", "effective_cost_usd", "customer_cost_usd", "currency", "pricing_source",
          "cost_state", "updated_at"), """
          SELECT c.sandbox_id, s.backend, c.billable_seconds, c.estimated_cost_usd, c.provider_reported_cost_usd,
                 c.effective_cost_usd, c.customer_cost_usd, c.currency, c.pricing_source, c.cost_state, c.updated_at
          FROM lifecycle_costs c JOIN sandboxes s ON s.id = c.sandbox_id
          WHERE c.organization_id = $1 ORDER BY c.updated_at, c.sandbox_id OFFSET $2 LIMIT $3"""),
      "ledger", new Kind(List.of("id", "sandbox_id", "kind", "reference_id", "runtime_seconds", "provider_delta_usd",
          "customer_delta_usd", "cost_state", "created_at"), """
          SELECT * FROM (
            SELECT id, sandbox_id, kind, usage_event_id AS reference_id, 0::numeric AS runtime_seconds,
                   CASE WHEN kind = 'provider_cost' THEN amount_usd ELSE 0 END AS provider_delta_usd,
                   CASE WHEN kind = 'customer_cost' THEN amount_usd ELSE 0 END AS customer_delta_usd,
                   'execution' AS cost_state, created_at
            FROM ledger_entries WHERE organization_id = $1
            UNION ALL
            SELECT id, sandbox_id, 'lifecycle', observation_id, billable_seconds_delta, provider_delta_usd,
                   customer_delta_usd, cost_state, created_at
            FROM lifecycle_ledger_entries WHERE organization_id = $1) x
          ORDER BY created_at, id OFFSET $2 LIMIT $3"""));

  private final Pool pool;

  public Exports(Pool pool) {
    this.pool = pool;
  }

  public static boolean isKind(String kind) {
    return KINDS.containsKey(kind);
  }

  public Future<Page> page(String orgId, String kind, long offset, int limit) {
    Kind k = KINDS.get(kind);
    return pool.preparedQuery(k.sql()).execute(Tuple.of(orgId, offset, limit + 1)).map(rows -> {
      StringBuilder csv = new StringBuilder();
      line(csv, k.columns(), false, k.columns());
      int n = 0;
      for (Row r : rows) {
        if (n++ == limit) {
          break;
        }
        List<String> cells = new ArrayList<>(k.columns().size());
        for (String c : k.columns()) {
          cells.add(cell(r.getValue(c)));
        }
        line(csv, cells, true, k.columns());
      }
      return new Page(csv.toString(), rows.size() > limit);
    });
  }

  private static String cell(Object v) {
    if (v == null) {
      return "";
    }
    if (v instanceof OffsetDateTime t) {
      return Times.iso(t);
    }
    if (v instanceof BigDecimal d) {
      return CostLedger.plain(d);
    }
    if (v instanceof io.vertx.sqlclient.data.Numeric n) {
      return CostLedger.plain(n.bigDecimalValue());
    }
    return String.valueOf(v);
  }

  private static void line(StringBuilder out, List<String> cells, boolean data, List<String> columns) {
    for (int i = 0; i < cells.size(); i++) {
      if (i > 0) {
        out.append(',');
      }
      String c = cells.get(i);
      if (data && !NUMERIC.contains(columns.get(i))) {
        c = neutralize(c);
      }
      out.append(quote(c));
    }
    out.append("\r\n");
  }

  /** A text cell a spreadsheet would evaluate gets a leading {@code '}. */
  static String neutralize(String c) {
    if (!c.isEmpty() && "=+-@\t\r\n".indexOf(c.charAt(0)) >= 0) {
      return "'" + c;
    }
    return c;
  }

  static String quote(String c) {
    if (c.indexOf(',') >= 0 || c.indexOf('"') >= 0 || c.indexOf('\n') >= 0 || c.indexOf('\r') >= 0) {
      return '"' + c.replace("\"", "\"\"") + '"';
    }
    return c;
  }
}
