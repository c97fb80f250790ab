package ai.bespokelabs.sandbox.testkit;

import io.vertx.core.json.JsonObject;

/**
 * A check of every event {@link SseClient} and {@link WsClient} hand to their caller, e.g. against an API
 * description. Checks are found with {@link java.util.ServiceLoader} on the class path, so a test module installs
 * its own by naming it in {@code META-INF/services/ai.bespokelabs.sandbox.testkit.StreamCheck}; with none (as in
 * the benchmarks) nothing is checked. A violation fails the caller that takes the event with an
 * {@link AssertionError}.
 */
public interface StreamCheck {
  /** Why {@code event}, received in answer to {@code method url}, breaks the contract; null when it does not. */
  String sseViolation(String method, String url, SseClient.Event event);

  /** Why the text message {@code message}, received on the WebSocket {@code url}, breaks it; null when not. */
  String webSocketViolation(String url, JsonObject message);
}
