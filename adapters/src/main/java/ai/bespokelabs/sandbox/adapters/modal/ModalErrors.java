package ai.bespokelabs.sandbox.adapters.modal;

import ai.bespokelabs.sandbox.adapters.http.HttpFailures;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError;
import ai.bespokelabs.sandbox.core.error.ProviderError.Outcome;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import io.vertx.grpc.client.GrpcClientResponse;
import io.vertx.grpc.client.InvalidStatusException;
import io.vertx.grpc.common.GrpcStatus;

/**
 * Maps what Modal answered (a gRPC status, a transport failure) onto the error contract. Only the status name is
 * kept: Modal's status messages never leave the adapter.
 */
final class ModalErrors {
  static final String BACKEND = ModalProvider.BACKEND;

  private ModalErrors() {}

  /** Operations whose failure after sending may have changed something at Modal. */
  static boolean mutating(String op) {
    return switch (op) {
      case "list", "health", "get", "adopt" -> false;
      default -> true;
    };
  }

  static ErrorCode generic(String op) {
    return switch (op) {
      case "create" -> ErrorCode.CREATION_FAILED;
      case "execute", "stdin" -> ErrorCode.EXECUTION_FAILED;
      default -> ErrorCode.COMMAND_FAILED;
    };
  }

  static ProviderException of(ErrorCode code, String op, boolean retryable, Outcome outcome) {
    return new ProviderException(ProviderError.of(code, BACKEND, op, retryable, outcome));
  }

  /** The gRPC status of a failed call, or null when it failed below gRPC. */
  static GrpcStatus status(Throwable t) {
    for (Throwable c = t; c != null; c = c.getCause()) {
      if (c instanceof InvalidStatusException s) {
        return s.actualStatus();
      }
    }
    return null;
  }

  /**
   * A call's failure with the wait the server asked for in gRPC's retry pushback trailer
   * ({@code grpc-retry-pushback-ms}, gRFC A6), which a server may send with a refusal to say when to try again.
   */
  static final class Pushback extends RuntimeException {
    static final String TRAILER = "grpc-retry-pushback-ms";
    final long ms;

    private Pushback(Throwable cause, long ms) {
      super("retry pushback " + ms + " ms", cause, false, false);
      this.ms = ms;
    }

    /**
     * {@code failure} with the response's pushback, when it carries a valid one (a non-negative count of
     * milliseconds, in the trailers or, for an answer without messages, its headers); else {@code failure}.
     */
    static Throwable of(Throwable failure, GrpcClientResponse<?, ?> response) {
      String value = response.trailers() == null ? null : response.trailers().get(TRAILER);
      if (value == null && response.headers() != null) {
        value = response.headers().get(TRAILER);
      }
      if (value == null) {
        return failure;
      }
      try {
        long ms = Long.parseLong(value.trim());
        return ms < 0 ? failure : new Pushback(failure, ms);
      } catch (NumberFormatException e) {
        return failure;
      }
    }
  }

  /** Any failure of a call: already mapped, a gRPC status, or a transport failure. */
  static Throwable map(Throwable t, String op) {
    if (t instanceof ProviderException || t instanceof ApiException) {
      return t;
    }
    GrpcStatus status = status(t);
    if (status == null) {
      return transport(t, op);
    }
    ProviderException e = status(status, op);
    return t instanceof Pushback p && e.error().retryable()
        ? new ProviderException(e.error().withContext("retry_after_ms", p.ms)) : e;
  }

  /** A call that ended with a status other than OK. */
  static ProviderException status(GrpcStatus status, String op) {
    ErrorCode code;
    boolean retryable = false;
    Outcome outcome = Outcome.FAILED;
    switch (status) {
      case UNAUTHENTICATED, PERMISSION_DENIED -> code = ErrorCode.AUTHENTICATION;
      case NOT_FOUND -> code = ErrorCode.NOT_FOUND;
      case INVALID_ARGUMENT, FAILED_PRECONDITION, OUT_OF_RANGE, ALREADY_EXISTS -> code = ErrorCode.CONFIGURATION;
      case UNIMPLEMENTED -> code = ErrorCode.FEATURE_NOT_SUPPORTED;
      case RESOURCE_EXHAUSTED -> {
        code = generic(op);
        retryable = true;
      }
      case UNAVAILABLE -> {
        code = ErrorCode.CONNECTION;
        retryable = true;
        outcome = mutating(op) ? Outcome.UNKNOWN : Outcome.FAILED;
      }
      case DEADLINE_EXCEEDED -> {
        code = ErrorCode.TIMEOUT;
        retryable = true;
        outcome = mutating(op) ? Outcome.UNKNOWN : Outcome.FAILED;
      }
      default -> {
        code = generic(op);
        retryable = status == GrpcStatus.ABORTED || status == GrpcStatus.INTERNAL || status == GrpcStatus.UNKNOWN;
        outcome = mutating(op) ? Outcome.UNKNOWN : Outcome.FAILED;
      }
    }
    return new ProviderException(ProviderError.of(code, BACKEND, op, retryable, outcome)
        .withContext("provider_code", status.name().toLowerCase(java.util.Locale.ROOT)));
  }

  /** A failure below gRPC ({@link HttpFailures#transport}): whether Modal may have acted follows the op. */
  static ProviderException transport(Throwable t, String op) {
    return HttpFailures.transport(BACKEND, op, t, mutating(op));
  }
}
