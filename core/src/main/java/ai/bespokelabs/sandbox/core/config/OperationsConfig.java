package ai.bespokelabs.sandbox.core.config;

import ai.bespokelabs.sandbox.core.Secret;
import java.util.Optional;

/**
 * What operators scrape and read ({@code operations} in {@code conf/gateway.json}).
 *
 * @param metricsPort serve {@code /metrics} on this port only, not the API's ({@code BESPOKE_METRICS_PORT})
 * @param metricsToken bearer token {@code /metrics} requires when set ({@code BESPOKE_METRICS_TOKEN})
 * @param logFormat {@code text} or {@code json} lines on standard output ({@code BESPOKE_LOG_FORMAT})
 */
public record OperationsConfig(Optional<Integer> metricsPort, Optional<Secret> metricsToken, String logFormat) {
  public boolean jsonLogs() {
    return "json".equals(logFormat);
  }
}
