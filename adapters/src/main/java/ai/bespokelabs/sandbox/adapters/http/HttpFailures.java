package ai.bespokelabs.sandbox.adapters.http;

import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError;
import ai.bespokelabs.sandbox.core.error.ProviderError.Outcome;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import java.net.ConnectException;
import java.net.UnknownHostException;
import java.nio.channels.UnresolvedAddressException;
import java.time.Instant;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.concurrent.TimeoutException;

/**
 * How an HTTP provider's failures enter the error contract, the same for every backend that speaks HTTP:
 * statuses, answers that never came, and answers that cannot be understood. Provider text never enters an
 * error (it may quote credentials); only the status and a wait hint do.
 */
public final class HttpFailures {
  private HttpFailures() {}

  /** The operation's own failure code: creation, execution, or a command on the sandbox. */
  public static ErrorCode opCode(String op) {
    return switch (op) {
      case "create" -> ErrorCode.CREATION_FAILED;
      case "execute", "stdin", "signal" -> ErrorCode.EXECUTION_FAILED;
      default -> ErrorCode.COMMAND_FAILED;
    };
  }

  /**
   * An unsuccessful status: 401/403 {@code authentication}, 404 {@code not_found}, 408 and 504
   * {@code timeout} (the provider may have acted), 429 and other 5xx retryable with the wait hint, other
   * statuses the operation's code, not retryable. {@code provider_status} is always in the context.
   *
   * @param retryAfter the raw {@code Retry-After} value, or null
   */
  public static ProviderError status(String backend, String op, int status, String retryAfter) {
    ProviderError e;
    if (status == 401 || status == 403) {
      e = ProviderError.of(ErrorCode.AUTHENTICATION, backend, op, false, Outcome.FAILED);
    } else if (status == 404) {
      e = ProviderError.of(ErrorCode.NOT_FOUND, backend, op, false, Outcome.FAILED);
    } else if (status == 408 || status == 504) {
      e = ProviderError.of(ErrorCode.TIMEOUT, backend, op, true, Outcome.UNKNOWN);
    } else if (status == 429 || status >= 500) {
      e = ProviderError.of(opCode(op), backend, op, true, Outcome.FAILED);
      Long wait = retryAfterSecs(retryAfter);
      if (wait != null) {
        e = e.withContext("retry_after_secs", wait);
      }
    } else {
      e = ProviderError.of(opCode(op), backend, op, false, Outcome.FAILED);
    }
    return e.withContext("provider_status", status);
  }

  /**
   * A request that got no answer: {@code connection} when it never reached the provider (outcome
   * {@code failed}), else {@code timeout} or {@code connection} with outcome {@code unknown} when the request
   * could have changed something. Always retryable. A contract error passes through unchanged.
   */
  public static ProviderException transport(String backend, String op, Throwable t, boolean mutating) {
    if (t instanceof ProviderException p) {
      return p;
    }
    boolean sent = !neverSent(t);
    Outcome outcome = mutating && sent ? Outcome.UNKNOWN : Outcome.FAILED;
    ErrorCode code = sent && timedOut(t) ? ErrorCode.TIMEOUT : ErrorCode.CONNECTION;
    // the cause travels for the debug log only; its class says enough and carries no provider text
    return new ProviderException(ProviderError.of(code, backend, op, true, outcome), t);
  }

  /** A successful answer the adapter cannot understand. */
  public static ProviderException badResponse(String backend, String op, boolean mutating) {
    return new ProviderException(ProviderError.of(opCode(op), backend, op, false,
        mutating ? Outcome.UNKNOWN : Outcome.FAILED));
  }

  /** Whether the request never reached the provider (refused, unresolvable, or no connection in time). */
  public static boolean neverSent(Throwable t) {
    for (Throwable c = t; c != null; c = c.getCause()) {
      if (c instanceof ConnectException || c instanceof UnknownHostException
          || c instanceof UnresolvedAddressException
          || c.getClass().getName().equals("io.netty.channel.ConnectTimeoutException")) {
        return true;
      }
    }
    return false;
  }

  public static boolean timedOut(Throwable t) {
    for (Throwable c = t; c != null; c = c.getCause()) {
      if (c instanceof TimeoutException || c.getClass().getSimpleName().contains("Timeout")) {
        return true;
      }
    }
    return false;
  }

  /** Seconds from a {@code Retry-After} value (delta-seconds or an HTTP date), or null without a valid one. */
  public static Long retryAfterSecs(String value) {
    if (value == null || value.isBlank()) {
      return null;
    }
    String v = value.trim();
    try {
      return Math.max(0, Long.parseLong(v));
    } catch (NumberFormatException notSeconds) {
      try {
        Instant at = ZonedDateTime.parse(v, DateTimeFormatter.RFC_1123_DATE_TIME).toInstant();
        return Math.max(0, at.getEpochSecond() - Instant.now().getEpochSecond());
      } catch (RuntimeException notADate) {
        return null;
      }
    }
  }
}
