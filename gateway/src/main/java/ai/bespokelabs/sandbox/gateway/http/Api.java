package ai.bespokelabs.sandbox.gateway.http;

import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.gateway.auth.Principal;
import ai.bespokelabs.sandbox.core.Ids;
import ai.bespokelabs.sandbox.core.log.LogContext;
import ai.bespokelabs.sandbox.gateway.auth.WebSessions;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClosedException;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.json.Json;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import java.util.function.Function;

/**
 * Registers endpoints on a router using OpenAPI-style paths ({@code /v1/sandboxes/{sandbox_id}}), with
 * authentication and scope checks in front, and writes their {@link Reply}.
 */
public final class Api {
  static final String REQUEST_ID_HEADER = "X-Request-ID";
  private static final java.util.regex.Pattern REQUEST_ID = java.util.regex.Pattern.compile("[A-Za-z0-9_.:-]{1,128}");
  private static final org.slf4j.Logger ACCESS = org.slf4j.LoggerFactory.getLogger("ai.bespokelabs.sandbox.access");
  /** An endpoint that needs an authenticated product key. */
  @FunctionalInterface
  public interface Authed {
    Future<Reply> handle(RoutingContext ctx, Principal principal);
  }

  private static final String BODY = "api.body";

  private final Router router;
  private final long maxBodyBytes;
  private final long bodyIdleMillis;
  private final WebSessions credentials;
  private final AuditTrail audit;

  public Api(Router router, long maxBodyBytes, long bodyIdleMillis, WebSessions credentials, AuditTrail audit) {
    this.router = router;
    this.maxBodyBytes = maxBodyBytes;
    this.bodyIdleMillis = bodyIdleMillis;
    this.credentials = credentials;
    this.audit = audit;
  }

  /** An endpoint open to anyone (or doing its own authentication). */
  public void open(HttpMethod method, String path, Function<RoutingContext, Future<Reply>> endpoint) {
    router.route(method, vertxPath(path)).handler(ctx -> run(ctx, path,
        () -> readBody(ctx).compose(v -> endpoint.apply(ctx))));
  }

  /**
   * An endpoint requiring a product key holding {@code scope} ({@code null}: any valid key), given as a Bearer
   * header or through a dashboard session (with its CSRF token when the request changes state).
   */
  public void authed(HttpMethod method, String path, String scope, Authed endpoint) {
    router.route(method, vertxPath(path)).handler(ctx -> run(ctx, path, () -> pauseUpgrade(ctx)
        .authenticate(ctx.request())
        .compose(p -> {
          LogContext.put(LogContext.ORGANIZATION_ID, p.organizationId());
          if (AuditTrail.audited(method, path)) {
            audit.record(ctx, p, method, path);
          }
          if (scope != null) {
            p.require(scope);
          }
          return readBody(ctx).compose(v -> endpoint.handle(ctx, p));
        })));
  }

  /**
   * Static files under {@code prefix} (no authentication): the route names no method, so only GET and HEAD
   * are served and it stays out of the OpenAPI document's paths.
   */
  public void files(String prefix, io.vertx.core.Handler<RoutingContext> handler) {
    router.route(prefix + "/*").handler(handler);
  }

  /** Whether requests of this method carry a body the router leaves unread for the endpoint. */
  static boolean hasBody(HttpMethod m) {
    return m == HttpMethod.POST || m == HttpMethod.PUT || m == HttpMethod.PATCH || m == HttpMethod.DELETE;
  }

  /** The request's bytes, read before the endpoint ran (null for a method without a body). */
  public static Buffer body(RoutingContext ctx) {
    return ctx.get(BODY);
  }

  /**
   * Reads the body the router paused, as bytes whatever its content type says, up to the configured limit
   * (413 beyond); only once the endpoint is known and its caller authenticated. Uploads stream theirs.
   */
  private Future<Void> readBody(RoutingContext ctx) {
    HttpServerRequest req = ctx.request();
    if (!hasBody(req.method()) || FilesApi.streamsBody(req)) {
      return Future.succeededFuture();
    }
    long limit = maxBodyBytes;
    String length = req.getHeader("Content-Length");
    if (length != null && length.chars().allMatch(Character::isDigit) && length.length() < 19
        && Long.parseLong(length) > limit) {
      return Future.failedFuture(new ApiException(413, ErrorMapper.reason(413)));
    }
    if (ctx.response().closed()) {
      return Future.failedFuture(new HttpClosedException("the client left before its body was read"));
    }
    Promise<Void> done = Promise.promise();
    Buffer body = Buffer.buffer();
    BodyDeadline deadline = new BodyDeadline(ctx.vertx(), ctx, bodyIdleMillis, done::tryFail);
    done.future().onComplete(ar -> deadline.stop());
    req.handler(chunk -> {
      if (done.future().isComplete()) {
        return;
      }
      deadline.waiting();
      if (body.length() + chunk.length() > limit) {
        done.tryFail(new ApiException(413, ErrorMapper.reason(413)));
      } else {
        body.appendBuffer(chunk);
      }
    });
    req.exceptionHandler(done::tryFail);
    req.endHandler(v -> {
      ctx.put(BODY, body);
      done.tryComplete();
    });
    if ("100-continue".equalsIgnoreCase(req.getHeader("Expect"))) {
      req.response().writeContinue(); // the client waits for it before it sends the body
    }
    deadline.waiting();
    req.resume();
    return done.future();
  }

  /** A WebSocket handshake must still be unread when the endpoint upgrades it after asynchronous checks. */
  private WebSessions pauseUpgrade(RoutingContext ctx) {
    if ("websocket".equalsIgnoreCase(ctx.request().getHeader("Upgrade"))) {
      ctx.request().pause();
    }
    return credentials;
  }

  /**
   * Runs an endpoint on the request's own context: its log lines name the request (the client's
   * {@code X-Request-ID} when it is a plain token, else a new one, echoed back), and once answered one access
   * line says what it was ({@code ai.bespokelabs.sandbox.access}, off in the text format's defaults).
   */
  private static void run(RoutingContext ctx, String template, java.util.function.Supplier<Future<Reply>> work) {
    String given = ctx.request().getHeader(REQUEST_ID_HEADER);
    String requestId = given != null && REQUEST_ID.matcher(given).matches() ? given : Ids.newId("req");
    LogContext.put(LogContext.REQUEST_ID, requestId);
    LogContext.put(LogContext.SANDBOX_ID, ctx.pathParam("sandbox_id"));
    LogContext.put(LogContext.EXECUTION_ID, ctx.pathParam("execution_id"));
    ctx.response().putHeader(REQUEST_ID_HEADER, requestId);
    if (ACCESS.isInfoEnabled()) {
      long started = System.nanoTime();
      ctx.addEndHandler(v -> ACCESS.info("{} {} {} {} ms", ctx.request().method(), template,
          ctx.response().getStatusCode(), (System.nanoTime() - started) / 1_000_000));
    }
    Future<Reply> f;
    try {
      f = work.get();
    } catch (RuntimeException e) {
      f = Future.failedFuture(e);
    }
    f.onSuccess(r -> write(ctx, r)).onFailure(ctx::fail);
  }

  static void write(RoutingContext ctx, Reply r) {
    HttpServerResponse res = ctx.response();
    if (r == Reply.HANDLED || res.ended() || res.closed()) {
      return;
    }
    res.setStatusCode(r.status());
    if (r.headers() != null) {
      res.headers().addAll(r.headers());
    }
    if (r.body() == null) {
      res.end();
    } else {
      res.putHeader("content-type", "application/json").end(Json.encodeToBuffer(r.body()));
    }
  }

  /** {@code /a/{b}/c} to Vert.x's {@code /a/:b/c}. */
  public static String vertxPath(String openApiPath) {
    return openApiPath.replaceAll("\\{([a-z_]+)\\}", ":$1");
  }

  /** A required path parameter that must be an id of the given prefix; anything else is "not found". */
  public static String idParam(RoutingContext ctx, String name, String prefix, String notFound) {
    String id = ctx.pathParam(name);
    if (!ai.bespokelabs.sandbox.core.Ids.isValid(prefix, id)) {
      throw ApiException.notFound(notFound);
    }
    return id;
  }
}
