package ai.bespokelabs.sandbox.adapters.ray;

import ai.bespokelabs.sandbox.adapters.http.HttpFailures;
import ai.bespokelabs.sandbox.adapters.http.ClientContext;
import ai.bespokelabs.sandbox.core.error.ProviderError;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.MultiMap;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClientAgent;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.http.WebSocket;
import io.vertx.core.http.WebSocketClient;
import io.vertx.core.http.WebSocketClientOptions;
import io.vertx.core.http.WebSocketConnectOptions;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.net.URI;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * The HTTP side of the Ray adapter: one Vert.x HTTP client and one WebSocket client bound to the adapter's
 * context, the optional Bearer token, and the mapping of every failure onto the error contract. Ray answers
 * errors as {@code text/plain} that may quote the request (a runtime env, a token); those bodies are never
 * read into errors or logs.
 */
final class RayClient {
  /** One answer: status, headers, whole body. */
  record Resp(int status, MultiMap headers, Buffer body) {
    boolean ok() {
      return status >= 200 && status < 300;
    }
  }

  private final Vertx vertx;
  private final RaySettings settings;
  private final HttpClientAgent http;
  private final WebSocketClient ws;
  private volatile Context context;

  RayClient(Vertx vertx, RaySettings settings) {
    this.vertx = vertx;
    this.settings = settings;
    int connectMs = (int) Math.min(10_000, settings.requestTimeout().toMillis());
    this.http = vertx.createHttpClient(new HttpClientOptions().setConnectTimeout(connectMs).setKeepAlive(true)
        .setKeepAliveTimeout(30));
    this.ws = vertx.createWebSocketClient(new WebSocketClientOptions().setConnectTimeout(connectMs)
        .setMaxFrameSize(1 << 20).setMaxMessageSize(16 << 20));
    this.context = vertx.getOrCreateContext();
  }

  void useContext(Context context) {
    this.context = context;
  }

  Context context() {
    return context;
  }

  Vertx vertx() {
    return vertx;
  }

  /** Starts {@code work} on the client's context (at once when already there). */
  <T> Future<T> onContext(Supplier<Future<T>> work) {
    Context c = context;
    if (Vertx.currentContext() == c) {
      try {
        return work.get();
      } catch (RuntimeException e) {
        return Future.failedFuture(e);
      }
    }
    return ClientContext.run(c, work);
  }

  String url(String path) {
    return settings.address() + path;
  }

  long requestTimeoutMs() {
    return settings.requestTimeout().toMillis();
  }

  /**
   * Sends one request and completes with its answer whatever its status; fails with the {@code timeout} or
   * {@code connection} contract error when no answer came within the request timeout and a second.
   *
   * @param mutating whether the request may change the cluster's state (its loss makes the outcome unknown)
   */
  Future<Resp> call(String op, boolean mutating, HttpMethod method, String path, JsonObject json) {
    long timeoutMs = requestTimeoutMs();
    RequestOptions o = new RequestOptions().setMethod(method).setAbsoluteURI(url(path)).setIdleTimeout(timeoutMs);
    if (settings.token() != null) {
      o.putHeader(HttpHeaders.AUTHORIZATION, "Bearer " + settings.token().reveal());
    }
    Future<Resp> f = onContext(() -> http.request(o).compose(req -> {
      if (json == null) {
        return req.send();
      }
      req.putHeader(HttpHeaders.CONTENT_TYPE, "application/json");
      return req.send(json.toBuffer());
    }).compose(resp -> resp.body().map(b -> new Resp(resp.statusCode(), resp.headers(), b))));
    return f.timeout(timeoutMs + 1_000, TimeUnit.MILLISECONDS)
        .recover(t -> Future.failedFuture(transportError(op, t, mutating)));
  }

  /** As {@link #call}, with any non-2xx status turned into a contract error. */
  Future<Resp> expect(String op, boolean mutating, HttpMethod method, String path, JsonObject json) {
    return call(op, mutating, method, path, json).map(r -> {
      if (!r.ok()) {
        throw httpError(op, r.status(), r.headers());
      }
      return r;
    });
  }

  JsonObject object(String op, Resp r, boolean mutating) {
    try {
      return new JsonObject(r.body());
    } catch (DecodeException | ClassCastException e) {
      throw badResponse(op, mutating);
    }
  }

  JsonArray array(String op, Resp r) {
    try {
      return new JsonArray(r.body());
    } catch (DecodeException | ClassCastException e) {
      throw badResponse(op, false);
    }
  }

  /**
   * Opens the WebSocket at {@code path} (ws/wss on the dashboard's host and port) with the token. The
   * handshake must complete within the request timeout (a socket that opens later is closed); an open socket
   * has no idle timeout, since a job may print nothing for a long time.
   */
  Future<WebSocket> websocket(String path) {
    URI u = URI.create(settings.address());
    boolean tls = "https".equals(u.getScheme());
    String prefix = u.getRawPath() == null ? "" : u.getRawPath();
    WebSocketConnectOptions o = new WebSocketConnectOptions().setHost(u.getHost())
        .setPort(u.getPort() == -1 ? (tls ? 443 : 80) : u.getPort()).setSsl(tls).setURI(prefix + path)
        .setConnectTimeout(Math.min(10_000, requestTimeoutMs()));
    if (settings.token() != null) {
      o.addHeader("Authorization", "Bearer " + settings.token().reveal());
    }
    return onContext(() -> {
      Future<WebSocket> connected = ws.connect(o);
      Future<WebSocket> bounded = connected.timeout(requestTimeoutMs(), TimeUnit.MILLISECONDS);
      bounded.onFailure(t -> connected.onSuccess(WebSocket::close));
      return bounded;
    });
  }

  Future<Void> close() {
    return Future.all(http.close(), ws.close()).mapEmpty();
  }

  /**
   * The contract error for an HTTP failure status ({@link HttpFailures#status}), except that Ray answers 500
   * for requests it refuses (a runtime env it cannot set up, an unknown entrypoint), so 500 and 501 are not
   * retried.
   */
  static ProviderException httpError(String op, int status, MultiMap headers) {
    if (status == 500 || status == 501) {
      return new ProviderException(ProviderError.of(HttpFailures.opCode(op), RayProvider.BACKEND, op, false,
          ProviderError.Outcome.FAILED).withContext("provider_status", status));
    }
    return new ProviderException(HttpFailures.status(RayProvider.BACKEND, op, status,
        headers == null ? null : headers.get("Retry-After")));
  }

  static ProviderException transportError(String op, Throwable t, boolean mutating) {
    return HttpFailures.transport(RayProvider.BACKEND, op, t, mutating);
  }

  static ProviderException badResponse(String op, boolean mutating) {
    return HttpFailures.badResponse(RayProvider.BACKEND, op, mutating);
  }

}
