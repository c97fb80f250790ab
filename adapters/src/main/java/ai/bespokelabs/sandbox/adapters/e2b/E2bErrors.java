package ai.bespokelabs.sandbox.adapters.e2b;

import ai.bespokelabs.sandbox.adapters.http.HttpFailures;
import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError;
import ai.bespokelabs.sandbox.core.error.ProviderError.Outcome;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import java.util.Map;

/**
 * Maps what E2B answered (an HTTP status, a Connect error code, a transport failure) onto the error
 * contract. Only status numbers, Connect codes and retry hints are kept; provider texts never are.
 */
final class E2bErrors {
  static final String BACKEND = E2bProvider.BACKEND;

  private E2bErrors() {}

  /** Operations whose failure after sending may have changed something at the provider. */
  static boolean mutating(String op) {
    return switch (op) {
      case "list", "health", "get", "download", "list_files", "metrics" -> false;
      default -> true;
    };
  }

  /** The code of a failure with no more specific meaning, by operation. */
  static ErrorCode generic(String op) {
    return switch (op) {
      case "create" -> ErrorCode.CREATION_FAILED;
      case "execute", "stdin", "signal" -> ErrorCode.EXECUTION_FAILED;
      default -> ErrorCode.COMMAND_FAILED;
    };
  }

  static ProviderException of(ErrorCode code, String op, boolean retryable, Outcome outcome) {
    return new ProviderException(ProviderError.of(code, BACKEND, op, retryable, outcome));
  }

  /**
   * An unsuccessful HTTP answer. {@code retryAfter} is the raw {@code Retry-After} header (or null).
   * {@code envd}: the answer came from the sandbox host, where the proxy reports a sandbox that is gone
   * (killed or expired) as 502, as E2B's SDKs read it.
   */
  static ProviderException status(int status, String op, String retryAfter, boolean envd) {
    ErrorCode code;
    boolean retryable = false;
    Outcome outcome = Outcome.FAILED;
    switch (status) {
      case 400, 422 -> code = ErrorCode.CONFIGURATION;
      case 401, 403 -> code = ErrorCode.AUTHENTICATION;
      case 404 -> code = ErrorCode.NOT_FOUND;
      case 408 -> {
        code = ErrorCode.TIMEOUT;
        retryable = true;
      }
      case 429 -> {
        code = generic(op);
        retryable = true;
      }
      case 502 -> {
        if (envd) {
          code = ErrorCode.NOT_FOUND;
        } else {
          code = generic(op);
          retryable = true;
          outcome = mutating(op) ? Outcome.UNKNOWN : Outcome.FAILED;
        }
      }
      case 504 -> {
        code = ErrorCode.TIMEOUT;
        retryable = true;
        outcome = mutating(op) ? Outcome.UNKNOWN : Outcome.FAILED;
      }
      case 507 -> code = ErrorCode.WORKSPACE;
      default -> {
        code = generic(op);
        if (status >= 500) {
          retryable = true;
          outcome = mutating(op) ? Outcome.UNKNOWN : Outcome.FAILED;
        }
      }
    }
    ProviderError e = ProviderError.of(code, BACKEND, op, retryable, outcome).withContext("provider_status", status);
    Long wait = HttpFailures.retryAfterSecs(retryAfter);
    if (wait != null) {
      e = e.withContext("retry_after_secs", wait);
    }
    return new ProviderException(e);
  }

  /** A Connect error code (from an error body or an end-of-stream message). */
  static ProviderException connect(String connectCode, String op) {
    String c = connectCode == null ? "unknown" : connectCode;
    ErrorCode code = switch (c) {
      case "unauthenticated", "permission_denied" -> ErrorCode.AUTHENTICATION;
      case "not_found" -> ErrorCode.NOT_FOUND;
      case "deadline_exceeded" -> ErrorCode.TIMEOUT;
      case "unavailable" -> ErrorCode.CONNECTION;
      case "invalid_argument", "failed_precondition", "out_of_range" -> generic(op);
      default -> generic(op);
    };
    boolean retryable = Map.of("resource_exhausted", 1, "unavailable", 1, "deadline_exceeded", 1, "aborted", 1)
        .containsKey(c);
    Outcome outcome = switch (c) {
      case "unauthenticated", "permission_denied", "not_found", "invalid_argument", "failed_precondition",
          "out_of_range", "resource_exhausted", "unimplemented" -> Outcome.FAILED;
      default -> mutating(op) ? Outcome.UNKNOWN : Outcome.FAILED;
    };
    return new ProviderException(ProviderError.of(code, BACKEND, op, retryable, outcome)
        .withContext("provider_code", c));
  }

  /** A failure below HTTP ({@link HttpFailures#transport}); whether the provider may have acted follows the op. */
  static ProviderException transport(Throwable t, String op) {
    return HttpFailures.transport(BACKEND, op, t, mutating(op));
  }
}
