package ai.bespokelabs.sandbox.core.agent;

import io.vertx.core.json.JsonObject;
import java.math.BigDecimal;

/**
 * The tokens and LLM cost an agent CLI reported for one run (or, added up, for several). {@code llmCostUsd} is the
 * CLI's own figure, never estimated here.
 */
public record AgentUsage(long inputTokens, long outputTokens, long cacheReadTokens, long cacheWriteTokens,
    BigDecimal llmCostUsd) {
  public static final AgentUsage NONE = new AgentUsage(0, 0, 0, 0, BigDecimal.ZERO);

  public AgentUsage {
    llmCostUsd = llmCostUsd == null ? BigDecimal.ZERO : llmCostUsd;
  }

  /** Every token billed for the run, cache reads and writes included (as the seed counts them). */
  public long totalTokens() {
    return inputTokens + outputTokens + cacheReadTokens + cacheWriteTokens;
  }

  public AgentUsage plus(AgentUsage other) {
    return new AgentUsage(inputTokens + other.inputTokens, outputTokens + other.outputTokens,
        cacheReadTokens + other.cacheReadTokens, cacheWriteTokens + other.cacheWriteTokens,
        llmCostUsd.add(other.llmCostUsd));
  }

  /** The token fields and {@code llm_cost_usd} as the API answers them. */
  public JsonObject toJson() {
    return new JsonObject().put("input_tokens", inputTokens).put("output_tokens", outputTokens)
        .put("cache_read_tokens", cacheReadTokens).put("cache_write_tokens", cacheWriteTokens)
        .put("total_tokens", totalTokens()).put("llm_cost_usd", llmCostUsd);
  }
}
