package ai.bespokelabs.sandbox.adapters.docker;

import ai.bespokelabs.sandbox.adapters.http.BodyInputStream;
import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A small Docker Engine API client over the Vert.x HTTP client (unix socket or TCP). Calls block the
 * calling thread (adapter methods run on virtual threads) and fail with {@link ProviderException}s of the
 * error contract; the engine's own messages never leave this class.
 */
final class DockerEngine implements AutoCloseable {
  /** The API version spoken; Docker and Podman's compatible API both serve it. */
  static final String API = "/v1.41";

  private final Vertx vertx;
  private final io.vertx.core.Context context;
  private final DockerHost host;
  private final HttpClient client;
  private final HttpClient streamClient;
  private final String backend;

  DockerEngine(Vertx vertx, DockerHost host, String backend) {
    this.vertx = vertx;
    this.context = vertx.getOrCreateContext();
    this.host = host;
    this.backend = backend;
    // A connection per call: reusing pooled connections that the engine closes when idle lost a request now
    // and then (it waited until its timeout), and a local socket costs next to nothing to open.
    this.client = vertx.createHttpClient(new HttpClientOptions().setKeepAlive(false).setConnectTimeout(5_000),
        new io.vertx.core.http.PoolOptions().setHttp1MaxSize(16));
    // Streamed answers ask for keep-alive instead: with "Connection: close" the engine closes its side right
    // after the last byte, and a response paused for a slow reader lost what it had received but not yet
    // handed on (the close failed it). Each such connection is closed by us once its body was read
    // (BodyInputStream), so none is ever reused.
    this.streamClient = vertx.createHttpClient(new HttpClientOptions().setKeepAlive(true).setConnectTimeout(5_000),
        new io.vertx.core.http.PoolOptions().setHttp1MaxSize(16));
  }

  DockerHost host() {
    return host;
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

  Response get(String op, String uri, Duration timeout) {
    return call(op, HttpMethod.GET, uri, null, timeout);
  }

  Response post(String op, String uri, JsonObject body, Duration timeout) {
    return call(op, HttpMethod.POST, uri, body == null ? null : body.toBuffer(), timeout);
  }

  Response delete(String op, String uri, Duration timeout) {
    return call(op, HttpMethod.DELETE, uri, null, timeout);
  }

  /** One request with its whole body read; the engine's status is returned as is. */
  Response call(String op, HttpMethod method, String uri, Buffer body, Duration timeout) {
    requirePresent(op);
    Future<Response> f = onContext(() -> client.request(new RequestOptions().setServer(host.vertxAddress())
            .setHost(host.authority()).setMethod(method).setURI(API + uri).setIdleTimeout(timeout.toMillis()))
        .compose(req -> {
          if (body != null) {
            req.putHeader("Content-Type", "application/json");
            return req.send(body);
          }
          return req.send();
        })
        .compose(resp -> resp.body().map(b -> new Response(resp.statusCode(), b))));
    return await(f, op, timeout.plusSeconds(5));
  }

  /** An engine answer whose body is read as a stream: on success the caller must close {@code body}. */
  record Streamed(int status, BodyInputStream body, Buffer error) {}

  /**
   * A GET whose body is streamed (not buffered): a 2xx answer comes with a {@link BodyInputStream}, any
   * other with its (small) error body read whole.
   */
  Streamed stream(String op, String uri, Duration timeout) {
    requirePresent(op);
    Future<Streamed> f = onContext(() -> streamClient.request(new RequestOptions().setServer(host.vertxAddress())
            .setHost(host.authority()).setMethod(HttpMethod.GET).setURI(API + uri).setIdleTimeout(timeout.toMillis()))
        .compose(req -> req.send())
        .compose(resp -> resp.statusCode() / 100 == 2
            ? Future.succeededFuture(new Streamed(resp.statusCode(), new BodyInputStream(resp,
                io.vertx.core.Vertx.currentContext(), true), null))
            : resp.body().map(b -> new Streamed(resp.statusCode(), null, b))));
    return await(f, op, timeout.plusSeconds(5));
  }

  /** A PUT whose body is the file {@code file} ({@code length} bytes), streamed from disk. */
  Response putFile(String op, String uri, String contentType, java.nio.file.Path file, long length, Duration timeout) {
    requirePresent(op);
    Future<Response> f = onContext(() -> vertx.fileSystem().open(file.toString(),
            new io.vertx.core.file.OpenOptions().setRead(true).setWrite(false))
        .compose(in -> client.request(new RequestOptions().setServer(host.vertxAddress()).setHost(host.authority())
                .setMethod(HttpMethod.PUT).setURI(API + uri).setIdleTimeout(timeout.toMillis())
                .putHeader("Content-Type", contentType).putHeader("Content-Length", String.valueOf(length)))
            .compose(req -> req.send(in))
            .compose(resp -> resp.body().map(b -> new Response(resp.statusCode(), b)))
            .eventually(() -> in.close())));
    return await(f, op, timeout.plusSeconds(5));
  }

  /**
   * Starts {@code work} on the client's context, so its connection pool is only used from one event loop
   * (requests issued straight from many virtual threads stalled now and then).
   */
  private <T> Future<T> onContext(java.util.function.Supplier<Future<T>> work) {
    return ai.bespokelabs.sandbox.adapters.http.ClientContext.run(context, work);
  }

  /** Fails with {@code backend_not_installed} when the engine's unix socket does not exist. */
  void requirePresent(String op) {
    if (!host.present()) {
      throw failure(ErrorCode.BACKEND_NOT_INSTALLED, op, false, ProviderError.Outcome.FAILED, null);
    }
  }

  <T> T await(Future<T> f, String op, Duration timeout) {
    try {
      return f.toCompletionStage().toCompletableFuture().get(timeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw failure(ErrorCode.TIMEOUT, op, true, ProviderError.Outcome.UNKNOWN, e);
    } catch (TimeoutException e) {
      throw failure(ErrorCode.TIMEOUT, op, true, ProviderError.Outcome.UNKNOWN, e);
    } catch (ExecutionException e) {
      throw transportFailure(op, e.getCause());
    }
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

  @Override
  public void close() {
    client.close();
  }
}
