package ai.bespokelabs.sandbox.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.gateway.TestGateway.Resp;
import ai.bespokelabs.sandbox.testkit.Waits;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** Product keys, the admin bootstrap, every 401 variant and scope checks, over real HTTP. */
@ExtendWith(GatewayExtension.class)
class AuthAndKeysTest {
  static TestGateway gw;
  static String admin;

  @BeforeAll
  static void start() {
    admin = gw.bootstrap("Acme");
  }

  @Test
  void health_is_open_and_carries_security_headers() {
    Resp r = gw.get("/healthz", null);
    assertThat(r.status()).isEqualTo(200);
    assertThat(r.json()).isEqualTo(new JsonObject().put("status", "ok"));
    assertThat(r.header("Content-Security-Policy")).startsWith("default-src 'none'");
    assertThat(r.header("X-Frame-Options")).isEqualTo("DENY");
    assertThat(r.header("X-Content-Type-Options")).isEqualTo("nosniff");
    assertThat(r.header("Referrer-Policy")).isEqualTo("no-referrer");
    assertThat(r.header("Strict-Transport-Security")).isEqualTo("max-age=63072000; includeSubDomains");
    Resp missing = gw.get("/v1/nothing-here", admin);
    assertThat(missing.status()).isEqualTo(404);
    assertThat(missing.header("X-Frame-Options")).isEqualTo("DENY");
    assertThat(missing.json().getString("detail")).isEqualTo("Not Found");
  }

  @Test
  void bootstrap_returns_an_initial_key_with_every_scope() {
    Resp r = gw.post("/v1/organizations", null, new JsonObject().put("name", "Beta"),
        "X-Control-Plane-Admin", TestGateway.ADMIN);
    assertThat(r.status()).isEqualTo(201);
    JsonObject key = r.json().getJsonObject("api_key");
    assertThat(key.getString("secret")).startsWith("bsk_live_").hasSize(9 + 43);
    assertThat(key.getString("prefix")).isEqualTo(key.getString("secret").substring(0, 17));
    assertThat(key.getJsonArray("scopes")).isEqualTo(new JsonArray().add("*"));
    assertThat(key.getString("name")).isEqualTo("Initial key");
    assertThat(r.json().getJsonObject("organization").getString("id")).matches("org_[0-9a-f]{32}");
  }

  @Test
  void bootstrap_rejects_a_wrong_or_missing_admin_token() {
    JsonObject body = new JsonObject().put("name", "Evil");
    Resp wrong = gw.post("/v1/organizations", null, body, "X-Control-Plane-Admin", "nope");
    assertThat(wrong.status()).isEqualTo(401);
    assertThat(wrong.detail()).isEqualTo("invalid control-plane admin token");
    assertThat(gw.post("/v1/organizations", null, body).status()).isEqualTo(401);
    Resp invalid = gw.post("/v1/organizations", null, new JsonObject().put("name", ""),
        "X-Control-Plane-Admin", TestGateway.ADMIN);
    assertThat(invalid.status()).isEqualTo(422);
    assertThat(invalid.json().getJsonArray("detail").getJsonObject(0).getString("type")).isEqualTo("string_too_short");
  }

  @Test
  void every_authentication_failure_has_its_message() {
    // no credentials at all: the message names both ways in (a key, a dashboard session)
    assertThat(gw.get("/v1/session", null).detail()).isEqualTo("Bearer API key or dashboard session required");
    Resp basic = gw.send("GET", "/v1/session", null, null, "Authorization", "Basic abc");
    assertThat(basic.status()).isEqualTo(401);
    assertThat(basic.detail()).isEqualTo("Bearer API key required");
    assertThat(gw.get("/v1/session", "not-a-product-key").detail()).isEqualTo("invalid API key");
    Resp unknown = gw.get("/v1/session", "bsk_live_" + "x".repeat(43));
    assertThat(unknown.status()).isEqualTo(401);
    assertThat(unknown.detail()).isEqualTo("invalid API key");
    assertThat(unknown.header("WWW-Authenticate")).isEqualTo("Bearer");
  }

  @Test
  void a_revoked_key_is_invalid_and_revoking_twice_is_not_found() {
    String k = gw.key(admin, "sandboxes:read");
    assertThat(gw.get("/v1/session", k).status()).isEqualTo(200);
    String id = gw.get("/v1/session", k).json().getString("api_key_id");
    assertThat(gw.delete("/v1/api-keys/" + id, admin).status()).isEqualTo(204);
    Resp after = gw.get("/v1/session", k);
    assertThat(after.status()).isEqualTo(401);
    assertThat(after.detail()).isEqualTo("invalid API key");
    Resp again = gw.delete("/v1/api-keys/" + id, admin);
    assertThat(again.status()).isEqualTo(404);
    assertThat(again.detail()).isEqualTo("API key not found");
    assertThat(gw.delete("/v1/api-keys/not-an-id", admin).status()).isEqualTo(404);
  }

  /**
   * Keys are cached per node: a key revoked by another node (its row updated: PostgreSQL notifies every node)
   * is refused here at once, and last use is still recorded.
   */
  @Test
  void a_key_revoked_by_another_node_is_refused_once_announced() throws Exception {
    String k = gw.key(admin, "sandboxes:read");
    Resp session = gw.get("/v1/session", k);
    assertThat(session.status()).isEqualTo(200);
    String id = session.json().getString("api_key_id");
    Waits.upTo(5).alias("last use recorded after the response").until(() -> gw.gateway.pool()
        .preparedQuery("SELECT last_used_at FROM api_keys WHERE id = $1").execute(io.vertx.sqlclient.Tuple.of(id))
        .await().iterator().next().getOffsetDateTime(0) != null);
    gw.gateway.pool().preparedQuery("UPDATE api_keys SET revoked_at = now() WHERE id = $1")
        .execute(io.vertx.sqlclient.Tuple.of(id)).await();
    Resp after = Waits.upTo(5).until(() -> gw.get("/v1/session", k), r -> r.status() != 200);
    assertThat(after.status()).isEqualTo(401);
    assertThat(after.detail()).isEqualTo("invalid API key");
  }

  @Test
  void an_expired_key_says_so() {
    String expires = OffsetDateTime.now(gw.clock).plusMinutes(5).withOffsetSameInstant(ZoneOffset.UTC).toString();
    Resp created = gw.post("/v1/api-keys", admin, new JsonObject().put("name", "short-lived")
        .put("scopes", new JsonArray().add("sandboxes:read")).put("expires_at", expires));
    assertThat(created.status()).isEqualTo(201);
    String k = created.json().getString("secret");
    assertThat(gw.get("/v1/sandboxes", k).status()).isEqualTo(200);
    gw.clock.advance(Duration.ofMinutes(6));
    Resp r = gw.get("/v1/sandboxes", k);
    assertThat(r.status()).isEqualTo(401);
    assertThat(r.detail()).isEqualTo("API key has expired");
  }

  @Test
  void key_creation_validates_scopes_and_expiry() {
    Resp empty = gw.post("/v1/api-keys", admin, new JsonObject().put("name", "x").put("scopes", new JsonArray()));
    assertThat(empty.status()).isEqualTo(422);
    Resp unknown = gw.post("/v1/api-keys", admin,
        new JsonObject().put("name", "x").put("scopes", new JsonArray().add("root")));
    assertThat(unknown.status()).isEqualTo(422);
    assertThat(unknown.detail()).isEqualTo("unknown scope: root");
    // as pydantic reads it; the gateway keeps instants, so a datetime without a timezone is UTC
    Resp naive = gw.post("/v1/api-keys", admin, new JsonObject().put("name", "x").put("expires_at", "2030-01-01T00:00:00"));
    assertThat(naive.status()).as(naive.body()).isEqualTo(201);
    assertThat(java.time.OffsetDateTime.parse(naive.json().getString("expires_at")).toInstant())
        .isEqualTo(java.time.Instant.parse("2030-01-01T00:00:00Z"));
    Resp garbled = gw.post("/v1/api-keys", admin, new JsonObject().put("name", "x").put("expires_at", "2030-13-45"));
    assertThat(garbled.status()).isEqualTo(422);
    Resp sorted = gw.post("/v1/api-keys", admin, new JsonObject().put("name", "x")
        .put("scopes", new JsonArray().add("usage:read").add("sandboxes:read").add("usage:read")));
    assertThat(sorted.json().getJsonArray("scopes")).isEqualTo(new JsonArray().add("sandboxes:read").add("usage:read"));
  }

  @Test
  void listing_keys_never_shows_secrets() {
    Resp r = gw.get("/v1/api-keys", admin);
    assertThat(r.status()).isEqualTo(200);
    JsonArray keys = r.array();
    assertThat(keys).isNotEmpty();
    assertThat(r.body()).doesNotContain(admin).doesNotContain("secret").doesNotContain("digest");
    assertThat(keys.getJsonObject(0).fieldNames()).containsExactlyInAnyOrder("id", "name", "prefix", "scopes",
        "created_at", "last_used_at", "expires_at", "revoked_at");
  }

  @Test
  void missing_scopes_are_403_with_the_scope_named() {
    String reader = gw.key(admin, "sandboxes:read");
    Resp create = gw.post("/v1/sandboxes", reader, new JsonObject().put("backend", "local"));
    assertThat(create.status()).isEqualTo(403);
    assertThat(create.detail()).isEqualTo("API key requires scope: sandboxes:create");
    assertThat(gw.get("/v1/api-keys", reader).detail()).isEqualTo("API key requires scope: keys:write");
    JsonObject sbx = gw.sandbox(admin, null);
    Resp exec = gw.post("/v1/sandboxes/" + sbx.getString("id") + "/execute", reader,
        new JsonObject().put("command", "true"));
    assertThat(exec.detail()).isEqualTo("API key requires scope: sandboxes:execute");
    assertThat(gw.delete("/v1/sandboxes/" + sbx.getString("id"), reader).detail())
        .isEqualTo("API key requires scope: sandboxes:terminate");
  }

  @Test
  void legacy_sandboxes_write_grants_the_sandbox_write_operations_only() {
    String legacy = gw.key(admin, "sandboxes:write");
    JsonObject sbx = gw.sandbox(legacy, null);
    String id = sbx.getString("id");
    assertThat(gw.post("/v1/sandboxes/" + id + "/execute", legacy, new JsonObject().put("command", "true")).status())
        .isEqualTo(200);
    assertThat(gw.get("/v1/sandboxes", legacy).status()).isEqualTo(403);
    assertThat(gw.delete("/v1/sandboxes/" + id, legacy).status()).isEqualTo(200);
  }

  @Test
  void session_reports_role_and_capabilities() {
    JsonObject all = gw.get("/v1/session", admin).json();
    assertThat(all.getString("role")).isEqualTo("administrator");
    assertThat(all.getString("auth_mode")).isEqualTo("api_key");
    assertThat(all.getBoolean("can_terminate")).isTrue();
    JsonObject reader = gw.get("/v1/session", gw.key(admin, "sandboxes:read")).json();
    assertThat(reader.getString("role")).isEqualTo("observer");
    assertThat(reader.getBoolean("can_terminate")).isFalse();
    assertThat(reader.getBoolean("can_view_usage")).isFalse();
    JsonObject operator = gw.get("/v1/session", gw.key(admin, "sandboxes:terminate", "usage:read")).json();
    assertThat(operator.getString("role")).isEqualTo("operator");
    assertThat(operator.getJsonArray("scopes")).isEqualTo(new JsonArray().add("sandboxes:terminate").add("usage:read"));
    assertThat(operator.getBoolean("can_view_usage")).isTrue();
  }
}
