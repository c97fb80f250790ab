package ai.bespokelabs.sandbox.adapters.tensorlake;

import ai.bespokelabs.sandbox.adapters.http.ProviderHttp;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.PoolOptions;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.json.JsonObject;

/**
 * The HTTP side of the Tensorlake adapter: one Vert.x HTTP client for the control plane and the in-sandbox
 * daemon, the Bearer key, and the mapping of every failure onto the error contract. Nothing here blocks:
 * every request is issued on the client's context (the adapter's). Response bodies of failed calls are never
 * read into errors or logs: they may echo credentials.
 */
final class TensorlakeClient extends ProviderHttp {
  /** Where a daemon request goes: the sandbox's daemon base URL and its id (the routing header). */
  record Daemon(String base, String sandboxId, String routingHint) {}

  static final String SANDBOX_HEADER = "X-Tensorlake-Sandbox-Id";
  static final String ROUTE_HEADER = "X-Tensorlake-Route-Hint";

  private final TensorlakeSettings settings;

  TensorlakeClient(Vertx vertx, TensorlakeSettings settings) {
    super(vertx, TensorlakeProvider.BACKEND, vertx.createHttpClient(new HttpClientOptions()
        .setConnectTimeout((int) Math.min(10_000, settings.requestTimeout().toMillis())).setKeepAlive(true)
        .setKeepAliveTimeout(30), new PoolOptions().setHttp1MaxSize(32)), settings.requestTimeout());
    this.settings = settings;
  }

  TensorlakeSettings settings() {
    return settings;
  }

  @Override
  protected RequestOptions authorize(RequestOptions o) {
    return o.putHeader(HttpHeaders.AUTHORIZATION, "Bearer " + settings.apiKey().reveal());
  }

  /** A control-plane URL. */
  String api(String path) {
    return settings.apiUrl() + path;
  }

  /** A request, to the daemon of {@code daemon}'s sandbox when given (its routing headers added). */
  private RequestOptions options(HttpMethod method, String url, long idleTimeoutMs, Daemon daemon) {
    RequestOptions o = options(method, url, idleTimeoutMs);
    if (daemon != null) {
      o.putHeader(SANDBOX_HEADER, daemon.sandboxId());
      if (daemon.routingHint() != null) {
        o.putHeader(ROUTE_HEADER, daemon.routingHint());
      }
    }
    return o;
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
    return call(op, mutating, options(method, url, timeoutMs, daemon), body, contentType, timeoutMs);
  }

  /** As {@link #call} with a JSON body (or none), any non-2xx status turned into the contract error. */
  Future<Resp> expect(String op, boolean mutating, HttpMethod method, String url, Daemon daemon, JsonObject json) {
    return ok(op, call(op, mutating, method, url, daemon, json == null ? null : json.toBuffer(), "application/json"));
  }

  /** A request whose answer is read as it arrives ({@link ProviderHttp#stream}). */
  Future<Streamed> stream(String op, HttpMethod method, String url, Daemon daemon, String accept, long idleTimeoutMs) {
    return stream(op, options(method, url, idleTimeoutMs, daemon).putHeader(HttpHeaders.ACCEPT, accept));
  }

  /** A PUT of the file {@code file} ({@code size} bytes) streamed from disk ({@link ProviderHttp#sendFile}). */
  Future<Resp> putFile(String op, String url, Daemon daemon, String file, long size, long timeoutMs) {
    return sendFile(op, options(HttpMethod.PUT, url, requestTimeoutMs(), daemon), "application/octet-stream",
        Buffer.buffer(), file, size, Buffer.buffer(), timeoutMs);
  }
}
