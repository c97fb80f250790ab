package ai.bespokelabs.sandbox.adapters.sim;

import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.json.JsonObject;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

/**
 * Faults a simulator injects into the requests it receives, for tests of the error contract. Each rule
 * matches a method and a path prefix and fires a number of times, oldest rule first; a simulator asks
 * {@link #take} once per request and honours what it gets:
 *
 * <ul>
 *   <li>{@link Kind#STATUS}: answer with the status, headers and JSON body instead of handling the request;
 *   <li>{@link Kind#DELAY}: wait, then handle the request normally (a slow provider);
 *   <li>{@link Kind#DROP}: close the connection without handling the request;
 *   <li>{@link Kind#LOSE_RESPONSE}: handle the request (its effects happen), then close the connection
 *       instead of answering;
 *   <li>{@link Kind#DROP_STREAM}: answer a streaming request, then close the connection after
 *       {@code frames} messages.
 * </ul>
 */
public final class Faults {
  public enum Kind { STATUS, DELAY, DROP, LOSE_RESPONSE, DROP_STREAM }

  /** One rule; {@code method} null matches any method. */
  public record Fault(HttpMethod method, String pathPrefix, Kind kind, int status, Map<String, String> headers,
      JsonObject body, long delayMs, int frames) {}

  private final List<Fault> rules = new ArrayList<>();
  private final List<Integer> remaining = new ArrayList<>();

  /** Answers the next {@code times} matching requests with {@code status}, {@code headers} and {@code body}. */
  public Faults status(HttpMethod method, String pathPrefix, int status, Map<String, String> headers,
      JsonObject body, int times) {
    return add(new Fault(method, pathPrefix, Kind.STATUS, status, headers, body, 0, 0), times);
  }

  public Faults delay(HttpMethod method, String pathPrefix, long delayMs, int times) {
    return add(new Fault(method, pathPrefix, Kind.DELAY, 0, Map.of(), null, delayMs, 0), times);
  }

  public Faults drop(HttpMethod method, String pathPrefix, int times) {
    return add(new Fault(method, pathPrefix, Kind.DROP, 0, Map.of(), null, 0, 0), times);
  }

  public Faults loseResponse(HttpMethod method, String pathPrefix, int times) {
    return add(new Fault(method, pathPrefix, Kind.LOSE_RESPONSE, 0, Map.of(), null, 0, 0), times);
  }

  public Faults dropStream(String pathPrefix, int frames, int times) {
    return add(new Fault(HttpMethod.POST, pathPrefix, Kind.DROP_STREAM, 0, Map.of(), null, 0, frames), times);
  }

  /** As {@link #dropStream(String, int, int)}, for streams opened with {@code method} (a WebSocket: GET). */
  public Faults dropStream(HttpMethod method, String pathPrefix, int frames, int times) {
    return add(new Fault(method, pathPrefix, Kind.DROP_STREAM, 0, Map.of(), null, 0, frames), times);
  }

  private synchronized Faults add(Fault f, int times) {
    rules.add(f);
    remaining.add(times);
    return this;
  }

  /** The fault for this request, used up by one; null when none applies. */
  public synchronized Fault take(HttpServerRequest req) {
    Iterator<Fault> it = rules.iterator();
    for (int i = 0; it.hasNext(); i++) {
      Fault f = it.next();
      if ((f.method() == null || f.method().equals(req.method())) && req.path().startsWith(f.pathPrefix())) {
        int left = remaining.get(i) - 1;
        if (left <= 0) {
          it.remove();
          remaining.remove(i);
        } else {
          remaining.set(i, left);
        }
        return f;
      }
    }
    return null;
  }

  /** Forgets every rule not fired yet. */
  public synchronized void clear() {
    rules.clear();
    remaining.clear();
  }
}
