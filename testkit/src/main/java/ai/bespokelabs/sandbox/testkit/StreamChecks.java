package ai.bespokelabs.sandbox.testkit;

import io.vertx.core.json.JsonObject;
import java.util.List;
import java.util.ServiceLoader;

/** The {@link StreamCheck}s on the class path, loaded once, applied to each event a client hands out. */
final class StreamChecks {
  private static final List<StreamCheck> CHECKS = ServiceLoader.load(StreamCheck.class).stream()
      .map(ServiceLoader.Provider::get).toList();

  private StreamChecks() {}

  static void sse(String method, String url, SseClient.Event event) {
    for (StreamCheck c : CHECKS) {
      String violation = c.sseViolation(method, url, event);
      if (violation != null) {
        throw new AssertionError("the event does not conform to the API description: " + violation);
      }
    }
  }

  static void webSocket(String url, JsonObject message) {
    for (StreamCheck c : CHECKS) {
      String violation = c.webSocketViolation(url, message);
      if (violation != null) {
        throw new AssertionError("the frame does not conform to the API description: " + violation);
      }
    }
  }
}
