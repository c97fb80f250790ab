package ai.bespokelabs.sandbox.gateway.http;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.adapters.egress.EgressGuard;
import ai.bespokelabs.sandbox.gateway.routing.Backends;
import io.vertx.core.json.JsonObject;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** One backend's entry of {@code /v1/providers}. */
class ProviderItemTest {
  @Test
  void a_backend_whose_egress_rules_are_not_in_force_is_unconfigured_and_says_why() {
    Backends backends = new Backends(Map.of("local", true, "bwrap", true), Optional.empty(), "n1",
        Map.of("local", EgressGuard.UNAVAILABLE), Map.of());
    JsonObject local = ProviderApi.item("local", backends.unavailable("local"), List.of(), null);
    assertThat(local.getBoolean("configured")).isFalse();
    assertThat(local.getString("status")).isEqualTo("unconfigured");
    assertThat(local.getString("message")).isEqualTo(EgressGuard.UNAVAILABLE);
    JsonObject bwrap = ProviderApi.item("bwrap", backends.unavailable("bwrap"), List.of(), null);
    assertThat(bwrap.getBoolean("configured")).isTrue();
    assertThat(bwrap.getString("status")).isEqualTo("unknown");
    assertThat(bwrap.fieldNames()).containsExactlyInAnyOrderElementsOf(List.of("backend", "configured",
        "capabilities", "status", "checked_at", "message"));
  }
}
