package ai.bespokelabs.sandbox.gateway;

import ai.bespokelabs.sandbox.testkit.SseClient;
import ai.bespokelabs.sandbox.testkit.StreamCheck;
import io.vertx.core.json.JsonObject;

/**
 * {@link ContractCheck} for the events the testkit's SSE and WebSocket clients receive; installed for every test
 * of this module through {@code META-INF/services/ai.bespokelabs.sandbox.testkit.StreamCheck}.
 */
public final class StreamContractCheck implements StreamCheck {
  @Override
  public String sseViolation(String method, String url, SseClient.Event event) {
    return ContractCheck.sseViolation(method, url, event.name(), event.id(), event.data());
  }

  @Override
  public String webSocketViolation(String url, JsonObject message) {
    return ContractCheck.webSocketViolation(url, message);
  }
}
