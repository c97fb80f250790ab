package ai.bespokelabs.sandbox.adapters.daytona;

import ai.bespokelabs.sandbox.adapters.http.HttpFailures;
import ai.bespokelabs.sandbox.adapters.http.ResponseDownload;
import ai.bespokelabs.sandbox.adapters.http.ClientContext;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import io.vertx.core.AsyncResult;
import io.vertx.core.Context;
import io.vertx.core.Handler;
import io.vertx.core.Future;
import io.vertx.core.MultiMap;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClientAgent;
import io.vertx.core.file.OpenOptions;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpClientResponse;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.PoolOptions;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.http.WebSocket;
import io.vertx.core.http.WebSocketClient;
import io.vertx.core.http.WebSocketClientOptions;
import io.vertx.core.http.WebSocketConnectOptions;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonObject;
import java.net.URI;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * The HTTP side of the Daytona adapter: one Vert.x HTTP client and one WebSocket client, the Bearer key,
 * and the mapping of every failure onto the error contract. Nothing here blocks: every request is issued on
 * the client's context (the adapter's) and completes there. Provider response bodies of failed calls are
 * never read into errors or logs: they may echo credentials.
 */
final class DaytonaClient {
  /** One answer: status, headers, whole body. */
  record Resp(int status, MultiMap headers, Buffer body) {
    boolean ok() {
      return status >= 200 && status < 300;
    }
  }

  /**
   * An answer whose body is read as it arrives: a 2xx answer comes with its {@code response}, paused, which
   * the caller reads or resets; any other with none (its body was read and dropped: provider error bodies are
   * never looked at).
   */
  record Streamed(int status, MultiMap headers, HttpClientResponse response) {}

  private static final String SOURCE = "sandbox-gateway";

  private final Vertx vertx;
  private final String backend;
  private final DaytonaSettings settings;
  private final HttpClientAgent http;
  private final WebSocketClient ws;
  /** Where every request is issued, so the connection pool is only ever used from one event loop. */
  private volatile Context context;

  DaytonaClient(Vertx vertx, String backend, DaytonaSettings settings) {
    this.vertx = vertx;
    this.backend = backend;
    this.settings = settings;
    int connectMs = (int) Math.min(10_000, settings.requestTimeout().toMillis());
    this.http = vertx.createHttpClient(new HttpClientOptions().setConnectTimeout(connectMs).setKeepAlive(true)
        .setKeepAliveTimeout(30).setDecompressionSupported(true), new PoolOptions()
            .setHttp1MaxSize(settings.maxConnections()));
    this.ws = vertx.createWebSocketClient(new WebSocketClientOptions().setConnectTimeout(connectMs)
        .setMaxFrameSize(1 << 20).setMaxMessageSize(16 << 20));
    this.context = vertx.getOrCreateContext();
  }

  /** Uses the HTTP clients from {@code context} from now on (the adapter's, so its calls need no hand-off). */
  void useContext(Context context) {
    this.context = context;
  }

  Context context() {
    return context;
  }

  /** Starts {@code work} on the client's context (at once when already there) and hands back its outcome. */
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

  /** A future completing after {@code ms} on the client's context. */
  Future<Void> delay(long ms) {
    return onContext(() -> vertx.timer(ms, TimeUnit.MILLISECONDS).mapEmpty());
  }

  String apiUrl() {
    return settings.apiUrl();
  }

  long requestTimeoutMs() {
    return settings.requestTimeout().toMillis();
  }

  /** Sends one request; the future fails only when no HTTP answer arrived. */
  Future<Resp> send(HttpMethod method, String url, Buffer body, String contentType, long timeoutMs) {
    return onContext(() -> http.request(options(method, url, timeoutMs)).compose(req -> {
      if (body == null) {
        return req.send();
      }
      req.putHeader(HttpHeaders.CONTENT_TYPE, contentType);
      return req.send(body);
    }).compose(resp -> resp.body().map(b -> new Resp(resp.statusCode(), resp.headers(), b))));
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
    return mapTransport(send(method, url, body, contentType, timeoutMs), op, mutating, timeoutMs);
  }

  /** Bounds {@code f} by {@code timeoutMs} and a second; no answer becomes the transport error. */
  private <T> Future<T> mapTransport(Future<T> f, String op, boolean mutating, long timeoutMs) {
    return f.timeout(timeoutMs + 1_000, TimeUnit.MILLISECONDS)
        .recover(t -> Future.failedFuture(transportError(op, t, mutating)));
  }

  private RequestOptions options(HttpMethod method, String url, long idleTimeoutMs) {
    return new RequestOptions().setMethod(method).setAbsoluteURI(url).setIdleTimeout(idleTimeoutMs)
        .putHeader(HttpHeaders.AUTHORIZATION, "Bearer " + settings.apiKey().reveal())
        .putHeader("X-Daytona-Source", SOURCE);
  }

  /**
   * A GET whose body is not buffered: a 2xx answer's response is paused at once and handed on to be read as
   * it arrives. {@code idleTimeoutMs} bounds the silence on the connection; the answer must come within the
   * request timeout, and one that arrives after that was given up is reset at once.
   */
  Future<Streamed> stream(String op, String url, long idleTimeoutMs) {
    Future<Streamed> f = onContext(() -> http.request(options(HttpMethod.GET, url, idleTimeoutMs))
        .compose(req -> req.send())
        .compose(resp -> {
          if (resp.statusCode() / 100 == 2) {
            resp.pause();
            return Future.succeededFuture(new Streamed(resp.statusCode(), resp.headers(), resp));
          }
          return resp.body().map(b -> new Streamed(resp.statusCode(), resp.headers(), null));
        }));
    Future<Streamed> bounded = mapTransport(f, op, false, requestTimeoutMs());
    bounded.onFailure(t -> f.onSuccess(late -> {
      if (late.response() != null) {
        ResponseDownload.stop(late.response());
      }
    }));
    return bounded;
  }

  /**
   * A POST whose body is {@code head}, then the file {@code file} ({@code size} bytes) streamed from disk
   * with backpressure, then {@code tail}, sent with its exact Content-Length. The file is closed however the
   * request ends; a request whose body cannot be sent whole is reset.
   */
  Future<Resp> postFile(String op, String url, String contentType, Buffer head, String file, long size, Buffer tail,
      long timeoutMs) {
    Future<Resp> f = onContext(() -> vertx.fileSystem().open(file, new OpenOptions().setRead(true).setWrite(false))
        .compose(in -> http.request(options(HttpMethod.POST, url, requestTimeoutMs())
                .putHeader(HttpHeaders.CONTENT_TYPE, contentType)
                .putHeader(HttpHeaders.CONTENT_LENGTH, String.valueOf(head.length() + size + tail.length())))
            .compose(req -> {
              Future<HttpClientResponse> answer = req.response();
              // the file is closed only once the pipe is done with it: an answer may come before the body was
              // sent, and closing the file under the pipe would leave the request unended on a pooled connection
              Future<Void> sent = req.write(head)
                  .compose(v -> in.pipe().endOnComplete(false).to(req))
                  .compose(v -> req.end(tail));
              sent.onFailure(t -> req.reset(0, t));
              return answer.compose(resp -> resp.body().map(b -> new Resp(resp.statusCode(), resp.headers(), b)))
                  .eventually(() -> sent.otherwiseEmpty());
            })
            .eventually(() -> in.close())));
    return mapTransport(f, op, true, timeoutMs);
  }

  /** As {@link #call}, with a JSON body and any non-2xx status turned into a contract error. */
  Future<Resp> expect(String op, boolean mutating, HttpMethod method, String url, JsonObject json) {
    return call(op, mutating, method, url, json == null ? null : json.toBuffer(), "application/json",
        requestTimeoutMs()).map(r -> {
          if (!r.ok()) {
            throw httpError(op, r.status(), r.headers());
          }
          return r;
        });
  }

  /** The body of a successful answer as a JSON object. */
  JsonObject json(String op, Resp r, boolean mutating) {
    try {
      return new JsonObject(r.body());
    } catch (DecodeException | ClassCastException e) {
      throw badResponse(op, mutating);
    }
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

  Future<Void> close() {
    return Future.all(http.close(), ws.close()).mapEmpty();
  }

  /** {@link HttpFailures#status}; Daytona's wait hint is {@code Retry-After} or {@code X-RateLimit-Reset}. */
  ProviderException httpError(String op, int status, MultiMap headers) {
    String wait = headers == null ? null : headers.get("Retry-After");
    if (wait == null && headers != null) {
      wait = headers.get("X-RateLimit-Reset");
    }
    return new ProviderException(HttpFailures.status(backend, op, status, wait));
  }

  ProviderException transportError(String op, Throwable t, boolean mutating) {
    return HttpFailures.transport(backend, op, t, mutating);
  }

  /** A 2xx answer the adapter cannot understand. */
  ProviderException badResponse(String op, boolean mutating) {
    return HttpFailures.badResponse(backend, op, mutating);
  }

}
