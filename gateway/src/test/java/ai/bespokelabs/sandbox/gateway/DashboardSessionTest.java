package ai.bespokelabs.sandbox.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.gateway.TestGateway.Resp;
import ai.bespokelabs.sandbox.testkit.Waits;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Dashboard sessions over HTTP, as the seed's release tests check them: the cookie's flags, the CSRF rules,
 * Bearer winning over a cookie, logout revoking the session, the pages' headers, and that only HMACs of the
 * tokens are stored. Local login is on here ({@link DashboardLocalOffTest} has it off).
 */
class DashboardSessionTest {
  @RegisterExtension
  static final GatewayExtension GATEWAY = new GatewayExtension(() -> Map.of(
      "BESPOKE_ENABLE_LOCAL_DASHBOARD_LOGIN", "true", "BESPOKE_DASHBOARD_SESSION_TTL_SECS", "3600"));
  static TestGateway gw;
  static String admin;

  @BeforeAll
  static void start() {
    admin = gw.bootstrap("Acme");
  }

  record Login(String cookie, String csrf, Resp resp) {}

  static Login login(String key) {
    Resp r = gw.post("/v1/dashboard/session", null, new JsonObject().put("api_key", key));
    assertThat(r.status()).as(r.body()).isEqualTo(200);
    String setCookie = r.header("Set-Cookie");
    String token = setCookie.substring(0, setCookie.indexOf(';'));
    return new Login(token, r.json().getString("csrf_token"), r);
  }

  @Test
  void login_sets_a_strict_http_only_secure_cookie_and_answers_the_csrf_token() {
    Login l = login(admin);
    assertThat(l.resp().json().getBoolean("authenticated")).isTrue();
    assertThat(l.resp().json().getInteger("expires_in")).isEqualTo(3600);
    assertThat(l.csrf()).matches("csrf_[0-9a-f]{64}");
    String cookie = l.resp().header("Set-Cookie");
    assertThat(cookie).startsWith("bespoke_dashboard_session=bss_").contains("Max-Age=3600").contains("Path=/");
    // attribute names are case-insensitive
    assertThat(cookie.toLowerCase()).contains("; secure").contains("; httponly").contains("; samesite=strict");
    assertThat(l.resp().header("Cache-Control")).isEqualTo("no-store");

    Resp session = gw.get("/v1/session", null, "Cookie", l.cookie());
    assertThat(session.status()).isEqualTo(200);
    assertThat(session.json().getString("auth_mode")).isEqualTo("session");
    assertThat(session.json().getString("csrf_token")).as("stable for the session").isEqualTo(l.csrf());
    Resp bearer = gw.get("/v1/session", admin);
    assertThat(bearer.json().getString("auth_mode")).isEqualTo("api_key");
    assertThat(bearer.json().containsKey("csrf_token")).isFalse();
  }

  @Test
  void login_with_a_bad_key_is_refused_with_the_keys_message() {
    Resp r = gw.post("/v1/dashboard/session", null, new JsonObject().put("api_key", "bsk_live_nope"));
    assertThat(r.status()).isEqualTo(401);
    assertThat(r.detail()).isEqualTo("invalid API key");
    assertThat(r.header("Set-Cookie")).isNull();
    assertThat(gw.post("/v1/dashboard/session", null, new JsonObject()).status()).isEqualTo(422);
  }

  @Test
  void state_changing_requests_on_a_session_need_the_csrf_token_and_bearer_ones_never_do() {
    Login l = login(admin);
    JsonObject body = new JsonObject().put("name", "from the dashboard").put("scopes", new JsonArray().add("sandboxes:read"));
    Resp none = gw.post("/v1/api-keys", null, body, "Cookie", l.cookie());
    assertThat(none.status()).isEqualTo(403);
    assertThat(none.detail()).isEqualTo("CSRF token is missing or invalid");
    Resp wrong = gw.post("/v1/api-keys", null, body, "Cookie", l.cookie(), "X-CSRF-Token", "csrf_00");
    assertThat(wrong.status()).isEqualTo(403);
    assertThat(wrong.detail()).isEqualTo("CSRF token is missing or invalid");
    Resp other = gw.post("/v1/api-keys", null, body, "Cookie", l.cookie(), "X-CSRF-Token", login(admin).csrf());
    assertThat(other.status()).as("another session's token").isEqualTo(403);
    Resp right = gw.post("/v1/api-keys", null, body, "Cookie", l.cookie(), "X-CSRF-Token", l.csrf());
    assertThat(right.status()).isEqualTo(201);
    // the audit trail names the session the request came through
    String path = "/v1/api-keys";
    Waits.upTo(10).untilAsserted(() -> assertThat(gw.gateway.pool().preparedQuery("SELECT count(*) FROM audit_log a"
            + " JOIN web_sessions s ON s.id = a.session_id WHERE a.action = 'api_key.create' AND a.resource_id = $1"
            + " AND a.outcome = 'success'")
        .execute(io.vertx.sqlclient.Tuple.of(path)).toCompletionStage().toCompletableFuture().get()
        .iterator().next().getLong(0)).isGreaterThanOrEqualTo(1L));
    // reads need no token
    assertThat(gw.get("/v1/sandboxes", null, "Cookie", l.cookie()).status()).isEqualTo(200);
    // Bearer requests never need one, even with a cookie beside them
    assertThat(gw.post("/v1/api-keys", admin, body, "Cookie", l.cookie()).status()).isEqualTo(201);
  }

  @Test
  void a_websocket_handshake_on_a_session_must_come_from_the_gateways_own_origin() throws Exception {
    Login l = login(admin);
    String sbx = gw.sandbox(admin, null).getString("id");
    String port = gw.base.substring(gw.base.lastIndexOf(':') + 1);
    String path = "/v1/sandboxes/" + sbx + "/executions/ws";
    assertThat(handshake(path, l.cookie(), "https://evil.example", port)).startsWith("HTTP/1.1 403");
    assertThat(handshake(path, l.cookie(), null, port)).startsWith("HTTP/1.1 403");
    assertThat(handshake(path, l.cookie(), "http://127.0.0.1:" + port, port)).startsWith("HTTP/1.1 101");
  }

  /** The status line of a raw WebSocket handshake. */
  private static String handshake(String path, String cookie, String origin, String port) throws Exception {
    try (java.net.Socket s = new java.net.Socket("127.0.0.1", Integer.parseInt(port))) {
      s.setSoTimeout(10_000);
      String req = "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1:" + port + "\r\nUpgrade: websocket\r\n"
          + "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
          + "Cookie: " + cookie + "\r\n" + (origin == null ? "" : "Origin: " + origin + "\r\n") + "\r\n";
      s.getOutputStream().write(req.getBytes(java.nio.charset.StandardCharsets.US_ASCII));
      s.getOutputStream().flush();
      return new java.io.BufferedReader(new java.io.InputStreamReader(s.getInputStream(),
          java.nio.charset.StandardCharsets.US_ASCII)).readLine();
    }
  }

  @Test
  void the_bearer_header_wins_over_a_session_cookie() {
    String readOnly = gw.key(admin, "sandboxes:read");
    Login full = login(admin);
    Resp r = gw.get("/v1/session", readOnly, "Cookie", full.cookie());
    assertThat(r.json().getString("auth_mode")).isEqualTo("api_key");
    assertThat(r.json().getJsonArray("scopes")).isEqualTo(new JsonArray().add("sandboxes:read"));
    // a bad Bearer header is not rescued by a good cookie
    Resp bad = gw.get("/v1/session", "bsk_live_bad", "Cookie", full.cookie());
    assertThat(bad.status()).isEqualTo(401);
    assertThat(bad.detail()).isEqualTo("invalid API key");
  }

  @Test
  void a_session_carries_its_keys_scopes() {
    String readOnly = gw.key(admin, "sandboxes:read");
    Login l = login(readOnly);
    Resp s = gw.get("/v1/session", null, "Cookie", l.cookie());
    assertThat(s.json().getBoolean("can_terminate")).isFalse();
    Resp denied = gw.get("/v1/policies/current", null, "Cookie", l.cookie());
    assertThat(denied.status()).isEqualTo(403);
    assertThat(denied.detail()).isEqualTo("API key requires scope: policies:read");
  }

  @Test
  void logout_needs_the_csrf_token_revokes_the_session_and_deletes_the_cookie() {
    Login l = login(admin);
    Resp noToken = gw.delete("/v1/dashboard/session", null, "Cookie", l.cookie());
    assertThat(noToken.status()).isEqualTo(403);
    assertThat(noToken.detail()).isEqualTo("CSRF token is missing or invalid");
    Resp wrongToken = gw.delete("/v1/dashboard/session", null, "Cookie", l.cookie(), "X-CSRF-Token", "csrf_x");
    assertThat(wrongToken.status()).isEqualTo(403);
    Resp out = gw.delete("/v1/dashboard/session", null, "Cookie", l.cookie(), "X-CSRF-Token", l.csrf());
    assertThat(out.status()).isEqualTo(204);
    assertThat(out.header("Set-Cookie")).startsWith("bespoke_dashboard_session=;").contains("Max-Age=0");
    Resp after = gw.get("/v1/session", null, "Cookie", l.cookie());
    assertThat(after.status()).isEqualTo(401);
    assertThat(after.detail()).isEqualTo("Bearer API key or dashboard session required");
    Resp again = gw.delete("/v1/dashboard/session", null, "Cookie", l.cookie(), "X-CSRF-Token", l.csrf());
    assertThat(again.status()).isEqualTo(422);
    assertThat(again.detail()).isEqualTo("dashboard session is not active");
    assertThat(gw.delete("/v1/dashboard/session", admin).status()).as("no session at all").isEqualTo(422);

    Waits.upTo(10).untilAsserted(() -> {
      JsonArray actions = new JsonArray();
      gw.get("/v1/audit?limit=200", admin).json().getJsonArray("items")
          .forEach(i -> actions.add(((JsonObject) i).getString("action")));
      assertThat(actions.getList()).contains("dashboard.login", "dashboard.logout");
    });
  }

  @Test
  void a_revoked_key_ends_its_sessions_and_a_forged_cookie_is_ignored() {
    Resp issued = gw.post("/v1/api-keys", admin, new JsonObject().put("name", "short").put("scopes",
        new JsonArray().add("sandboxes:read")));
    String keyId = issued.json().getString("id");
    Login l = login(issued.json().getString("secret"));
    assertThat(gw.get("/v1/session", null, "Cookie", l.cookie()).status()).isEqualTo(200);
    assertThat(gw.delete("/v1/api-keys/" + keyId, admin).status()).isEqualTo(204);
    assertThat(gw.get("/v1/session", null, "Cookie", l.cookie()).status()).isEqualTo(401);
    Resp forged = gw.get("/v1/session", null, "Cookie", "bespoke_dashboard_session=bss_forged");
    assertThat(forged.status()).isEqualTo(401);
    assertThat(forged.detail()).isEqualTo("Bearer API key or dashboard session required");
  }

  @Test
  void a_session_ends_at_its_expiry() {
    Login l = login(admin);
    gw.clock.advance(java.time.Duration.ofSeconds(3599));
    assertThat(gw.get("/v1/session", null, "Cookie", l.cookie()).status()).isEqualTo(200);
    gw.clock.advance(java.time.Duration.ofSeconds(2));
    Resp expired = gw.get("/v1/session", null, "Cookie", l.cookie());
    assertThat(expired.status()).isEqualTo(401);
    assertThat(expired.detail()).isEqualTo("Bearer API key or dashboard session required");
    assertThat(gw.delete("/v1/dashboard/session", null, "Cookie", l.cookie(), "X-CSRF-Token", l.csrf()).status())
        .isEqualTo(422);
  }

  @Test
  void only_hmacs_of_the_tokens_are_stored() throws Exception {
    Login l = login(admin);
    String token = l.cookie().substring(l.cookie().indexOf('=') + 1);
    var rows = gw.gateway.pool().query("SELECT token_digest, csrf_digest, expires_at - created_at AS ttl FROM web_sessions")
        .execute().toCompletionStage().toCompletableFuture().get();
    assertThat(rows.size()).isGreaterThan(0);
    StringBuilder all = new StringBuilder();
    rows.forEach(r -> all.append(r.getString(0)).append(' ').append(r.getString(1)).append('\n'));
    assertThat(all.toString()).doesNotContain(token).doesNotContain(l.csrf()).matches("(?s)([0-9a-f]{64} [0-9a-f]{64}\n)+");
  }

  @Test
  void pages_are_served_with_the_strict_headers_and_local_login_when_enabled() {
    Resp root = gw.get("/", null);
    assertThat(root.status()).isEqualTo(307);
    assertThat(root.header("Location")).isEqualTo("/dashboard");
    Resp page = gw.get("/dashboard", null);
    assertThat(page.status()).isEqualTo(200);
    assertThat(page.header("Content-Type")).startsWith("text/html");
    assertThat(page.header("Cache-Control")).isEqualTo("no-store");
    assertThat(page.header("Content-Security-Policy")).contains("script-src 'self'").contains("style-src 'self'")
        .doesNotContain("unsafe-inline");
    assertThat(page.header("X-Frame-Options")).isEqualTo("DENY");
    assertThat(page.body()).contains("data-auth=\"session\"").doesNotContain("<script>").doesNotContain("style=");
    Resp local = gw.get("/dashboard/local", null);
    assertThat(local.status()).isEqualTo(200);
    assertThat(local.header("Cache-Control")).isEqualTo("no-store");
    assertThat(local.body()).contains("data-auth=\"local\"");
  }

  @Test
  void assets_come_from_the_jar_with_their_types() {
    Resp js = gw.get("/dashboard/assets/app.js", null);
    assertThat(js.status()).isEqualTo(200);
    assertThat(js.header("Content-Type")).contains("javascript");
    assertThat(js.header("X-Content-Type-Options")).isEqualTo("nosniff");
    Resp css = gw.get("/dashboard/assets/dashboard.css", null);
    assertThat(css.status()).isEqualTo(200);
    assertThat(css.header("Content-Type")).startsWith("text/css");
    assertThat(gw.get("/dashboard/assets/missing.js", null).status()).isEqualTo(404);
    // nothing outside the assets directory: not the page's template, not the jar's configuration
    assertThat(gw.get("/dashboard/assets/%2e%2e/index.html", null).status()).isEqualTo(404);
    assertThat(gw.get("/dashboard/assets/..%2findex.html", null).status()).isIn(400, 404);
    assertThat(gw.get("/dashboard/assets/..%2f..%2fconf%2fgateway.json", null).status()).isIn(400, 404);
    assertThat(gw.get("/dashboard/assets/%2e%2e/%2e%2e/conf/gateway.json", null).status()).isEqualTo(404);
  }
}
