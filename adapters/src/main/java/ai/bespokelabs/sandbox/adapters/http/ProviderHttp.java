package ai.bespokelabs.sandbox.adapters.http;

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
import io.vertx.core.http.HttpClientResponse;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * What every REST adapter needs of HTTP, written once: requests issued on the client's context (the adapter's,
 * so the connection pool is only used from one event loop), the provider's authentication on every request
 * ({@link #authorize}), answers bounded by the request timeout, expected statuses, JSON bodies, bodies streamed
 * in and out with backpressure, and every failure mapped onto the error contract ({@link HttpFailures}:
 * statuses with their wait hints, lost requests by whether they may have changed provider state). Response
 * bodies of failed calls are never read into errors or logs: they may echo credentials. Nothing here blocks.
 */
public abstract class ProviderHttp {
  /** One answer: status, headers, whole body. */
  public record Resp(int status, MultiMap headers, Buffer body) {
    public boolean ok() {
      return status >= 200 && status < 300;
    }
  }

  /**
   * An answer whose body is read as it arrives: a 2xx answer comes with its {@code response}, paused, which the
   * caller reads or resets; any other with none (its body was read and dropped).
   */
  public record Streamed(int status, MultiMap headers, HttpClientResponse response) {}

  protected final Vertx vertx;
  protected final String backend;
  protected final HttpClientAgent http;
  private final long requestTimeoutMs;
  private volatile Context context;

  protected ProviderHttp(Vertx vertx, String backend, HttpClientAgent http, Duration requestTimeout) {
    this.vertx = vertx;
    this.backend = backend;
    this.http = http;
    this.requestTimeoutMs = requestTimeout.toMillis();
    this.context = vertx.getOrCreateContext();
  }

  /** Adds the provider's credentials and fixed headers to a request. */
  protected abstract RequestOptions authorize(RequestOptions options);

  /** Uses the HTTP clients from {@code context} from now on (the adapter's, so its calls need no hand-off). */
  public void useContext(Context context) {
    this.context = context;
  }

  public Context context() {
    return context;
  }

  public Vertx vertx() {
    return vertx;
  }

  public long requestTimeoutMs() {
    return requestTimeoutMs;
  }

  /** Starts {@code work} on the client's context (at once when already there) and hands back its outcome. */
  public <T> Future<T> onContext(Supplier<Future<T>> work) {
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
  public Future<Void> delay(long ms) {
    return onContext(() -> vertx.timer(ms, TimeUnit.MILLISECONDS).mapEmpty());
  }

  /** A path segment or query value, percent-encoded (a space as {@code %20}). */
  public static String encode(String s) {
    return URLEncoder.encode(s, StandardCharsets.UTF_8).replace("+", "%20");
  }

  /** An authorized request to {@code url}, silent for at most {@code idleTimeoutMs} once sent. */
  protected RequestOptions options(HttpMethod method, String url, long idleTimeoutMs) {
    return authorize(new RequestOptions().setMethod(method).setAbsoluteURI(url).setIdleTimeout(idleTimeoutMs));
  }

  /** Sends one request; the future fails only when no HTTP answer arrived. */
  protected Future<Resp> send(RequestOptions options, Buffer body, String contentType) {
    return onContext(() -> http.request(options).compose(req -> {
      if (body == null) {
        return req.send();
      }
      req.putHeader(HttpHeaders.CONTENT_TYPE, contentType);
      return req.send(body);
    }).compose(resp -> resp.body().map(b -> new Resp(resp.statusCode(), resp.headers(), b))));
  }

  /**
   * Sends one request and completes with its answer, whatever its status, within {@code timeoutMs} and a
   * second; no answer becomes the {@code timeout} or {@code connection} provider error.
   *
   * @param mutating whether the request may change provider state (its loss makes the outcome unknown)
   */
  protected Future<Resp> call(String op, boolean mutating, RequestOptions options, Buffer body, String contentType,
      long timeoutMs) {
    return bounded(send(options, body, contentType), op, mutating, timeoutMs);
  }

  /** As {@link #call} with a JSON body (or none) to {@code url}, within the request timeout. */
  public Future<Resp> call(String op, boolean mutating, HttpMethod method, String url, JsonObject json) {
    long timeoutMs = requestTimeoutMs;
    return call(op, mutating, options(method, url, timeoutMs), json == null ? null : json.toBuffer(),
        "application/json", timeoutMs);
  }

  /** As {@link #call(String, boolean, HttpMethod, String, JsonObject)}, any non-2xx status a contract error. */
  public Future<Resp> expect(String op, boolean mutating, HttpMethod method, String url, JsonObject json) {
    return ok(op, call(op, mutating, method, url, json));
  }

  /** {@code answer}, any non-2xx status turned into the contract error. */
  protected Future<Resp> ok(String op, Future<Resp> answer) {
    return answer.map(r -> {
      if (!r.ok()) {
        throw httpError(op, r.status(), r.headers());
      }
      return r;
    });
  }

  /** Bounds {@code f} by {@code timeoutMs} and a second; no answer becomes the transport error. */
  protected <T> Future<T> bounded(Future<T> f, String op, boolean mutating, long timeoutMs) {
    return f.timeout(timeoutMs + 1_000, TimeUnit.MILLISECONDS)
        .recover(t -> Future.failedFuture(transportError(op, t, mutating)));
  }

  /**
   * A request whose answer is read as it arrives: a 2xx answer's response is handed on paused. The answer must
   * come within the request timeout ({@code options}' idle timeout bounds silence after that); one arriving
   * after it was given up is reset.
   */
  protected Future<Streamed> stream(String op, RequestOptions options) {
    Future<Streamed> f = onContext(() -> http.request(options)
        .compose(req -> req.send())
        .compose(resp -> {
          if (resp.statusCode() / 100 == 2) {
            resp.pause();
            return Future.succeededFuture(new Streamed(resp.statusCode(), resp.headers(), resp));
          }
          return resp.body().map(b -> new Streamed(resp.statusCode(), resp.headers(), null));
        }));
    Future<Streamed> answered = bounded(f, op, false, requestTimeoutMs);
    answered.onFailure(t -> f.onSuccess(late -> {
      if (late.response() != null) {
        ResponseDownload.stop(late.response());
      }
    }));
    return answered;
  }

  /**
   * A request whose body is {@code head}, then the file {@code file} ({@code size} bytes) streamed from disk
   * with backpressure, then {@code tail}, sent with its exact Content-Length. The file is closed on every path,
   * but only once the pipe is done with it: an answer may come before the body was sent, and closing the file
   * under the pipe would leave the request unended on a pooled connection. A body that cannot be sent whole
   * resets the request.
   */
  protected Future<Resp> sendFile(String op, RequestOptions options, String contentType, Buffer head, String file,
      long size, Buffer tail, long timeoutMs) {
    Future<Resp> f = onContext(() -> vertx.fileSystem().open(file, new OpenOptions().setRead(true).setWrite(false))
        .compose(in -> http.request(options.putHeader(HttpHeaders.CONTENT_TYPE, contentType)
                .putHeader(HttpHeaders.CONTENT_LENGTH, String.valueOf(head.length() + size + tail.length())))
            .compose(req -> {
              Future<HttpClientResponse> answer = req.response();
              Future<Void> sent = (head.length() == 0 ? Future.<Void>succeededFuture() : req.write(head))
                  .compose(v -> in.pipe().endOnComplete(false).to(req))
                  .compose(v -> req.end(tail));
              sent.onFailure(t -> req.reset(0, t));
              return answer.compose(resp -> resp.body().map(b -> new Resp(resp.statusCode(), resp.headers(), b)))
                  .eventually(() -> sent.otherwiseEmpty());
            })
            .eventually(() -> in.close())));
    return bounded(f, op, true, timeoutMs);
  }

  /** The body of a successful answer as a JSON object. */
  public JsonObject json(String op, Resp r, boolean mutating) {
    try {
      return new JsonObject(r.body());
    } catch (DecodeException | ClassCastException e) {
      throw badResponse(op, mutating);
    }
  }

  /** The body of a successful answer as a JSON array. */
  public JsonArray array(String op, Resp r) {
    try {
      return new JsonArray(r.body());
    } catch (DecodeException | ClassCastException e) {
      throw badResponse(op, false);
    }
  }

  public Future<Void> close() {
    return http.close();
  }

  /** The contract error for a failure status ({@link HttpFailures#status}, with {@code Retry-After}). */
  public ProviderException httpError(String op, int status, MultiMap headers) {
    return new ProviderException(HttpFailures.status(backend, op, status,
        headers == null ? null : headers.get("Retry-After")));
  }

  public ProviderException transportError(String op, Throwable t, boolean mutating) {
    return HttpFailures.transport(backend, op, t, mutating);
  }

  /** A 2xx answer the adapter cannot understand. */
  public ProviderException badResponse(String op, boolean mutating) {
    return HttpFailures.badResponse(backend, op, mutating);
  }

  /** The resource is gone (or never was). */
  public ProviderException notFound(String op) {
    return new ProviderException(ProviderError.of(ErrorCode.NOT_FOUND, backend, op, false,
        ProviderError.Outcome.FAILED));
  }
}
