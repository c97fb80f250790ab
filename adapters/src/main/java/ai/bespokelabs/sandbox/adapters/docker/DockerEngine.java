package ai.bespokelabs.sandbox.adapters.docker;

import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpClientRequest;
import io.vertx.core.http.HttpClientResponse;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.PoolOptions;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.core.net.NetClient;
import io.vertx.core.net.NetClientOptions;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * A small, non-blocking Docker Engine API client over the Vert.x HTTP client (unix socket or TCP). Every call
 * runs on the adapter's context and fails with {@link ProviderException}s of the error contract; the engine's
 * own messages never leave this class.
 */
final class DockerEngine {
  /** The API version spoken; Docker and Podman's compatible API both serve it. */
  static final String API = "/v1.41";

  private final Vertx vertx;
  private final DockerHost host;
  private final String backend;
  private final HttpClient client;
  private final HttpClient streamClient;
  private final NetClient rawClient;
  private volatile Context context;

  DockerEngine(Vertx vertx, DockerHost host, String backend) {
    this.vertx = vertx;
    this.host = host;
    this.backend = backend;
    this.context = vertx.getOrCreateContext();
    // A connection per call: reusing pooled connections that the engine closes when idle lost a request now
    // and then (it waited until its timeout), and a local socket costs next to nothing to open.
    this.client = vertx.createHttpClient(new HttpClientOptions().setKeepAlive(false).setConnectTimeout(5_000),
        new PoolOptions().setHttp1MaxSize(16));
    // Streamed answers ask for keep-alive instead: with "Connection: close" the engine closes its side right
    // after the last byte, and a response paused for a slow reader lost what it had received but not yet
    // handed on (the close failed it). Each such connection is closed by us once its body was read, so none
    // is ever reused.
    this.streamClient = vertx.createHttpClient(new HttpClientOptions().setKeepAlive(true).setConnectTimeout(5_000),
        new PoolOptions().setHttp1MaxSize(16));
    // the hijacked exec streams: raw connections that speak HTTP only for their upgrade
    this.rawClient = vertx.createNetClient(new NetClientOptions().setConnectTimeout(5_000));
  }

  /** Binds the engine's calls to the adapter's context. */
  void useContext(Context context) {
    this.context = context;
  }

  Vertx vertx() {
    return vertx;
  }

  DockerHost host() {
    return host;
  }

  NetClient rawClient() {
    return rawClient;
  }

  /** An engine answer: status and body. */
  record Response(int status, Buffer body) {
    JsonObject json() {
      try {
        return body.length() == 0 ? new JsonObject() : body.toJsonObject();
      } catch (DecodeException | ClassCastException e) {
        return new JsonObject();
      }
    }

    JsonArray array() {
      try {
        return body.toJsonArray();
      } catch (DecodeException | ClassCastException e) {
        return new JsonArray();
      }
    }

    boolean ok() {
      return status / 100 == 2;
    }
  }

  Future<Response> get(String op, String uri, Duration timeout) {
    return call(op, HttpMethod.GET, uri, null, timeout);
  }

  Future<Response> post(String op, String uri, JsonObject body, Duration timeout) {
    return call(op, HttpMethod.POST, uri, body == null ? null : body.toBuffer(), timeout);
  }

  Future<Response> delete(String op, String uri, Duration timeout) {
    return call(op, HttpMethod.DELETE, uri, null, timeout);
  }

  private RequestOptions options(HttpMethod method, String uri, Duration timeout) {
    return new RequestOptions().setServer(host.vertxAddress()).setHost(host.authority()).setMethod(method)
        .setURI(API + uri).setIdleTimeout(timeout.toMillis());
  }

  /** One request with its whole body read; the engine's status is returned as is. */
  Future<Response> call(String op, HttpMethod method, String uri, Buffer body, Duration timeout) {
    return guarded(op, timeout, () -> client.request(options(method, uri, timeout))
        .compose(req -> {
          if (body != null) {
            req.putHeader("Content-Type", "application/json");
            return req.send(body);
          }
          return req.send();
        })
        .compose(resp -> resp.body().map(b -> new Response(resp.statusCode(), b))));
  }

  /** An engine answer whose body is streamed: a paused {@code body} on success, else the error read whole. */
  record Streamed(int status, HttpClientResponse body, Buffer error) {}

  /**
   * A GET whose body is streamed: a 2xx answer comes paused (the caller fetches it and must end it with
   * {@link #release}), any other with its (small) error body read whole.
   */
  Future<Streamed> stream(String op, String uri, Duration timeout) {
    return guarded(op, timeout, () -> streamClient.request(options(HttpMethod.GET, uri, timeout))
        .compose(HttpClientRequest::send)
        .compose(resp -> {
          if (resp.statusCode() / 100 == 2) {
            resp.pause();
            return Future.succeededFuture(new Streamed(resp.statusCode(), resp, null));
          }
          return resp.body().map(b -> new Streamed(resp.statusCode(), null, b));
        }));
  }

  /**
   * Ends a streamed answer: once it arrived whole its connection is closed (never reused); before that the
   * transfer is reset and the connection closed, so the unread rest reaches no other request.
   */
  static void release(HttpClientResponse resp, boolean complete) {
    io.vertx.core.http.HttpConnection connection = resp.request().connection();
    if (!complete) {
      resp.request().reset();
    }
    if (connection != null) {
      connection.close();
    }
  }

  /**
   * A PUT of {@code length} bytes that {@code body} writes into the request (respecting its write queue) and
   * ends; the answer is read whole.
   */
  Future<Response> put(String op, String uri, String contentType, long length, Duration timeout,
      Function<HttpClientRequest, Future<Void>> body) {
    return guarded(op, timeout, () -> client.request(options(HttpMethod.PUT, uri, timeout)
            .putHeader("Content-Type", contentType).putHeader("Content-Length", String.valueOf(length)))
        .compose(req -> {
          Future<HttpClientResponse> answer = req.response();
          return body.apply(req).compose(v -> answer, t -> {
            req.reset(0, t);
            return Future.failedFuture(t);
          });
        })
        .compose(resp -> resp.body().map(b -> new Response(resp.statusCode(), b))));
  }

  /**
   * Runs {@code work} on the engine's context (its connection pools are used from one event loop), fails it
   * with {@code backend_not_installed} when the engine's socket is missing, bounds it by {@code timeout}
   * plus a margin and maps transport failures to the error contract.
   */
  <T> Future<T> guarded(String op, Duration timeout, Supplier<Future<T>> work) {
    if (!host.present()) {
      return Future.failedFuture(notInstalled(op));
    }
    return onContext(work).timeout(timeout.plusSeconds(5).toMillis(), TimeUnit.MILLISECONDS)
        .recover(t -> Future.failedFuture(transportFailure(op, t)));
  }

  /** Starts {@code work} on the engine's context (at once when already there). */
  <T> Future<T> onContext(Supplier<Future<T>> work) {
    Context ctx = context;
    if (Vertx.currentContext() == ctx) {
      try {
        return work.get();
      } catch (RuntimeException e) {
        return Future.failedFuture(e);
      }
    }
    return ai.bespokelabs.sandbox.adapters.http.ClientContext.run(ctx, work);
  }

  /** What an operator does when the engine's unix socket does not exist. */
  static final String NOT_INSTALLED = "no Docker Engine API socket on this host (install Docker, or Podman with its"
      + " API service: apt-get install podman && systemctl enable --now podman.socket, then set DOCKER_HOST)";

  /** {@code backend_not_installed}: the engine's unix socket does not exist. */
  ProviderException notInstalled(String op) {
    return new ProviderException(ProviderError.unavailable(backend, op, NOT_INSTALLED));
  }

  /** A transport failure: refused or missing connections did nothing; anything later may have acted. */
  ProviderException transportFailure(String op, Throwable cause) {
    if (cause instanceof ProviderException pe) {
      return pe;
    }
    String type = cause == null ? "" : cause.getClass().getName();
    if (type.contains("Timeout")) {
      return failure(ErrorCode.TIMEOUT, op, true, ProviderError.Outcome.UNKNOWN, cause);
    }
    boolean refused = cause instanceof java.net.ConnectException || type.contains("ConnectException")
        || type.contains("ConnectTimeout");
    return failure(ErrorCode.CONNECTION, op, true,
        refused ? ProviderError.Outcome.FAILED : ProviderError.Outcome.UNKNOWN, cause);
  }

  /** An error answer of the engine, by status. */
  ProviderException statusFailure(String op, Response r, ErrorCode otherwise) {
    ProviderError e = switch (r.status()) {
      case 404 -> ProviderError.of(ErrorCode.NOT_FOUND, backend, op, false, ProviderError.Outcome.FAILED);
      case 401, 403 -> ProviderError.of(ErrorCode.AUTHENTICATION, backend, op, false, ProviderError.Outcome.FAILED);
      default -> ProviderError.of(otherwise, backend, op, r.status() >= 500,
          r.status() >= 500 ? ProviderError.Outcome.UNKNOWN : ProviderError.Outcome.FAILED);
    };
    return new ProviderException(e.withContext("provider_status", r.status()));
  }

  ProviderException failure(ErrorCode code, String op, boolean retryable, ProviderError.Outcome outcome,
      Throwable cause) {
    return new ProviderException(ProviderError.of(code, backend, op, retryable, outcome), cause);
  }

  static String q(String s) {
    return URLEncoder.encode(s, StandardCharsets.UTF_8);
  }

  /** The engine's error message for logs at debug level only (it may quote user input, never secrets). */
  static String message(Response r) {
    return r.json().getString("message", "");
  }

  Future<Void> close() {
    return Future.join(client.close(), streamClient.close(), rawClient.close()).mapEmpty();
  }
}
