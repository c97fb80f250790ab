package ai.bespokelabs.sandbox.adapters.codecapsules;

import ai.bespokelabs.sandbox.adapters.http.HttpFailures;
import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError;
import ai.bespokelabs.sandbox.core.error.ProviderError.Outcome;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.PoolOptions;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpRequest;
import io.vertx.ext.web.client.HttpResponse;
import io.vertx.ext.web.client.WebClient;

/**
 * The HTTP side of the codecapsules backend, through the Vert.x clients (no SDK), non-blocking; and the mapping
 * of every failure onto the error contract. Only status numbers, the error body's code and retry hints are
 * kept; provider texts never are (they may echo anything, the key included).
 */
final class CodeCapsulesClient {
  static final String BACKEND = CodeCapsulesProvider.BACKEND;

  private final CodeCapsulesSettings settings;
  private final Vertx vertx;
  private final HttpClient http;
  private final WebClient web;

  CodeCapsulesClient(Vertx vertx, CodeCapsulesSettings settings) {
    this.vertx = vertx;
    this.settings = settings;
    this.http = vertx.createHttpClient(new HttpClientOptions()
            .setConnectTimeout((int) Math.min(Integer.MAX_VALUE, settings.requestTimeout().toMillis()))
            .setKeepAlive(true),
        new PoolOptions().setHttp1MaxSize(64));
    this.web = WebClient.wrap(http);
  }

  CodeCapsulesSettings settings() {
    return settings;
  }

  Vertx vertx() {
    return vertx;
  }

  HttpClient http() {
    return http;
  }

  /** A request with the API key, bounded by the request timeout. */
  HttpRequest<Buffer> api(HttpMethod method, String pathAndQuery) {
    return web.requestAbs(method, settings.apiUrl() + pathAndQuery)
        .putHeader(CodeCapsulesWire.AUTH_HEADER, CodeCapsulesWire.bearer(settings.apiKey().reveal()))
        .putHeader("Accept", "application/json")
        .timeout(settings.requestTimeout().toMillis());
  }

  /** The same for the core client (streamed bodies); no idle timeout, the caller bounds it. */
  RequestOptions options(HttpMethod method, String pathAndQuery) {
    return new RequestOptions().setMethod(method).setAbsoluteURI(settings.apiUrl() + pathAndQuery)
        .putHeader(CodeCapsulesWire.AUTH_HEADER, CodeCapsulesWire.bearer(settings.apiKey().reveal()))
        .setIdleTimeout(0);
  }

  /** A JSON request; its answer must be one of {@code ok}, else it is the contract error of {@code op}. */
  Future<HttpResponse<Buffer>> call(HttpMethod method, String path, JsonObject body, String op, int... ok) {
    HttpRequest<Buffer> req = api(method, path);
    Future<HttpResponse<Buffer>> sent = body == null ? req.send()
        : req.putHeader("Content-Type", "application/json").sendBuffer(body.toBuffer());
    return sent.recover(t -> Future.failedFuture(transport(t, op))).map(r -> {
      for (int status : ok) {
        if (r.statusCode() == status) {
          return r;
        }
      }
      throw status(op, r.statusCode(), r.getHeader(CodeCapsulesWire.RETRY_AFTER_HEADER), r.body());
    });
  }

  /** The answer's JSON object; an unreadable one is the operation's generic failure. */
  static JsonObject json(HttpResponse<Buffer> r, String op) {
    try {
      JsonObject j = r.bodyAsJsonObject();
      if (j != null) {
        return j;
      }
    } catch (RuntimeException ignored) {
      // reported below
    }
    throw of(generic(op), op, false, mutating(op) ? Outcome.UNKNOWN : Outcome.FAILED);
  }

  // ---- errors ------------------------------------------------------------------------------------------------

  static ProviderException of(ErrorCode code, String op, boolean retryable, Outcome outcome) {
    return new ProviderException(ProviderError.of(code, BACKEND, op, retryable, outcome));
  }

  /** Operations whose failure after sending may have changed something at the provider. */
  static boolean mutating(String op) {
    return switch (op) {
      case "health", "download", "list_files", "metrics", "get", "list" -> false;
      default -> true;
    };
  }

  /**
   * An unsuccessful answer: 401/403 {@code authentication}, 404 {@code not_found}, 408/504 {@code timeout},
   * 429 and 5xx retryable (with {@code retry_after_secs} from {@code Retry-After} or the body's
   * {@code retryAfterMs}), a quota refusal the operation's code with {@code provider_code quota_exceeded}
   * (not retryable: a sandbox must be deleted first), other 4xx not retryable.
   */
  static ProviderException status(String op, int status, String retryAfter, Buffer body) {
    String providerCode = CodeCapsulesWire.errorCode(body);
    ErrorCode code = generic(op);
    boolean retryable = false;
    Outcome outcome = Outcome.FAILED;
    if (CodeCapsulesWire.QUOTA_EXCEEDED.equals(providerCode)) {
      code = generic(op);
    } else if (status == 401 || status == 403) {
      code = ErrorCode.AUTHENTICATION;
    } else if (status == 404) {
      code = ErrorCode.NOT_FOUND;
    } else if (status == 408 || status == 504) {
      code = ErrorCode.TIMEOUT;
      retryable = true;
      outcome = mutating(op) ? Outcome.UNKNOWN : Outcome.FAILED;
    } else if (status == 429 || status == 503) {
      retryable = true;
    } else if (status >= 500) {
      retryable = true;
      outcome = mutating(op) ? Outcome.UNKNOWN : Outcome.FAILED;
    }
    ProviderError e = ProviderError.of(code, BACKEND, op, retryable, outcome).withContext("provider_status", status);
    if (providerCode != null && CodeCapsulesWire.ERROR_CODES.contains(providerCode)) {
      e = e.withContext("provider_code", providerCode);
    }
    if (retryable) {
      Long wait = HttpFailures.retryAfterSecs(retryAfter);
      Long bodyMs = CodeCapsulesWire.retryAfterMs(body);
      if (wait != null) {
        e = e.withContext("retry_after_secs", wait);
      } else if (bodyMs != null) {
        e = e.withContext("retry_after_ms", Math.max(0, bodyMs));
      }
    }
    return new ProviderException(e);
  }

  static ErrorCode generic(String op) {
    return HttpFailures.opCode(op);
  }

  /** A failure below HTTP ({@link HttpFailures#transport}); whether the provider may have acted follows the op. */
  static ProviderException transport(Throwable t, String op) {
    return HttpFailures.transport(BACKEND, op, t, mutating(op));
  }

  Future<Void> close() {
    return http.close();
  }
}
