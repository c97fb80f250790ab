package ai.bespokelabs.sandbox.adapters.ray;

import ai.bespokelabs.sandbox.adapters.http.HttpFailures;
import ai.bespokelabs.sandbox.adapters.http.ProviderHttp;
import ai.bespokelabs.sandbox.core.error.ProviderError;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import io.vertx.core.Future;
import io.vertx.core.MultiMap;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.http.WebSocket;
import io.vertx.core.http.WebSocketClient;
import io.vertx.core.http.WebSocketClientOptions;
import io.vertx.core.http.WebSocketConnectOptions;
import io.vertx.core.json.JsonObject;
import java.net.URI;
import java.util.concurrent.TimeUnit;

/**
 * The HTTP side of the Ray adapter: one Vert.x HTTP client and one WebSocket client bound to the adapter's
 * context, the optional Bearer token, and the mapping of every failure onto the error contract. Ray answers
 * errors as {@code text/plain} that may quote the request (a runtime env, a token); those bodies are never
 * read into errors or logs.
 */
final class RayClient extends ProviderHttp {
  private final RaySettings settings;
  private final WebSocketClient ws;

  RayClient(Vertx vertx, RaySettings settings) {
    super(vertx, RayProvider.BACKEND, vertx.createHttpClient(new HttpClientOptions()
        .setConnectTimeout(connectMs(settings)).setKeepAlive(true).setKeepAliveTimeout(30)), settings.requestTimeout());
    this.settings = settings;
    this.ws = vertx.createWebSocketClient(new WebSocketClientOptions().setConnectTimeout(connectMs(settings))
        .setMaxFrameSize(1 << 20).setMaxMessageSize(16 << 20));
  }

  private static int connectMs(RaySettings settings) {
    return (int) Math.min(10_000, settings.requestTimeout().toMillis());
  }

  @Override
  protected RequestOptions authorize(RequestOptions o) {
    return settings.token() == null ? o : o.putHeader(HttpHeaders.AUTHORIZATION, "Bearer " + settings.token().reveal());
  }

  String url(String path) {
    return settings.address() + path;
  }

  /** As {@link ProviderHttp#call}, to {@code path} on the dashboard (so {@link #expect} takes paths too). */
  @Override
  public Future<Resp> call(String op, boolean mutating, HttpMethod method, String path, JsonObject json) {
    return super.call(op, mutating, method, url(path), json);
  }

  /** A JSON object body ({@link #json}). */
  JsonObject object(String op, Resp r, boolean mutating) {
    return json(op, r, mutating);
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

  @Override
  public Future<Void> close() {
    return Future.all(super.close(), ws.close()).mapEmpty();
  }

  /** As {@link #statusError}. */
  @Override
  public ProviderException httpError(String op, int status, MultiMap headers) {
    return statusError(op, status, headers);
  }

  /**
   * The contract error for an HTTP failure status ({@link HttpFailures#status}), except that Ray answers 500
   * for requests it refuses (a runtime env it cannot set up, an unknown entrypoint), so 500 and 501 are not
   * retried.
   */
  static ProviderException statusError(String op, int status, MultiMap headers) {
    if (status == 500 || status == 501) {
      return new ProviderException(ProviderError.of(HttpFailures.opCode(op), RayProvider.BACKEND, op, false,
          ProviderError.Outcome.FAILED).withContext("provider_status", status));
    }
    return new ProviderException(HttpFailures.status(RayProvider.BACKEND, op, status,
        headers == null ? null : headers.get("Retry-After")));
  }
}
