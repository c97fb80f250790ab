package ai.bespokelabs.sandbox.gateway.auth;

import ai.bespokelabs.sandbox.core.Hmac;
import ai.bespokelabs.sandbox.core.Ids;
import ai.bespokelabs.sandbox.core.Times;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.repo.WebSessionRepository;
import ai.bespokelabs.sandbox.core.repo.WebSessionRepository.ActiveSession;
import ai.bespokelabs.sandbox.core.repo.WebSessionRepository.NewSession;
import io.vertx.core.Future;
import io.vertx.core.http.Cookie;
import io.vertx.core.http.CookieSameSite;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServerRequest;
import java.time.Clock;
import java.time.OffsetDateTime;
import java.util.Optional;

/**
 * Dashboard sessions: a product key exchanged for an expiring, HttpOnly, SameSite=Strict cookie. The cookie's
 * token ({@code bss_...}) and the CSRF token are stored only as HMACs with the pepper; the CSRF token is derived
 * from the session id, so login and {@code GET /v1/session} answer the same one. A session ends when revoked,
 * when it expires, and with its key (revoked or expired).
 */
public final class WebSessions {
  public static final String COOKIE = "bespoke_dashboard_session";
  public static final String CSRF_HEADER = "X-CSRF-Token";
  public static final String CSRF_REFUSED = "CSRF token is missing or invalid";
  static final String TOKEN_PREFIX = "bss_";

  /** A new session: the cookie's token (given to the browser once) and its CSRF token. */
  public record Login(Principal principal, String token, String csrfToken, int ttlSecs) {}

  private final WebSessionRepository sessions;
  private final Authenticator keys;
  private final Hmac hmac;
  private final Clock clock;
  private final int ttlSecs;
  private final boolean secureCookie;

  public WebSessions(WebSessionRepository sessions, Authenticator keys, Hmac hmac, Clock clock, int ttlSecs,
      boolean secureCookie) {
    this.sessions = sessions;
    this.keys = keys;
    this.hmac = hmac;
    this.clock = clock;
    this.ttlSecs = ttlSecs;
    this.secureCookie = secureCookie;
  }

  /** Exchanges a product key for a session (the key's own 401s when it is not valid). */
  public Future<Login> login(String apiKey) {
    return keys.authenticateKey(apiKey).compose(p -> {
      OffsetDateTime now = Times.now(clock);
      String id = Ids.newId("ses");
      String token = TOKEN_PREFIX + Ids.urlSafeToken(32);
      String csrf = csrfToken(id);
      return sessions.insert(new NewSession(id, p.organizationId(), p.keyId(), hmac.hex(token), hmac.hex(csrf), now,
              now.plusSeconds(ttlSecs)))
          .map(v -> new Login(new Principal(p.keyId(), p.keyName(), p.organizationId(), p.scopes(), "session", id),
              token, csrf, ttlSecs));
    });
  }

  /**
   * The caller of a request: its Bearer header when it has one (the header wins over a cookie), else its
   * session cookie. A state-changing request on a session must carry the session's CSRF token (403). An
   * invalid or expired cookie counts as none.
   */
  public Future<Principal> authenticate(HttpServerRequest req) {
    String authorization = req.getHeader("Authorization");
    if (authorization != null) {
      return keys.authenticate(authorization);
    }
    return session(req).map(found -> {
      ActiveSession s = found.orElseThrow(() -> ApiException.unauthorized(Authenticator.NO_CREDENTIALS));
      if (changesState(req.method()) && !csrfValid(s, req.getHeader(CSRF_HEADER))) {
        throw ApiException.forbidden(CSRF_REFUSED);
      }
      // a WebSocket handshake is a GET that can start and steer programs: on a session it must come from
      // this gateway's own pages (browsers always send Origin on one)
      if ("websocket".equalsIgnoreCase(req.getHeader("Upgrade")) && !sameOrigin(req)) {
        throw ApiException.forbidden(CSRF_REFUSED);
      }
      return principal(s);
    });
  }

  /** The valid session the request's cookie names, if any. */
  public Future<Optional<ActiveSession>> session(HttpServerRequest req) {
    Cookie cookie = req.getCookie(COOKIE);
    String token = cookie == null ? null : cookie.getValue();
    if (token == null || !token.startsWith(TOKEN_PREFIX) || token.length() > 128) {
      return Future.succeededFuture(Optional.empty());
    }
    return sessions.findActive(hmac.hex(token), Times.now(clock));
  }

  public boolean csrfValid(ActiveSession s, String given) {
    return given != null && given.length() <= 128 && Hmac.constantTimeEquals(hmac.hex(given), s.csrfDigest());
  }

  /** The session's CSRF token, derived from its id: {@code csrf_} + HMAC(pepper, "dashboard-csrf:" + id). */
  public String csrfToken(String sessionId) {
    return "csrf_" + hmac.hex("dashboard-csrf:" + sessionId);
  }

  public Future<Boolean> revoke(String sessionId) {
    return sessions.revoke(sessionId, Times.now(clock));
  }

  /** The Set-Cookie value that gives the browser its session. */
  public String cookie(Login login) {
    return base(login.token()).setMaxAge(login.ttlSecs()).encode();
  }

  /** The Set-Cookie value that deletes the session cookie. */
  public String expiredCookie() {
    return base("").setMaxAge(0).encode();
  }

  private Cookie base(String value) {
    return Cookie.cookie(COOKIE, value).setHttpOnly(true).setSecure(secureCookie).setSameSite(CookieSameSite.STRICT)
        .setPath("/");
  }

  public static Principal principal(ActiveSession s) {
    return new Principal(s.key().id(), s.key().name(), s.key().organizationId(), s.key().scopes(), "session", s.id());
  }

  /** Whether the request's Origin names the host and port it was sent to. */
  static boolean sameOrigin(HttpServerRequest req) {
    String origin = req.getHeader("Origin");
    io.vertx.core.net.HostAndPort to = req.authority();
    if (origin == null || to == null) {
      return false;
    }
    try {
      java.net.URI from = new java.net.URI(origin);
      int defaultPort = "https".equalsIgnoreCase(from.getScheme()) ? 443 : 80;
      int fromPort = from.getPort() >= 0 ? from.getPort() : defaultPort;
      int toPort = to.port() >= 0 ? to.port() : defaultPort;
      return to.host().equalsIgnoreCase(from.getHost()) && toPort == fromPort;
    } catch (java.net.URISyntaxException e) {
      return false;
    }
  }

  static boolean changesState(HttpMethod m) {
    return m == HttpMethod.POST || m == HttpMethod.PUT || m == HttpMethod.PATCH || m == HttpMethod.DELETE;
  }
}
