package ai.bespokelabs.sandbox.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.gateway.TestGateway.Resp;
import io.vertx.core.json.JsonObject;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** With the defaults: no local dashboard login; with the cookie's Secure flag turned off, none on the cookie. */
class DashboardLocalOffTest {
  @RegisterExtension
  static final GatewayExtension GATEWAY = new GatewayExtension(() -> Map.of("BESPOKE_SESSION_COOKIE_SECURE", "false"));
  static TestGateway gw;

  @Test
  void local_login_is_off_by_default() {
    Resp r = gw.get("/dashboard/local", null);
    assertThat(r.status()).isEqualTo(404);
    assertThat(r.detail()).isEqualTo("local dashboard login is disabled");
    assertThat(gw.get("/dashboard", null).status()).isEqualTo(200);
  }

  @Test
  void the_secure_flag_follows_its_setting() {
    String admin = gw.bootstrap("Acme");
    Resp r = gw.post("/v1/dashboard/session", null, new JsonObject().put("api_key", admin));
    assertThat(r.status()).isEqualTo(200);
    assertThat(r.header("Set-Cookie").toLowerCase()).contains("; httponly").doesNotContain("secure");
    assertThat(r.json().getInteger("expires_in")).as("the default TTL").isEqualTo(28800);
  }
}
