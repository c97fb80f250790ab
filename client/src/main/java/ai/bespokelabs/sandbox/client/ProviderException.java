package ai.bespokelabs.sandbox.client;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.Map;

/**
 * A provider failure: the payload {@code {message, code, backend, op, retryable, outcome, context}} of the
 * error contract (502, 504 for timeouts, 422 for configuration).
 */
public class ProviderException extends SandboxException {
  private static final long serialVersionUID = 1L;

  private final String backend;
  private final String op;
  private final String outcome;
  private final transient Map<String, Object> context;

  ProviderException(int status, JsonNode detail) {
    super(status, detail.path("message").asText(), detail.path("code").asText(null),
        detail.path("retryable").asBoolean(false), detail);
    this.backend = detail.path("backend").asText(null);
    this.op = detail.path("op").asText(null);
    this.outcome = detail.path("outcome").asText(null);
    this.context = map(detail.path("context"));
  }

  /** The backend that failed ({@code docker}, {@code e2b}, ...). */
  public String backend() {
    return backend;
  }

  /** The operation that failed ({@code create}, {@code execute}, ...). */
  public String op() {
    return op;
  }

  /** {@code failed} (nothing happened) or {@code unknown} (it may have happened). */
  public String outcome() {
    return outcome;
  }

  /** The allow-listed context: {@code cleanup_status}, {@code provider_status}, {@code retry_after_ms}, ... */
  public Map<String, Object> context() {
    return context;
  }

  @Override
  public long retryAfterMs() {
    Object ms = context.get("retry_after_ms");
    if (ms instanceof Number n) {
      return n.longValue();
    }
    Object secs = context.get("retry_after_secs");
    return secs instanceof Number n ? n.longValue() * 1000 : -1;
  }
}
