package ai.bespokelabs.sandbox.core.bus;

import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.error.ProviderError;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.List;
import java.util.Map;

/**
 * A failure answered across the event bus: either a provider error of the wire contract
 * ({@code providerError}, with its HTTP status) or a client-facing error ({@code status} and the
 * {@code detail} of the {@code {"detail": ...}} body: a string, a JSON object or a JSON array).
 */
public record BusFailure(int status, Object detail, ProviderError providerError) {

  public BusFailure {
    if (detail instanceof Map<?, ?> m) {
      detail = new JsonObject(castMap(m));
    } else if (detail instanceof List<?> l) {
      detail = new JsonArray(l);
    }
  }

  /** The failure a client should see for {@code e}. */
  public static BusFailure of(ApiException e) {
    return new BusFailure(e.status(), e.detail(), null);
  }

  /** A provider error. */
  public static BusFailure of(ProviderError e) {
    return new BusFailure(e.httpStatus(), null, e);
  }

  /** The exception the sender sees: a {@link ProviderException} or an {@link ApiException}. */
  public RuntimeException toException() {
    return providerError != null ? new ProviderException(providerError) : new ApiException(status, detail);
  }

  /** A short text for logs: never provider text, never more than the client sees. */
  String summary() {
    return toException().getMessage();
  }

  @SuppressWarnings("unchecked")
  private static Map<String, Object> castMap(Map<?, ?> m) {
    return (Map<String, Object>) m;
  }
}
