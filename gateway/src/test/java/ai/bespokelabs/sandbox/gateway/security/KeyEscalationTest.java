package ai.bespokelabs.sandbox.gateway.security;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.gateway.GatewayExtension;
import ai.bespokelabs.sandbox.gateway.TestGateway;
import ai.bespokelabs.sandbox.gateway.TestGateway.Resp;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** A key holding {@code keys:write} issues and revokes only keys whose scopes it holds itself. */
@Tag("security")
@ExtendWith(GatewayExtension.class)
class KeyEscalationTest {
  static TestGateway gw;
  static String admin;

  @BeforeAll
  static void start() {
    admin = gw.bootstrap("Acme");
  }

  static Resp mint(String by, String... scopes) {
    JsonObject body = new JsonObject().put("name", "minted");
    if (scopes.length > 0) {
      body.put("scopes", new JsonArray(List.of(scopes)));
    }
    return gw.post("/v1/api-keys", by, body);
  }

  static String idOf(String secret) {
    String prefix = secret.substring(0, 17);
    JsonArray keys = gw.get("/v1/api-keys", admin).array();
    for (int i = 0; i < keys.size(); i++) {
      if (prefix.equals(keys.getJsonObject(i).getString("prefix"))) {
        return keys.getJsonObject(i).getString("id");
      }
    }
    throw new AssertionError("no key with prefix " + prefix);
  }

  @Test
  void a_keys_write_key_cannot_mint_a_wider_key() {
    String writer = gw.key(admin, "keys:write");
    Resp star = mint(writer, "*");
    assertThat(star.status()).isEqualTo(403);
    assertThat(star.detail()).isEqualTo("API key requires scope: * to issue a key with it");
    Resp byDefault = mint(writer);
    assertThat(byDefault.status()).as("no scopes given means *").isEqualTo(403);
    Resp other = mint(writer, "keys:write", "sandboxes:read");
    assertThat(other.status()).isEqualTo(403);
    assertThat(other.detail()).isEqualTo("API key requires scope: sandboxes:read to issue a key with it");
    assertThat(gw.get("/v1/api-keys", admin).array().stream()
        .filter(k -> ((JsonObject) k).getString("name").equals("minted"))).isEmpty();
    assertThat(mint(writer, "keys:write").status()).isEqualTo(201);
    assertThat(mint(admin, "*").status()).as("* covers everything").isEqualTo(201);
  }

  @Test
  void the_legacy_scope_is_covered_by_what_it_expands_to() {
    String legacy = gw.key(admin, "keys:write", "sandboxes:write");
    assertThat(mint(legacy, "sandboxes:execute", "providers:reconcile").status()).isEqualTo(201);
    assertThat(mint(legacy, "sandboxes:write").status()).isEqualTo(201);
    assertThat(mint(legacy, "sandboxes:read").status()).isEqualTo(403);
    String expanded = gw.key(admin, "keys:write", "sandboxes:create", "sandboxes:execute", "sandboxes:terminate",
        "providers:reconcile");
    assertThat(mint(expanded, "sandboxes:write").status()).isEqualTo(201);
    String partial = gw.key(admin, "keys:write", "sandboxes:create", "sandboxes:execute");
    Resp denied = mint(partial, "sandboxes:write");
    assertThat(denied.status()).isEqualTo(403);
    assertThat(denied.detail()).isEqualTo("API key requires scope: sandboxes:write to issue a key with it");
  }

  @Test
  void a_keys_write_key_cannot_revoke_a_wider_key() {
    String writer = gw.key(admin, "keys:write");
    String reader = gw.key(admin, "sandboxes:read");
    Resp top = gw.delete("/v1/api-keys/" + idOf(admin), writer);
    assertThat(top.status()).isEqualTo(403);
    assertThat(top.detail()).isEqualTo("API key requires scope: * to revoke a key with it");
    Resp wider = gw.delete("/v1/api-keys/" + idOf(reader), writer);
    assertThat(wider.status()).isEqualTo(403);
    assertThat(wider.detail()).isEqualTo("API key requires scope: sandboxes:read to revoke a key with it");
    assertThat(gw.get("/v1/session", admin).status()).as("the admin key still works").isEqualTo(200);
    assertThat(gw.get("/v1/sandboxes", reader).status()).isEqualTo(200);
    String peer = gw.key(admin, "keys:write");
    assertThat(gw.delete("/v1/api-keys/" + idOf(peer), writer).status()).isEqualTo(204);
    assertThat(gw.delete("/v1/api-keys/" + idOf(reader), admin).status()).isEqualTo(204);
    assertThat(gw.get("/v1/sandboxes", reader).status()).isEqualTo(401);
  }
}
