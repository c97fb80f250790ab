package ai.bespokelabs.sandbox.gateway.exec;

import ai.bespokelabs.sandbox.core.bus.Messages.ExecResult;
import io.vertx.core.json.JsonObject;
import java.math.BigDecimal;
import java.math.RoundingMode;

/** The stored and returned form of a finished execution (the seed's execute response, extended). */
public final class ExecResponses {
  private ExecResponses() {}

  /** Usage is priced at the sandbox's captured hourly rate; customer cost = provider cost × markup. */
  public static JsonObject of(String requestId, String executionId, ExecResult r, BigDecimal hourlyRate,
      BigDecimal markup) {
    BigDecimal seconds = BigDecimal.valueOf(r.durationMs(), 3);
    BigDecimal provider = hourlyRate.multiply(seconds).divide(BigDecimal.valueOf(3600), 9, RoundingMode.HALF_UP)
        .stripTrailingZeros();
    BigDecimal customer = provider.multiply(markup).stripTrailingZeros();
    return new JsonObject()
        .put("request_id", requestId)
        .put("execution_id", executionId)
        .put("status", r.status())
        .put("stdout", r.stdout())
        .put("stderr", r.stderr())
        .put("exit_code", r.exitCode())
        .put("stdout_truncated", r.stdoutTruncated())
        .put("stderr_truncated", r.stderrTruncated())
        .put("timed_out", r.timedOut())
        .put("duration_ms", r.durationMs())
        .put("last_seq", r.lastSeq())
        .put("usage", new JsonObject()
            .put("runtime_seconds", seconds.toPlainString())
            .put("provider_cost_usd", provider.toPlainString())
            .put("customer_cost_usd", customer.toPlainString()));
  }
}
