package ai.bespokelabs.sandbox.client;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.Map;

/**
 * An error answer of the gateway ({@code {"detail": ...}}), with its HTTP status. A plain message detail (401,
 * 403, 404, 409, 422) gives this class with {@link #code()} null; a provider failure gives
 * {@link ProviderException}, a policy refusal {@link PolicyDeniedException}, and a FastAPI-style validation
 * list this class with the list as {@link #detail()} (and its messages joined as the message). An {@code error}
 * event that ends a stream gives this class with status 0.
 */
public class SandboxException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final int status;
  private final String code;
  private final boolean retryable;
  private final transient JsonNode detail;

  public SandboxException(int status, String message, String code, boolean retryable, JsonNode detail) {
    super(message);
    this.status = status;
    this.code = code;
    this.retryable = retryable;
    this.detail = detail;
  }

  /** The HTTP status of the answer (0 for an error event of a stream). */
  public int status() {
    return status;
  }

  /** The contract's error code ({@code timeout}, {@code policy_denied}, ...), or null for a plain message. */
  public String code() {
    return code;
  }

  /** Whether the same request may succeed when repeated (only provider errors say so). */
  public boolean retryable() {
    return retryable;
  }

  /** The {@code detail} member as the gateway sent it. */
  public JsonNode detail() {
    return detail;
  }

  /** The provider's wait hint in milliseconds, or -1 when the error gives none. */
  public long retryAfterMs() {
    return -1;
  }

  /** The error an answer with this status and body stands for. */
  static SandboxException of(int status, byte[] body) {
    JsonNode detail;
    try {
      detail = Json.tree(body).path("detail");
    } catch (RuntimeException e) {
      detail = null;
    }
    if (detail == null || detail.isMissingNode() || detail.isNull()) {
      String text = new String(body, java.nio.charset.StandardCharsets.UTF_8).strip();
      return new SandboxException(status, text.isEmpty() ? "HTTP " + status : text, null, false, null);
    }
    if (detail.isTextual()) {
      return new SandboxException(status, detail.asText(), null, false, detail);
    }
    if (detail.isArray()) {
      StringBuilder m = new StringBuilder();
      for (JsonNode e : detail) {
        m.append(m.isEmpty() ? "" : "; ").append(e.path("msg").asText(e.toString()));
        if (e.path("loc").isArray()) {
          m.append(" (").append(e.path("loc").toString()).append(')');
        }
      }
      return new SandboxException(status, m.toString(), null, false, detail);
    }
    if ("policy_denied".equals(detail.path("code").asText())) {
      return new PolicyDeniedException(status, detail);
    }
    if (detail.has("backend") || detail.has("op")) {
      return new ProviderException(status, detail);
    }
    return new SandboxException(status, detail.path("message").asText(detail.toString()),
        detail.path("code").asText(null), detail.path("retryable").asBoolean(false), detail);
  }

  static Map<String, Object> map(JsonNode node) {
    if (node == null || !node.isObject()) {
      return Map.of();
    }
    @SuppressWarnings("unchecked")
    Map<String, Object> m = Json.MAPPER.convertValue(node, Map.class);
    return Map.copyOf(m);
  }
}
