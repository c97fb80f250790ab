package ai.bespokelabs.sandbox.core.bus;

import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import io.vertx.core.eventbus.Message;
import io.vertx.core.eventbus.ReplyException;
import io.vertx.core.eventbus.ReplyFailure;
import io.vertx.core.json.Json;
import io.vertx.core.json.JsonObject;

/**
 * How failures cross the event bus: {@code failureCode} is the HTTP status and the message is the JSON
 * {@code detail}. A provider payload is marked so the receiving side can tell it from a plain detail.
 */
public final class BusFailures {
  private static final String PROVIDER_MARK = "{\"provider_error\":";

  private BusFailures() {}

  /** Fails {@code msg} with the contract form of {@code t}; anything unexpected becomes a normalized error. */
  public static void fail(Message<?> msg, Throwable t, String backend, String op) {
    if (t instanceof ApiException api) {
      msg.fail(api.status(), Json.encode(api.detail()));
    } else {
      ProviderError e = t instanceof ProviderException pe ? pe.error() : normalize(backend, op);
      msg.fail(e.httpStatus(), new JsonObject().put("provider_error", e.toJson()).encode());
    }
  }

  /** A non-contract failure: creation_failed on create, execution_failed otherwise, outcome unknown. */
  public static ProviderError normalize(String backend, String op) {
    ErrorCode code = "create".equals(op) ? ErrorCode.CREATION_FAILED : ErrorCode.EXECUTION_FAILED;
    return ProviderError.of(code, backend, op, false, ProviderError.Outcome.UNKNOWN);
  }

  /**
   * Turns a bus failure back into the exception the sender should see: a {@link ProviderException} or an
   * {@link ApiException}. Timeouts and missing handlers become provider errors of {@code backend}/{@code op}.
   */
  public static RuntimeException decode(Throwable t, String backend, String op) {
    if (t instanceof ReplyException re) {
      if (re.failureType() == ReplyFailure.RECIPIENT_FAILURE && re.getMessage() != null) {
        String m = re.getMessage();
        try {
          if (m.startsWith(PROVIDER_MARK)) {
            return new ProviderException(ProviderError.fromJson(new JsonObject(m).getJsonObject("provider_error")));
          }
          return new ApiException(re.failureCode(), Json.decodeValue(m));
        } catch (RuntimeException ignored) {
          return new ProviderException(normalize(backend, op));
        }
      }
      if (re.failureType() == ReplyFailure.TIMEOUT) {
        return new ProviderException(
            ProviderError.of(ErrorCode.TIMEOUT, backend, op, false, ProviderError.Outcome.UNKNOWN));
      }
      if (re.failureType() == ReplyFailure.NO_HANDLERS) {
        return new ProviderException(
            ProviderError.of(ErrorCode.CONNECTION, backend, op, true, ProviderError.Outcome.FAILED));
      }
    }
    if (t instanceof ApiException || t instanceof ProviderException) {
      return (RuntimeException) t;
    }
    return new ProviderException(normalize(backend, op));
  }
}
