package ai.bespokelabs.sandbox.adapters.e2b;

import ai.bespokelabs.sandbox.adapters.http.HttpFailures;
import ai.bespokelabs.sandbox.core.error.ErrorCode;
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
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpRequest;
import io.vertx.ext.web.client.HttpResponse;
import io.vertx.ext.web.client.WebClient;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The HTTP side of the e2b backend: E2B's control plane and each sandbox's envd, through the Vert.x clients
 * (no SDK), non-blocking. Knows how to reach each sandbox's envd: from the create answer, else (after a
 * restart, or on another node) from {@code GET /sandboxes/{id}}.
 */
final class E2bClient {
  /** envd's port inside every sandbox, named in the {@code E2b-Sandbox-Port} header. */
  static final int ENVD_PORT = 49983;

  private final E2bSettings settings;
  private final Vertx vertx;
  private final HttpClient http;
  private final WebClient web;
  private final Map<String, Envd> envds = new ConcurrentHashMap<>();

  /** How to reach one sandbox's envd. {@code accessToken} is null for a sandbox created without {@code secure}. */
  record Envd(String sandboxId, String baseUrl, String accessToken) {
    @Override
    public String toString() {
      return "Envd[" + sandboxId + "]";
    }
  }

  E2bClient(Vertx vertx, E2bSettings settings) {
    this.vertx = vertx;
    this.settings = settings;
    this.http = vertx.createHttpClient(new HttpClientOptions()
            .setConnectTimeout((int) Math.min(Integer.MAX_VALUE, settings.requestTimeout().toMillis()))
            .setKeepAlive(true),
        new PoolOptions().setHttp1MaxSize(64));
    this.web = WebClient.wrap(http);
  }

  E2bSettings settings() {
    return settings;
  }

  Vertx vertx() {
    return vertx;
  }

  HttpClient http() {
    return http;
  }

  /** A control-plane request with the API key. */
  HttpRequest<Buffer> api(HttpMethod method, String path) {
    return web.requestAbs(method, settings.apiUrl() + path)
        .putHeader("X-API-Key", settings.apiKey().reveal())
        .putHeader("Accept", "application/json")
        .timeout(settings.requestTimeout().toMillis());
  }

  /** Sends {@code request}; a failure below HTTP becomes a contract error of {@code op}. */
  static Future<HttpResponse<Buffer>> send(Future<HttpResponse<Buffer>> sent, String op) {
    return sent.recover(t -> Future.failedFuture(E2bErrors.transport(t, op)));
  }

  /** An answer that is not one of {@code ok} as the contract error of {@code op}. */
  static HttpResponse<Buffer> expect(HttpResponse<Buffer> r, String op, int... ok) {
    for (int status : ok) {
      if (r.statusCode() == status) {
        return r;
      }
    }
    throw E2bErrors.status(r.statusCode(), op, r.getHeader("Retry-After"), false);
  }

  // ---- envd ------------------------------------------------------------------------------------------------

  /** Remembers a sandbox's envd from a control-plane answer. */
  Envd remember(String id, String domain, String accessToken) {
    String base = settings.sandboxUrl() != null ? settings.sandboxUrl()
        : "https://sandbox." + (domain == null || domain.isBlank() ? settings.domain() : domain);
    Envd envd = new Envd(id, base, accessToken);
    envds.put(id, envd);
    return envd;
  }

  void forget(String id) {
    envds.remove(id);
  }

  /** The sandbox's envd, from the create answer or (after a restart) from {@code GET /sandboxes/{id}}. */
  Future<Envd> envd(String resourceId, String op) {
    if (resourceId == null || resourceId.isBlank()) {
      return Future.failedFuture(E2bErrors.of(ErrorCode.NOT_FOUND, op, false, Outcome.FAILED));
    }
    Envd known = envds.get(resourceId);
    if (known != null) {
      return Future.succeededFuture(known);
    }
    return send(api(HttpMethod.GET, "/sandboxes/" + segment(resourceId)).send(), op).map(r -> {
      JsonObject detail = json(expect(r, op, 200), op);
      return remember(resourceId, detail.getString("domain"), detail.getString("envdAccessToken"));
    });
  }

  /** A request to envd with the sandbox-routing and access-token headers. */
  HttpRequest<Buffer> envdRequest(Envd envd, HttpMethod method, String path) {
    HttpRequest<Buffer> req = web.requestAbs(method, envd.baseUrl() + path)
        .putHeader("E2b-Sandbox-Id", envd.sandboxId())
        .putHeader("E2b-Sandbox-Port", String.valueOf(ENVD_PORT))
        .timeout(settings.requestTimeout().toMillis());
    if (envd.accessToken() != null) {
      req.putHeader("X-Access-Token", envd.accessToken());
    }
    return req;
  }

  /** The same headers for a request sent through the core HTTP client (streamed bodies). */
  RequestOptions envdOptions(Envd envd, HttpMethod method, String pathAndQuery) {
    RequestOptions options = new RequestOptions().setMethod(method).setAbsoluteURI(envd.baseUrl() + pathAndQuery)
        .putHeader("E2b-Sandbox-Id", envd.sandboxId())
        .putHeader("E2b-Sandbox-Port", String.valueOf(ENVD_PORT))
        .setIdleTimeout(0);
    if (envd.accessToken() != null) {
      options.putHeader("X-Access-Token", envd.accessToken());
    }
    return options;
  }

  /** A unary Connect call ({@code /<package>.<Service>/<Method>}, JSON codec); completes with the response message. */
  Future<JsonObject> unary(Envd envd, String path, JsonObject message, String op) {
    return send(sendUnary(envd, path, message), op).map(r -> {
      if (r.statusCode() == 200) {
        return json(r, op);
      }
      throw connectFailure(r.statusCode(), r.body(), r.getHeader("Retry-After"), op);
    });
  }

  /** The same, its answer unread: for cleanup paths. */
  Future<HttpResponse<Buffer>> sendUnary(Envd envd, String path, JsonObject message) {
    return envdRequest(envd, HttpMethod.POST, path)
        .putHeader("Content-Type", "application/json")
        .putHeader("Connect-Protocol-Version", "1")
        .sendBuffer(message.toBuffer());
  }

  /** A Connect error answer: its {@code code} when the body has one, else the HTTP status. */
  static ProviderException connectFailure(int status, Buffer body, String retryAfter, String op) {
    try {
      JsonObject err = body == null ? null : new JsonObject(body);
      if (err != null && err.getValue("code") instanceof String code) {
        ProviderException e = E2bErrors.connect(code, op);
        Long wait = HttpFailures.retryAfterSecs(retryAfter);
        return wait == null ? e : new ProviderException(e.error().withContext("retry_after_secs", wait));
      }
    } catch (DecodeException | ClassCastException ignored) {
      // not a Connect error body: judge by status
    }
    return E2bErrors.status(status, op, retryAfter, true);
  }

  /** The answer's JSON object; an unreadable one is the operation's generic failure. */
  static JsonObject json(HttpResponse<Buffer> r, String op) {
    try {
      JsonObject j = r.bodyAsJsonObject();
      if (j != null) {
        return j;
      }
    } catch (DecodeException | ClassCastException ignored) {
      // reported below
    }
    throw E2bErrors.of(E2bErrors.generic(op), op, false, E2bErrors.mutating(op) ? Outcome.UNKNOWN : Outcome.FAILED);
  }

  static String segment(String id) {
    return URLEncoder.encode(id, StandardCharsets.UTF_8).replace("+", "%20");
  }

  Future<Void> close() {
    web.close();
    return http.close();
  }
}
