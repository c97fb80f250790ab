package ai.bespokelabs.sandbox.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.adapters.docker.TestEngine;
import ai.bespokelabs.sandbox.gateway.TestGateway.Resp;
import io.vertx.core.json.JsonObject;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Session state handles and adopting a sandbox's still-running resource after a gateway restart. */
class AdoptTest {
  @RegisterExtension
  static final GatewayExtension GATEWAY = new GatewayExtension(() -> Map.of(
      "DOCKER_HOST", TestEngine.get().dockerHost(), "BESPOKE_DOCKER_IMAGE", TestEngine.IMAGE));
  static TestGateway gw;
  static String key;

  @BeforeAll
  static void start() {
    key = gw.bootstrap("Adopters");
  }

  static Resp exec(String id, String command) {
    return gw.post("/v1/sandboxes/" + id + "/execute", key, new JsonObject().put("command", command));
  }

  /**
   * A docker container outlives the gateway and is adopted again; a local sandbox does not: its runtime (env
   * vars) died with the gateway, which ended it at its stop, so its handle has nothing left to adopt.
   */
  @Test
  void a_restarted_gateway_adopts_a_docker_sandbox_while_a_local_one_ended_with_it() {
    String local = gw.sandbox(key, null).getString("id");
    Resp made = gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "docker").put("allow_internet", false));
    assertThat(made.status()).as(made.body()).isEqualTo(201);
    String docker = made.json().getString("id");
    for (String id : new String[] {local, docker}) {
      assertThat(exec(id, "echo kept > state.txt").json().getInteger("exit_code")).isZero();
    }
    JsonObject localState = gw.get("/v1/sandboxes/" + local + "/session-state", key).json();
    JsonObject dockerState = gw.get("/v1/sandboxes/" + docker + "/session-state", key).json();
    assertThat(localState.getString("backend")).isEqualTo("local");
    assertThat(localState.getString("signature")).hasSize(64);

    gw = gw.restarted();
    JsonObject ended = gw.get("/v1/sandboxes/" + local, key).json();
    assertThat(ended.getString("status")).isEqualTo("destroyed");
    assertThat(ended.getString("termination_reason")).isEqualTo("shutdown");
    assertThat(exec(local, "true").detail()).isEqualTo("sandbox is destroyed");
    Resp notAdopted = gw.post("/v1/sandboxes/adopt", key, localState);
    assertThat(notAdopted.status()).isEqualTo(409);
    assertThat(notAdopted.detail()).isEqualTo("sandbox is destroyed");

    Resp adopted = gw.post("/v1/sandboxes/adopt", key, dockerState);
    assertThat(adopted.status()).as(adopted.body()).isEqualTo(200);
    assertThat(adopted.json().getString("status")).isEqualTo("running");
    assertThat(exec(docker, "cat state.txt").json().getString("stdout")).isEqualTo("kept\n");
    assertThat(gw.get("/v1/sandboxes/" + docker + "/logs", key).array().stream()
        .anyMatch(o -> ((JsonObject) o).getString("message").contains("adopt"))).isTrue();
  }

  @Test
  void forged_foreign_or_stale_handles_are_refused() {
    String id = gw.sandbox(key, null).getString("id");
    JsonObject state = gw.get("/v1/sandboxes/" + id + "/session-state", key).json();
    JsonObject forged = state.copy().put("provider_resource_id", "/etc");
    assertThat(gw.post("/v1/sandboxes/adopt", key, forged).detail()).isEqualTo("invalid session state");
    String other = gw.bootstrap("Someone else");
    assertThat(gw.post("/v1/sandboxes/adopt", other, state).status()).isEqualTo(404);
    assertThat(gw.post("/v1/sandboxes/adopt", gw.key(key, "sandboxes:read"), state).status()).isEqualTo(403);
    gw.delete("/v1/sandboxes/" + id, key);
    Resp stale = gw.post("/v1/sandboxes/adopt", key, state);
    assertThat(stale.status()).isEqualTo(409);
    assertThat(stale.detail()).isEqualTo("sandbox is destroyed");
  }
}
