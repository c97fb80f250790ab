package ai.bespokelabs.sandbox.gateway.security;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.gateway.GatewayExtension;
import ai.bespokelabs.sandbox.gateway.TestGateway;
import ai.bespokelabs.sandbox.gateway.TestGateway.Resp;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.time.OffsetDateTime;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * {@code max_sandbox_lifetime_secs} bounds a sandbox's life from its creation: extending its deadline again
 * and again cannot keep it alive past {@code created_at} plus the limit.
 */
@Tag("security")
@ExtendWith(GatewayExtension.class)
class LifetimePolicyTest {
  static TestGateway gw;
  static String key;

  @BeforeAll
  static void start() {
    key = gw.bootstrap("Acme");
    Resp policy = gw.send("PUT", "/v1/policies/current", key, new JsonObject().put("max_sandbox_lifetime_secs", 60)
        .encode());
    assertThat(policy.status()).isEqualTo(200);
  }

  static Resp extend(String id, int secs) {
    return gw.post("/v1/sandboxes/" + id + "/timeout", key, new JsonObject().put("timeout_secs", secs));
  }

  @Test
  void repeated_extensions_cannot_pass_created_at_plus_the_limit() {
    JsonObject sbx = gw.sandbox(key, new JsonObject().put("timeout_secs", 60));
    String id = sbx.getString("id");
    OffsetDateTime bound = OffsetDateTime.parse(sbx.getString("created_at")).plusSeconds(60);

    gw.clock.advance(Duration.ofSeconds(30));
    Resp past = extend(id, 60);
    assertThat(past.status()).isEqualTo(403);
    JsonObject detail = past.json().getJsonObject("detail");
    assertThat(detail.getString("code")).isEqualTo("policy_denied");
    assertThat(detail.getString("policy")).isEqualTo("max_sandbox_lifetime_secs");
    assertThat(detail.getString("message")).isEqualTo("Requested sandbox lifetime exceeds organization policy.");
    assertThat(detail.getInteger("current")).as("seconds from creation to the asked deadline").isBetween(90, 91);
    assertThat(detail.getInteger("limit")).isEqualTo(60);
    Resp within = extend(id, 29); // the clock moved 30 s and a few milliseconds: up to the bound, not past it
    assertThat(within.status()).isEqualTo(200);
    OffsetDateTime deadline = OffsetDateTime.parse(within.json().getString("expires_at"));
    assertThat(deadline).isBeforeOrEqualTo(bound).isAfter(bound.minusSeconds(1));

    for (int i = 0; i < 5; i++) {
      gw.clock.advance(Duration.ofSeconds(5));
      assertThat(extend(id, 30).status()).isEqualTo(403);
    }
    Resp stored = gw.get("/v1/sandboxes/" + id, key);
    assertThat(OffsetDateTime.parse(stored.json().getString("expires_at"))).isEqualTo(deadline);
    Resp shorter = extend(id, 1);
    assertThat(shorter.status()).as("shortening stays allowed").isEqualTo(200);
    assertThat(OffsetDateTime.parse(shorter.json().getString("expires_at"))).isBefore(deadline);

    JsonObject summary = gw.get("/v1/policy-summary", key).json();
    assertThat(summary.getJsonArray("denials").getJsonObject(0).getString("policy"))
        .isEqualTo("max_sandbox_lifetime_secs");
  }
}
