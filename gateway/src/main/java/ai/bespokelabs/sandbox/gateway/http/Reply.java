package ai.bespokelabs.sandbox.gateway.http;

import io.vertx.core.MultiMap;

/** A JSON response: status, body ({@code JsonObject}, {@code JsonArray} or {@code null}) and extra headers. */
public record Reply(int status, Object body, MultiMap headers) {

  public static Reply of(int status, Object body) {
    return new Reply(status, body, null);
  }

  public static Reply ok(Object body) {
    return new Reply(200, body, null);
  }

  /** The endpoint wrote (or upgraded) the response itself. */
  public static final Reply HANDLED = new Reply(0, null, null);

  public static Reply noContent() {
    return new Reply(204, null, null);
  }

  public Reply withHeader(String name, String value) {
    MultiMap h = headers == null ? MultiMap.caseInsensitiveMultiMap() : headers;
    h.add(name, value);
    return new Reply(status, body, h);
  }
}
