package ai.bespokelabs.sandbox.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.gateway.TestGateway.Resp;
import io.vertx.core.json.JsonObject;
import java.util.Map;
import java.util.function.Supplier;

/**
 * The provider payload of the error contract as a client receives it ({@code reference/hosted-api.md}, section
 * 3): the status, and a {@code detail} of exactly {@code message, code, backend, op, retryable, outcome,
 * context}, the message fixed by the code. Written from the contract, not from the gateway's own tables, so a
 * backend's gateway test checks one against the other.
 */
final class ProviderFailures {
  /** The fixed public message of each code; any other code's is {@link #OTHER}. */
  static final Map<String, String> MESSAGES = Map.of(
      "authentication", "Provider authentication failed.",
      "backend_not_installed", "Provider backend is unavailable.",
      "configuration", "Provider configuration is invalid.",
      "connection", "Provider connection failed.",
      "creation_failed", "Provider sandbox creation failed.",
      "execution_failed", "Provider execution failed.",
      "not_found", "Provider resource was not found.",
      "timeout", "Provider request timed out.");
  static final String OTHER = "Provider operation failed.";

  /**
   * A provider's request timeout in the backend tests, in seconds: short, so a slow answer costs a test
   * little, and still far above what the simulators take.
   */
  static final int REQUEST_TIMEOUT_SECS = 3;
  /** A slow answer: well past {@link #REQUEST_TIMEOUT_SECS} and the second of grace the adapters add. */
  static final long SLOW_ANSWER_MS = REQUEST_TIMEOUT_SECS * 1000L + 3_000;

  private ProviderFailures() {}

  /** The payload the contract gives for these fields. */
  static JsonObject payload(String code, String backend, String op, boolean retryable, String outcome,
      JsonObject context) {
    return new JsonObject().put("message", MESSAGES.getOrDefault(code, OTHER)).put("code", code)
        .put("backend", backend).put("op", op).put("retryable", retryable).put("outcome", outcome)
        .put("context", context);
  }

  /** The contract's HTTP status of a provider failure with {@code code}. */
  static int status(String code) {
    return switch (code) {
      case "timeout" -> 504;
      case "backend_not_installed", "configuration" -> 422;
      default -> 502;
    };
  }

  /** {@code r} is exactly {@code expected} at the status its code has. */
  static void assertFailure(Resp r, JsonObject expected) {
    assertThat(r.status()).as(r.body()).isEqualTo(status(expected.getString("code")));
    assertThat(r.json().fieldNames()).as(r.body()).containsExactly("detail");
    assertThat(r.json().getJsonObject("detail")).as(r.body()).isEqualTo(expected);
  }

  /** The detail of {@code r}, which has the status of its code and exactly the contract's keys. */
  static JsonObject detail(Resp r) {
    JsonObject detail = r.json().getJsonObject("detail");
    assertThat(detail).as(r.body()).isNotNull();
    assertThat(detail.fieldNames()).as(r.body()).containsExactlyInAnyOrder("message", "code", "backend", "op",
        "retryable", "outcome", "context");
    assertThat(r.status()).as(r.body()).isEqualTo(status(detail.getString("code")));
    assertThat(detail.getString("message")).isEqualTo(MESSAGES.getOrDefault(detail.getString("code"), OTHER));
    return detail;
  }

  /**
   * A retryable failure carrying the provider's wait hint of {@code secs} seconds both ways the context gives
   * it: {@code retry_after_ms} and {@code retry_after_secs}.
   */
  static JsonObject assertWaitHint(Resp r, String backend, long secs) {
    JsonObject detail = detail(r);
    assertThat(detail.getString("backend")).isEqualTo(backend);
    assertThat(detail.getBoolean("retryable")).as(r.body()).isTrue();
    assertThat(detail.getJsonObject("context").getLong("retry_after_ms")).as(r.body()).isEqualTo(secs * 1000);
    assertThat(detail.getJsonObject("context").getLong("retry_after_secs")).as(r.body()).isEqualTo(secs);
    return detail;
  }

  /**
   * The call, made while the provider answers {@link #SLOW_ANSWER_MS} late, is answered with {@code expected}
   * (a {@code timeout}) at the gateway's own deadline, before the provider's answer came.
   */
  static void assertTimesOut(Supplier<Resp> call, JsonObject expected) {
    long t0 = System.nanoTime();
    Resp r = call.get();
    long tookMs = (System.nanoTime() - t0) / 1_000_000;
    assertFailure(r, expected);
    assertThat(tookMs).as("answered at the request timeout, not after the slow answer")
        .isGreaterThanOrEqualTo(REQUEST_TIMEOUT_SECS * 1000L - 100).isLessThan(SLOW_ANSWER_MS);
  }
}
