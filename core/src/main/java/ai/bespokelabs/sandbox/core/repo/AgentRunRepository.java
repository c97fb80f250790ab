package ai.bespokelabs.sandbox.core.repo;

import ai.bespokelabs.sandbox.core.agent.AgentUsage;
import io.vertx.core.Future;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.Tuple;
import java.math.BigDecimal;
import java.time.OffsetDateTime;
import java.util.Optional;

/** Agent runs: each one's reported usage and costs, a sandbox's last session per agent, and its totals. */
public final class AgentRunRepository {
  /** One finished run as stored. */
  public record Run(String id, String organizationId, String sandboxId, String executionId, String agent,
      String sessionId, Integer exitCode, String error, AgentUsage usage, BigDecimal computeSeconds,
      BigDecimal computeCostUsd, long durationMs, OffsetDateTime createdAt) {}

  /** A sandbox's totals over its agent runs. */
  public record Totals(long runs, AgentUsage usage, BigDecimal computeSeconds, BigDecimal computeCostUsd) {}

  private final Pool pool;

  public AgentRunRepository(Pool pool) {
    this.pool = pool;
  }

  /** Records a run once: a second insert of the same id changes nothing. */
  public Future<Void> insert(Run r) {
    AgentUsage u = r.usage();
    return pool.preparedQuery("INSERT INTO agent_runs (id, organization_id, sandbox_id, execution_id, agent,"
            + " session_id, exit_code, error, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens,"
            + " llm_cost_usd, compute_seconds, compute_cost_usd, duration_ms, created_at) VALUES ($1, $2, $3, $4,"
            + " $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17) ON CONFLICT (id) DO NOTHING")
        .execute(Tuple.from(new Object[] {r.id(), r.organizationId(), r.sandboxId(), r.executionId(), r.agent(),
            r.sessionId(), r.exitCode(), r.error(), u.inputTokens(), u.outputTokens(), u.cacheReadTokens(),
            u.cacheWriteTokens(), u.llmCostUsd(), r.computeSeconds(), r.computeCostUsd(), r.durationMs(),
            r.createdAt()}))
        .mapEmpty();
  }

  /** The session of the sandbox's latest run of {@code agent} that named one. */
  public Future<Optional<String>> lastSession(String organizationId, String sandboxId, String agent) {
    return pool.preparedQuery("SELECT session_id FROM agent_runs WHERE organization_id = $1 AND sandbox_id = $2"
            + " AND agent = $3 AND session_id IS NOT NULL ORDER BY created_at DESC, id DESC LIMIT 1")
        .execute(Tuple.of(organizationId, sandboxId, agent))
        .map(rows -> rows.size() == 0 ? Optional.empty() : Optional.of(rows.iterator().next().getString(0)));
  }

  public Future<Totals> totals(String organizationId, String sandboxId) {
    return pool.preparedQuery("SELECT count(*), COALESCE(sum(input_tokens), 0), COALESCE(sum(output_tokens), 0),"
            + " COALESCE(sum(cache_read_tokens), 0), COALESCE(sum(cache_write_tokens), 0),"
            + " COALESCE(sum(llm_cost_usd), 0), COALESCE(sum(compute_seconds), 0), COALESCE(sum(compute_cost_usd), 0)"
            + " FROM agent_runs WHERE organization_id = $1 AND sandbox_id = $2")
        .execute(Tuple.of(organizationId, sandboxId)).map(rows -> {
          Row r = rows.iterator().next();
          return new Totals(r.getLong(0), new AgentUsage(r.getLong(1), r.getLong(2), r.getLong(3), r.getLong(4),
              r.getBigDecimal(5)), r.getBigDecimal(6), r.getBigDecimal(7));
        });
  }
}
