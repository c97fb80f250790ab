package ai.bespokelabs.sandbox.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.gateway.TestGateway.Resp;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** {@code GET /v1/placement} on a gateway serving the host backends. */
class PlacementApiTest {
  @RegisterExtension
  static final GatewayExtension GATEWAY = new GatewayExtension();
  static TestGateway gw;

  static Map<String, JsonObject> byBackend(JsonObject plan) {
    return plan.getJsonArray("candidates").stream().map(o -> (JsonObject) o)
        .collect(Collectors.toMap(c -> c.getString("backend"), c -> c));
  }

  @Test
  void the_plan_names_the_choice_and_a_reason_for_every_rejection() {
    String key = gw.bootstrap("Placement");
    JsonObject plan = gw.get("/v1/placement", key).json();
    assertThat(plan.getString("requested")).isEqualTo("auto");
    assertThat(plan.getString("chosen")).as("free and a host process: the cheapest fit").isNotNull();
    assertThat(byBackend(plan)).containsKey("local");

    JsonObject vm = gw.get("/v1/placement?isolation=vm", key).json();
    for (Object o : vm.getJsonArray("candidates")) {
      JsonObject c = (JsonObject) o;
      if (List.of("local", "bwrap", "safehouse", "docker").contains(c.getString("backend"))) {
        assertThat(c.getString("status")).isEqualTo("rejected");
        assertThat(c.getString("reason")).as(c.encode()).isNotBlank();
      }
    }
    assertThat(byBackend(vm).get("local").getString("reason")).isEqualTo("isolation process is below the requested vm");

    JsonObject excluded = gw.get("/v1/placement?exclude=local", key).json();
    assertThat(excluded.getString("chosen")).isNotEqualTo("local");
    assertThat(byBackend(excluded).get("local").getString("reason")).isEqualTo("excluded by the request");

    assertThat(gw.send("PUT", "/v1/policies/current", key, new JsonObject()
        .put("allowed_backends", new JsonArray().add("bwrap")).encode()).status()).isEqualTo(200);
    JsonObject limited = gw.get("/v1/placement", key).json();
    assertThat(byBackend(limited).get("local").getString("reason"))
        .isEqualTo("not allowed by the organization's policy");

    Resp bad = gw.get("/v1/placement?isolation=hypervisor", key);
    assertThat(bad.status()).isEqualTo(422);
    assertThat(bad.detail()).isEqualTo("isolation must be one of process, namespace, container, vm");
    assertThat(gw.get("/v1/placement?max_hourly_usd=-1", key).status()).isEqualTo(422);
  }
}
