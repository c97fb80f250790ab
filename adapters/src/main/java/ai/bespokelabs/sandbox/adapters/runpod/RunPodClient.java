package ai.bespokelabs.sandbox.adapters.runpod;

import ai.bespokelabs.sandbox.adapters.http.HttpFailures;
import ai.bespokelabs.sandbox.adapters.http.ClientContext;
import ai.bespokelabs.sandbox.core.error.ErrorCode;
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
import io.vertx.core.http.PoolOptions;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * The HTTP side of the RunPod adapter: one Vert.x HTTP client for REST v1, the Bearer key, and the mapping of
 * every failure onto the error contract. Nothing here blocks: every request is issued on the client's context
 * (the adapter's). Response bodies of failed calls are never read into errors or logs: they may echo credentials.
 */
final class RunPodClient {
  /** One answer: status, headers, whole body. */
  record Resp(int status, MultiMap headers, Buffer body) {
    boolean ok() {
      return status >= 200 && status < 300;
    }
  }

  private final Vertx vertx;
  private final RunPodSettings settings;
  private final HttpClientAgent http;
  private volatile Context context;

  RunPodClient(Vertx vertx, RunPodSettings settings) {
    this.vertx = vertx;
    this.settings = settings;
    int connectMs = (int) Math.min(10_000, settings.requestTimeout().toMillis());
    this.http = vertx.createHttpClient(new HttpClientOptions().setConnectTimeout(connectMs).setKeepAlive(true)
        .setKeepAliveTimeout(30), new PoolOptions().setHttp1MaxSize(16));
    this.context = vertx.getOrCreateContext();
  }

  void useContext(Context context) {
    this.context = context;
  }

  Vertx vertx() {
    return vertx;
  }

  Context context() {
    return context;
  }

  RunPodSettings settings() {
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

  /** A REST v1 URL. */
  String api(String path) {
    return settings.apiUrl() + path;
  }

  /**
   * Sends one request and completes with its answer whatever its status; no answer becomes the
   * {@code timeout} or {@code connection} provider error.
   *
   * @param mutating whether the request may change provider state (its loss makes the outcome unknown)
   */
  Future<Resp> call(String op, boolean mutating, HttpMethod method, String url, JsonObject json) {
    long timeoutMs = requestTimeoutMs();
    RequestOptions o = new RequestOptions().setMethod(method).setAbsoluteURI(url).setIdleTimeout(timeoutMs)
        .putHeader(HttpHeaders.AUTHORIZATION, "Bearer " + settings.apiKey().reveal());
    Future<Resp> sent = onContext(() -> http.request(o).compose(req -> {
      if (json == null) {
        return req.send();
      }
      req.putHeader(HttpHeaders.CONTENT_TYPE, "application/json");
      return req.send(json.toBuffer());
    }).compose(resp -> resp.body().map(b -> new Resp(resp.statusCode(), resp.headers(), b))));
    return sent.timeout(timeoutMs + 1_000, TimeUnit.MILLISECONDS)
        .recover(t -> Future.failedFuture(transportError(op, t, mutating)));
  }

  /** As {@link #call}, any non-2xx status turned into the contract error. */
  Future<Resp> expect(String op, boolean mutating, HttpMethod method, String url, JsonObject json) {
    return call(op, mutating, method, url, json).map(r -> {
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

  /** The body of a successful answer as a JSON array. */
  JsonArray array(String op, Resp r) {
    try {
      return new JsonArray(r.body());
    } catch (DecodeException | ClassCastException e) {
      throw badResponse(op, false);
    }
  }

  static ProviderException notFound(String op) {
    return new ProviderException(ProviderError.of(ErrorCode.NOT_FOUND, RunPodProvider.BACKEND, op, false,
        ProviderError.Outcome.FAILED));
  }

  Future<Void> close() {
    return http.close();
  }

  ProviderException httpError(String op, int status, MultiMap headers) {
    return new ProviderException(HttpFailures.status(RunPodProvider.BACKEND, op, status, headers.get("Retry-After")));
  }

  static ProviderException transportError(String op, Throwable t, boolean mutating) {
    return HttpFailures.transport(RunPodProvider.BACKEND, op, t, mutating);
  }

  static ProviderException badResponse(String op, boolean mutating) {
    return HttpFailures.badResponse(RunPodProvider.BACKEND, op, mutating);
  }

}
