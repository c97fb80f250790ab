package ai.bespokelabs.sandbox.adapters.daytona;

import ai.bespokelabs.sandbox.adapters.http.HttpFailures;
import ai.bespokelabs.sandbox.adapters.http.ProviderHttp;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import io.vertx.core.AsyncResult;
import io.vertx.core.Future;
import io.vertx.core.Handler;
import io.vertx.core.MultiMap;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.PoolOptions;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.http.WebSocket;
import io.vertx.core.http.WebSocketClient;
import io.vertx.core.http.WebSocketClientOptions;
import io.vertx.core.http.WebSocketConnectOptions;
import java.net.URI;

/**
 * The HTTP side of the Daytona adapter: one Vert.x HTTP client and one WebSocket client, the Bearer key,
 * and the mapping of every failure onto the error contract. Nothing here blocks: every request is issued on
 * the client's context (the adapter's) and completes there. Provider response bodies of failed calls are
 * never read into errors or logs: they may echo credentials.
 */
final class DaytonaClient extends ProviderHttp {
  private static final String SOURCE = "sandbox-gateway";

  private final DaytonaSettings settings;
  private final WebSocketClient ws;

  DaytonaClient(Vertx vertx, String backend, DaytonaSettings settings) {
    super(vertx, backend, vertx.createHttpClient(new HttpClientOptions().setConnectTimeout(connectMs(settings))
        .setKeepAlive(true).setKeepAliveTimeout(30).setDecompressionSupported(true), new PoolOptions()
            .setHttp1MaxSize(settings.maxConnections())), settings.requestTimeout());
    this.settings = settings;
    this.ws = vertx.createWebSocketClient(new WebSocketClientOptions().setConnectTimeout(connectMs(settings))
        .setMaxFrameSize(1 << 20).setMaxMessageSize(16 << 20));
  }

  private static int connectMs(DaytonaSettings settings) {
    return (int) Math.min(10_000, settings.requestTimeout().toMillis());
  }

  @Override
  protected RequestOptions authorize(RequestOptions o) {
    return o.putHeader(HttpHeaders.AUTHORIZATION, "Bearer " + settings.apiKey().reveal())
        .putHeader("X-Daytona-Source", SOURCE);
  }

  String apiUrl() {
    return settings.apiUrl();
  }

  /** Sends one request; the future fails only when no HTTP answer arrived. */
  Future<Resp> send(HttpMethod method, String url, Buffer body, String contentType, long timeoutMs) {
    return send(options(method, url, timeoutMs), body, contentType);
  }

  /**
   * Sends one request and completes with its answer, whatever its status, within {@code timeoutMs} and a
   * second.
   *
   * @param mutating whether the request may change provider state (its loss makes the outcome unknown)
   * @return fails with the {@code timeout} or {@code connection} provider error when no answer arrived
   */
  Future<Resp> call(String op, boolean mutating, HttpMethod method, String url, Buffer body, String contentType,
      long timeoutMs) {
    return call(op, mutating, options(method, url, timeoutMs), body, contentType, timeoutMs);
  }

  /** A GET whose body is read as it arrives ({@link ProviderHttp#stream}); {@code idleTimeoutMs} bounds silence. */
  Future<Streamed> stream(String op, String url, long idleTimeoutMs) {
    return stream(op, options(HttpMethod.GET, url, idleTimeoutMs));
  }

  /** A POST of {@code head}, the file {@code file} ({@code size} bytes) and {@code tail} ({@link ProviderHttp#sendFile}). */
  Future<Resp> postFile(String op, String url, String contentType, Buffer head, String file, long size, Buffer tail,
      long timeoutMs) {
    return sendFile(op, options(HttpMethod.POST, url, requestTimeoutMs()), contentType, head, file, size, tail,
        timeoutMs);
  }

  /**
   * Opens a WebSocket to an http(s) URL (ws/wss on the same host and port), with the Bearer key, and hands the
   * outcome to {@code opened} on the client's context, in the same event-loop turn as the connection completes:
   * handlers set there miss no frame (set from another thread, a short log and its close could come first).
   */
  void websocket(String httpUrl, Handler<AsyncResult<WebSocket>> opened) {
    URI u = URI.create(httpUrl);
    boolean tls = "https".equals(u.getScheme());
    WebSocketConnectOptions o = new WebSocketConnectOptions().setHost(u.getHost())
        .setPort(u.getPort() == -1 ? (tls ? 443 : 80) : u.getPort()).setSsl(tls)
        .setURI(u.getRawPath() + (u.getRawQuery() == null ? "" : "?" + u.getRawQuery()))
        .addHeader("Authorization", "Bearer " + settings.apiKey().reveal())
        .addHeader("X-Daytona-Source", SOURCE);
    onContext(() -> {
      Future<WebSocket> connected;
      try {
        connected = ws.connect(o);
      } catch (RuntimeException e) {
        connected = Future.failedFuture(e);
      }
      return connected.andThen(opened);
    });
  }

  @Override
  public Future<Void> close() {
    return Future.all(super.close(), ws.close()).mapEmpty();
  }

  /** {@link HttpFailures#status}; Daytona's wait hint is {@code Retry-After} or {@code X-RateLimit-Reset}. */
  @Override
  public ProviderException httpError(String op, int status, MultiMap headers) {
    String wait = headers == null ? null : headers.get("Retry-After");
    if (wait == null && headers != null) {
      wait = headers.get("X-RateLimit-Reset");
    }
    return new ProviderException(HttpFailures.status(backend, op, status, wait));
  }
}
