package ai.bespokelabs.sandbox.adapters.tensorlake;

import ai.bespokelabs.sandbox.adapters.http.HttpFailures;
import ai.bespokelabs.sandbox.adapters.http.ResponseDownload;
import ai.bespokelabs.sandbox.adapters.http.ClientContext;
import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.MultiMap;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.file.OpenOptions;
import io.vertx.core.http.HttpClientAgent;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpClientResponse;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.PoolOptions;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonObject;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * The HTTP side of the Tensorlake adapter: one Vert.x HTTP client for the control plane and the in-sandbox
 * daemon, the Bearer key, and the mapping of every failure onto the error contract. Nothing here blocks:
 * every request is issued on the client's context (the adapter's). Response bodies of failed calls are never
 * read into errors or logs: they may echo credentials.
 */
final class TensorlakeClient {
  /** One answer: status, headers, whole body. */
  record Resp(int status, MultiMap headers, Buffer body) {
    boolean ok() {
      return status >= 200 && status < 300;
    }
  }

  /** A 2xx answer whose body is read as it arrives (paused); any other status with no response. */
  record Streamed(int status, MultiMap headers, HttpClientResponse response) {}

  /** Where a daemon request goes: the sandbox's daemon base URL and its id (the routing header). */
  record Daemon(String base, String sandboxId, String routingHint) {}

  static final String SANDBOX_HEADER = "X-Tensorlake-Sandbox-Id";
  static final String ROUTE_HEADER = "X-Tensorlake-Route-Hint";

  private final Vertx vertx;
  private final TensorlakeSettings settings;
  private final HttpClientAgent http;
  private volatile Context context;

  TensorlakeClient(Vertx vertx, TensorlakeSettings settings) {
    this.vertx = vertx;
    this.settings = settings;
    int connectMs = (int) Math.min(10_000, settings.requestTimeout().toMillis());
    this.http = vertx.createHttpClient(new HttpClientOptions().setConnectTimeout(connectMs).setKeepAlive(true)
        .setKeepAliveTimeout(30), new PoolOptions().setHttp1MaxSize(32));
    this.context = vertx.getOrCreateContext();
  }

  void useContext(Context context) {
    this.context = context;
  }

  Vertx vertx() {
    return vertx;
  }

  TensorlakeSettings settings() {
    return settings;
  }

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

  Future<Void> delay(long ms) {
    return onContext(() -> vertx.timer(ms, TimeUnit.MILLISECONDS).mapEmpty());
  }

  long requestTimeoutMs() {
    return settings.requestTimeout().toMillis();
  }

  static String encode(String s) {
    return URLEncoder.encode(s, StandardCharsets.UTF_8).replace("+", "%20");
  }

  /** A control-plane URL. */
  String api(String path) {
    return settings.apiUrl() + path;
  }

  private RequestOptions options(HttpMethod method, String url, long idleTimeoutMs, Daemon daemon) {
    RequestOptions o = new RequestOptions().setMethod(method).setAbsoluteURI(url).setIdleTimeout(idleTimeoutMs)
        .putHeader(HttpHeaders.AUTHORIZATION, "Bearer " + settings.apiKey().reveal());
    if (daemon != null) {
      o.putHeader(SANDBOX_HEADER, daemon.sandboxId());
      if (daemon.routingHint() != null) {
        o.putHeader(ROUTE_HEADER, daemon.routingHint());
      }
    }
    return o;
  }

  /** Sends one request; the future fails only when no HTTP answer arrived. */
  private Future<Resp> send(HttpMethod method, String url, Daemon daemon, Buffer body, String contentType,
      long timeoutMs) {
    return onContext(() -> http.request(options(method, url, timeoutMs, daemon)).compose(req -> {
      if (body == null) {
        return req.send();
      }
      req.putHeader(HttpHeaders.CONTENT_TYPE, contentType);
      return req.send(body);
    }).compose(resp -> resp.body().map(b -> new Resp(resp.statusCode(), resp.headers(), b))));
  }

  /**
   * Sends one request and completes with its answer whatever its status; no answer becomes the
   * {@code timeout} or {@code connection} provider error.
   *
   * @param mutating whether the request may change provider state (its loss makes the outcome unknown)
   */
  Future<Resp> call(String op, boolean mutating, HttpMethod method, String url, Daemon daemon, Buffer body,
      String contentType) {
    long timeoutMs = requestTimeoutMs();
    return mapTransport(send(method, url, daemon, body, contentType, timeoutMs), op, mutating, timeoutMs);
  }

  /** As {@link #call} with a JSON body (or none), any non-2xx status turned into the contract error. */
  Future<Resp> expect(String op, boolean mutating, HttpMethod method, String url, Daemon daemon, JsonObject json) {
    return call(op, mutating, method, url, daemon, json == null ? null : json.toBuffer(), "application/json")
        .map(r -> {
          if (!r.ok()) {
            throw httpError(op, r.status(), r.headers());
          }
          return r;
        });
  }

  private <T> Future<T> mapTransport(Future<T> f, String op, boolean mutating, long timeoutMs) {
    return f.timeout(timeoutMs + 1_000, TimeUnit.MILLISECONDS)
        .recover(t -> Future.failedFuture(transportError(op, t, mutating)));
  }

  /**
   * A request whose answer is read as it arrives: a 2xx answer's response is handed on paused. The answer
   * must come within the request timeout ({@code idleTimeoutMs} bounds silence after that); one arriving after
   * it was given up is reset.
   */
  Future<Streamed> stream(String op, HttpMethod method, String url, Daemon daemon, String accept, long idleTimeoutMs) {
    Future<Streamed> f = onContext(() -> http.request(options(method, url, idleTimeoutMs, daemon)
            .putHeader(HttpHeaders.ACCEPT, accept))
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
   * A PUT of the file {@code file} ({@code size} bytes) streamed from disk with backpressure; closed on every path,
   * but only once the pipe is done with it: the answer may come before the pipe read the file's end, and closing
   * the file then would fail the pipe and leave the request unended on a connection the pool hands out again.
   */
  Future<Resp> putFile(String op, String url, Daemon daemon, String file, long size, long timeoutMs) {
    Future<Resp> f = onContext(() -> vertx.fileSystem().open(file, new OpenOptions().setRead(true).setWrite(false))
        .compose(in -> http.request(options(HttpMethod.PUT, url, requestTimeoutMs(), daemon)
                .putHeader(HttpHeaders.CONTENT_TYPE, "application/octet-stream")
                .putHeader(HttpHeaders.CONTENT_LENGTH, String.valueOf(size)))
            .compose(req -> {
              Future<HttpClientResponse> answer = req.response();
              Future<Void> sent = in.pipe().endOnComplete(false).to(req).compose(v -> req.end());
              sent.onFailure(t -> req.reset(0, t));
              return answer.compose(resp -> resp.body().map(b -> new Resp(resp.statusCode(), resp.headers(), b)))
                  .eventually(() -> sent.otherwiseEmpty());
            })
            .eventually(() -> in.close())));
    return mapTransport(f, op, true, timeoutMs);
  }

  /** The body of a successful answer as a JSON object. */
  JsonObject json(String op, Resp r, boolean mutating) {
    try {
      return new JsonObject(r.body());
    } catch (DecodeException | ClassCastException e) {
      throw badResponse(op, mutating);
    }
  }

  static ProviderException notFound(String op) {
    return new ProviderException(ProviderError.of(ErrorCode.NOT_FOUND, TensorlakeProvider.BACKEND, op, false,
        ProviderError.Outcome.FAILED));
  }

  Future<Void> close() {
    return http.close();
  }

  ProviderException httpError(String op, int status, MultiMap headers) {
    return new ProviderException(HttpFailures.status(TensorlakeProvider.BACKEND, op, status,
        headers.get("Retry-After")));
  }

  ProviderException transportError(String op, Throwable t, boolean mutating) {
    return HttpFailures.transport(TensorlakeProvider.BACKEND, op, t, mutating);
  }

  ProviderException badResponse(String op, boolean mutating) {
    return HttpFailures.badResponse(TensorlakeProvider.BACKEND, op, mutating);
  }

}
