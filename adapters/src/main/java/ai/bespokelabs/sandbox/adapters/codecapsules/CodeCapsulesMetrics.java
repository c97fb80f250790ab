package ai.bespokelabs.sandbox.adapters.codecapsules;

import ai.bespokelabs.sandbox.adapters.spi.Metrics;
import ai.bespokelabs.sandbox.core.bus.Messages.MetricsRequest;
import ai.bespokelabs.sandbox.core.bus.Messages.SandboxMetrics;
import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError.Outcome;
import io.vertx.core.Future;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;

/**
 * {@code GET /sandboxes/{id}/metrics}: CodeCapsules' CPU percentage, memory and disk used and their limits in
 * MB, as reported. It does not count processes (null).
 */
final class CodeCapsulesMetrics implements Metrics {
  private final CodeCapsulesClient client;

  CodeCapsulesMetrics(CodeCapsulesClient client) {
    this.client = client;
  }

  @Override
  public Future<SandboxMetrics> sample(MetricsRequest request) {
    String id = request.providerResourceId();
    if (id == null || id.isBlank()) {
      return Future.failedFuture(CodeCapsulesClient.of(ErrorCode.NOT_FOUND, "metrics", false, Outcome.FAILED));
    }
    return client.call(HttpMethod.GET, CodeCapsulesWire.metrics(id), null, "metrics", 200).map(r -> {
      JsonObject m = CodeCapsulesClient.json(r, "metrics");
      return new SandboxMetrics(number(m, CodeCapsulesWire.CPU_PERCENT), number(m, CodeCapsulesWire.MEMORY_USED_MB),
          number(m, CodeCapsulesWire.MEMORY_LIMIT_MB), number(m, CodeCapsulesWire.DISK_USED_MB),
          number(m, CodeCapsulesWire.DISK_LIMIT_MB), null);
    });
  }

  /** A non-negative number field, or null. */
  private static Double number(JsonObject j, String key) {
    return j.getValue(key) instanceof Number n && n.doubleValue() >= 0 ? n.doubleValue() : null;
  }
}
