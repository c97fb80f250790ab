package ai.bespokelabs.sandbox.client;

import com.fasterxml.jackson.databind.JsonNode;

/** A create or deadline refused by the organization's policy (403 {@code policy_denied}, never retryable). */
public class PolicyDeniedException extends SandboxException {
  private static final long serialVersionUID = 1L;

  private final String policy;
  private final String current;
  private final String limit;

  PolicyDeniedException(int status, JsonNode detail) {
    super(status, detail.path("message").asText(), "policy_denied", false, detail);
    this.policy = detail.path("policy").asText(null);
    this.current = detail.path("current").isNull() ? null : detail.path("current").asText(null);
    this.limit = detail.path("limit").asText(null);
  }

  /** Which guardrail refused: {@code max_concurrent_sandboxes}, {@code allowed_backends}, ... */
  public String policy() {
    return policy;
  }

  /** The value that was refused, as text (null when there is none). */
  public String current() {
    return current;
  }

  /** The policy's limit, as text. */
  public String limit() {
    return limit;
  }
}
