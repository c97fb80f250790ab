package ai.bespokelabs.sandbox.gateway.http;

import ai.bespokelabs.sandbox.core.config.GatewayConfig;
import ai.bespokelabs.sandbox.gateway.auth.WebSessions;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.Router;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

/**
 * The front door: REST on the event loop. Never blocks; talks to adapters over the event bus and to
 * PostgreSQL through the shared reactive pool. Deployed once per core.
 */
public final class HttpVerticle extends VerticleBase {
  public static final String OPENAPI_RESOURCE = "openapi.json";
  /** Larger client frames close the socket with 1009 (message too big). */
  static final int MAX_WEBSOCKET_FRAME = 1 << 20;

  private final GatewayConfig config;
  private final WebSessions credentials;
  private final AuditTrail audit;
  private final Function<Vertx, List<Endpoints>> endpoints;
  private final ConnectionGuard.Clients clients;
  private HttpServer server;

  /**
   * {@code endpoints} builds this verticle's own endpoint instances; {@code clients} counts every instance's
   * connections per client address.
   */
  public HttpVerticle(GatewayConfig config, WebSessions credentials, AuditTrail audit,
      Function<Vertx, List<Endpoints>> endpoints, ConnectionGuard.Clients clients) {
    this.config = config;
    this.credentials = credentials;
    this.audit = audit;
    this.endpoints = endpoints;
    this.clients = clients;
  }

  /** Builds the router; also used by the OpenAPI completeness test. */
  public static Router router(Vertx vertx, GatewayConfig config, WebSessions credentials, AuditTrail audit,
      List<Endpoints> endpoints) {
    Router router = Router.router(vertx);
    router.route().handler(new SecurityHeaders());
    // A body stays unread until its endpoint is known and its caller authenticated; then the endpoint reads
    // it as bytes (Api), never as a form. What no endpoint read (or the rest of one that was too large) is
    // drained once the answer is sent, up to the body limit again; beyond that the connection is closed.
    long limit = config.http().maxRequestBodyBytes();
    router.route().handler(ctx -> {
      HttpServerRequest req = ctx.request();
      if (Api.hasBody(req.method())) {
        req.pause();
        if (FilesApi.streamsBody(req)) {
          // an upload refused before its endpoint took it (no key, no scope): its body is never read, so the
          // connection cannot carry another request and is closed once the answer is written
          ctx.addHeadersEndHandler(v -> {
            if (!req.isEnded() && ctx.get(FilesApi.BODY_TAKEN) == null) {
              ctx.response().putHeader("Connection", "close");
              ctx.addBodyEndHandler(end -> req.connection().close());
            }
          });
        } else {
          ctx.addHeadersEndHandler(v -> {
            if (!req.isEnded() && ctx.get(BodyDeadline.STALLED) == null) {
              long[] left = {limit};
              req.handler(chunk -> {
                left[0] -= chunk.length();
                if (left[0] < 0) {
                  req.connection().close();
                }
              });
              req.resume();
            }
          });
        }
      }
      ctx.next();
    });
    Api api = new Api(router, limit, config.http().idleTimeoutSecs() * 1000L, credentials, audit);
    JsonObject openapi = openApiDocument(config.http().publicUrl());
    // the same document for every client: nothing of a request (its Host least of all) is written into it
    api.open(HttpMethod.GET, "/openapi.json", ctx -> Future.succeededFuture(Reply.ok(openapi)));
    String docs = DocsPage.render(openapi);
    Buffer css = resource("docs.css");
    api.open(HttpMethod.GET, "/docs", ctx -> {
      ctx.response().putHeader("Content-Type", "text/html; charset=utf-8").putHeader("Cache-Control", "no-store")
          .end(docs);
      return Future.succeededFuture(Reply.HANDLED);
    });
    api.open(HttpMethod.GET, DocsPage.STYLESHEET, ctx -> {
      ctx.response().putHeader("Content-Type", "text/css; charset=utf-8").end(css);
      return Future.succeededFuture(Reply.HANDLED);
    });
    endpoints.forEach(e -> e.register(api));
    ErrorMapper errors = new ErrorMapper();
    router.route().failureHandler(errors);
    for (int status : new int[] {400, 404, 405, 413, 415}) {
      router.errorHandler(status, ctx -> ErrorMapper.send(ctx, ErrorMapper.map(null, status)));
    }
    router.errorHandler(500, errors);
    return router;
  }

  static Buffer openApiDocument() {
    return resource(OPENAPI_RESOURCE);
  }

  /**
   * The served document: its server is {@code BESPOKE_PUBLIC_URL} when set; else it names none, which OpenAPI
   * reads as {@code /}, relative to where the client fetched the document (and which tools take better than an
   * explicit relative URL).
   */
  static JsonObject openApiDocument(java.util.Optional<String> publicUrl) {
    JsonObject doc = openApiDocument().toJsonObject();
    doc.remove("servers");
    publicUrl.ifPresent(url -> doc.put("servers", new io.vertx.core.json.JsonArray()
        .add(new JsonObject().put("url", url).put("description", "This gateway (BESPOKE_PUBLIC_URL)."))));
    return doc;
  }

  private static Buffer resource(String name) {
    try (InputStream in = HttpVerticle.class.getClassLoader().getResourceAsStream(name)) {
      if (in == null) {
        throw new IllegalStateException(name + " is missing from the classpath");
      }
      return Buffer.buffer(in.readAllBytes());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Override
  public Future<?> start() {
    HttpServerOptions options = new HttpServerOptions()
        .setHost(config.http().host())
        .setPort(config.http().port())
        .setTcpNoDelay(true)
        // The h2c upgrade of a large response strands common clients (curl, java.net.http) mid-switch;
        // serve cleartext as HTTP/1.1 and leave HTTP/2 to TLS (ALPN) at the proxy.
        .setHttp2ClearTextEnabled(false)
        .setMaxWebSocketFrameSize(MAX_WEBSOCKET_FRAME)
        .setMaxWebSocketMessageSize(MAX_WEBSOCKET_FRAME);
    ConnectionGuard guard = new ConnectionGuard(vertx, config.http(), clients);
    Router router = router(vertx, config, credentials, audit, endpoints.apply(vertx));
    router.route().order(-1).handler(ctx -> {
      guard.routed(ctx);
      ctx.next();
    });
    server = vertx.createHttpServer(options)
        .connectionHandler(guard::accept)
        .requestHandler(req -> {
          if (!guard.started(req)) {
            return;
          }
          if (!validHost(req)) {
            refuse(req, 400, "missing or invalid Host header");
            return;
          }
          router.handle(req);
        })
        .invalidRequestHandler(HttpVerticle::invalidRequest);
    return server.listen();
  }

  /**
   * Whether the request names one well-formed Host (RFC 9112: required from HTTP/1.1 on). Left to the router, a
   * missing or malformed one would fail every route with an exception.
   */
  static boolean validHost(HttpServerRequest req) {
    int hosts = req.headers().getAll("Host").size();
    if (hosts > 1) {
      return false;
    }
    return hosts == 0 ? req.version() == io.vertx.core.http.HttpVersion.HTTP_1_0 : req.authority() != null;
  }

  /**
   * A request the HTTP codec refused (control characters in a header, an over-long request line or header
   * block) gets the contract's {@code {"detail": ...}} body like every other error, and its connection is
   * closed: what follows on it cannot be framed.
   */
  static void invalidRequest(io.vertx.core.http.HttpServerRequest request) {
    Throwable cause = request.decoderResult().cause();
    int status;
    String detail;
    if (cause instanceof io.netty.handler.codec.http.TooLongHttpLineException) {
      status = 414;
      detail = "request line is too long";
    } else if (cause instanceof io.netty.handler.codec.http.TooLongHttpHeaderException) {
      status = 431;
      detail = "request headers are too large";
    } else {
      status = 400;
      detail = "malformed HTTP request";
    }
    refuse(request, status, detail);
  }

  /** Answers before any route ran, in the contract's shape, and closes: the request's body is left unread. */
  static void refuse(HttpServerRequest request, int status, String detail) {
    request.response().headers().addAll(SecurityHeaders.HEADERS);
    request.response().setStatusCode(status).putHeader("Content-Type", "application/json")
        .putHeader("Connection", "close")
        .end(new JsonObject().put("detail", detail).encode())
        .onComplete(v -> request.connection().close());
  }

  @Override
  public Future<?> stop() {
    return server == null ? Future.succeededFuture()
        : server.shutdown(config.node().shutdownGraceSecs(), TimeUnit.SECONDS);
  }
}
