package ai.bespokelabs.sandbox.gateway.http;

import ai.bespokelabs.sandbox.core.Times;
import ai.bespokelabs.sandbox.core.config.DashboardConfig;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.repo.OperationsRepository;
import ai.bespokelabs.sandbox.gateway.auth.Principal;
import ai.bespokelabs.sandbox.gateway.auth.WebSessions;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;
import io.vertx.ext.web.handler.StaticHandler;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The operator's dashboard: its pages and assets (plain HTML, CSS and JavaScript modules from the jar) and its
 * login and logout, which exchange a product key for a session cookie and revoke it.
 */
public final class DashboardApi implements Endpoints {
  private static final Logger LOG = LoggerFactory.getLogger(DashboardApi.class);
  static final String PAGE = "dashboard/index.html";
  static final String ASSETS = "dashboard/assets";
  static final String SESSION_PATH = "/v1/dashboard/session";

  private final DashboardConfig config;
  private final WebSessions sessions;
  private final OperationsRepository operations;
  private final Clock clock;
  private final Buffer sessionPage;
  private final Buffer localPage;

  public DashboardApi(DashboardConfig config, WebSessions sessions, OperationsRepository operations, Clock clock) {
    this.config = config;
    this.sessions = sessions;
    this.operations = operations;
    this.clock = clock;
    String page = resource(PAGE);
    this.sessionPage = Buffer.buffer(page);
    this.localPage = Buffer.buffer(page.replace("data-auth=\"session\"", "data-auth=\"local\""));
  }

  @Override
  public void register(Api api) {
    api.open(HttpMethod.GET, "/", ctx -> Future.succeededFuture(Reply.of(307, null).withHeader("Location", "/dashboard")));
    api.open(HttpMethod.GET, "/dashboard", ctx -> page(ctx, sessionPage));
    api.open(HttpMethod.GET, "/dashboard/local", ctx -> {
      if (!config.localLogin()) {
        throw ApiException.notFound("local dashboard login is disabled");
      }
      return page(ctx, localPage);
    });
    api.files("/dashboard/assets", StaticHandler.create(ASSETS).setCachingEnabled(false)
        .setDirectoryListing(false).setIncludeHidden(false).setDefaultContentEncoding("UTF-8"));
    api.open(HttpMethod.POST, SESSION_PATH, this::login);
    api.open(HttpMethod.DELETE, SESSION_PATH, this::logout);
  }

  private static Future<Reply> page(RoutingContext ctx, Buffer html) {
    ctx.response().putHeader("Content-Type", "text/html; charset=utf-8").putHeader("Cache-Control", "no-store")
        .end(html);
    return Future.succeededFuture(Reply.HANDLED);
  }

  /**
   * {@code POST /v1/dashboard/session}: a product key in, a session cookie and its CSRF token out. Only as JSON,
   * which the dashboard sends: a page elsewhere can make a browser post a form or text here without asking, and
   * would sign it into the page's own organization (login CSRF).
   */
  private Future<Reply> login(RoutingContext ctx) {
    if (!isJson(ctx.request().getHeader("Content-Type"))) {
      throw new ApiException(415, "the sign-in takes a JSON body: Content-Type must be application/json");
    }
    Body body = Body.parse(Api.body(ctx));
    String key = body.string("api_key", true, 1, 512);
    body.check();
    return sessions.login(key).map(login -> {
      audit(login.principal(), "dashboard.login", 200);
      return Reply.ok(new JsonObject().put("authenticated", true).put("csrf_token", login.csrfToken())
              .put("expires_in", login.ttlSecs()))
          .withHeader("Set-Cookie", sessions.cookie(login))
          .withHeader("Cache-Control", "no-store");
    });
  }

  /** {@code application/json}, with or without parameters (a charset). */
  static boolean isJson(String contentType) {
    if (contentType == null) {
      return false;
    }
    int semicolon = contentType.indexOf(';');
    String type = (semicolon < 0 ? contentType : contentType.substring(0, semicolon)).trim();
    return type.equalsIgnoreCase("application/json");
  }

  /** {@code DELETE /v1/dashboard/session}: revokes the cookie's session (with its CSRF token) and deletes the cookie. */
  private Future<Reply> logout(RoutingContext ctx) {
    return sessions.session(ctx.request()).compose(found -> {
      var s = found.orElseThrow(() -> ApiException.invalid("dashboard session is not active"));
      if (!sessions.csrfValid(s, ctx.request().getHeader(WebSessions.CSRF_HEADER))) {
        throw ApiException.forbidden(WebSessions.CSRF_REFUSED);
      }
      return sessions.revoke(s.id()).map(revoked -> {
        if (!revoked) {
          throw ApiException.invalid("dashboard session is not active");
        }
        audit(WebSessions.principal(s), "dashboard.logout", 204);
        return Reply.noContent().withHeader("Set-Cookie", sessions.expiredCookie());
      });
    });
  }

  /** As every audited request: the status it answered and its (here empty) query. */
  private void audit(Principal p, String action, int status) {
    operations.audit(p.organizationId(), p.keyId(), p.sessionId(), action, SESSION_PATH, "success",
            new JsonObject().put("status_code", status).put("query", new JsonObject()), Times.now(clock))
        .onFailure(e -> LOG.error("Audit entry {} could not be written: {}", action, e.toString()));
  }

  private static String resource(String name) {
    try (InputStream in = DashboardApi.class.getClassLoader().getResourceAsStream(name)) {
      if (in == null) {
        throw new IllegalStateException(name + " is missing from the classpath");
      }
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
