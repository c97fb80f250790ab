package ai.bespokelabs.sandbox.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.gateway.TestGateway.Resp;
import io.vertx.core.json.JsonObject;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** Provider health: a real check per backend, stored, never revealing more than a fixed message. */
@ExtendWith(GatewayExtension.class)
class ProviderTest {
  static TestGateway gw;
  static String key;

  @BeforeAll
  static void start() {
    key = gw.bootstrap("Ops");
  }

  /** {@code configured} says what a create would meet: a backend whose tool or engine is missing is not. */
  @Test
  void configured_is_false_where_a_create_would_meet_backend_not_installed() {
    Map<String, Boolean> configured = new java.util.TreeMap<>();
    for (Object o : gw.get("/v1/providers", key).json().getJsonArray("items")) {
      JsonObject item = (JsonObject) o;
      configured.put(item.getString("backend"), item.getBoolean("configured"));
    }
    assertThat(configured).containsEntry("local", true).containsEntry("bwrap", true)
        .containsEntry("safehouse", false); // macOS only
    Resp safehouse = gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "safehouse"));
    assertThat(safehouse.status()).isEqualTo(422);
    assertThat(safehouse.body()).contains("backend_not_installed");
    boolean engine = Files.exists(Path.of("/var/run/docker.sock")) || System.getenv("DOCKER_HOST") != null;
    assertThat(configured).containsEntry("docker", engine);
  }

  @Test
  void local_is_checked_by_spawning_a_process_and_a_broken_host_is_degraded() throws Exception {
    JsonObject before = local(gw.get("/v1/providers", key).json());
    assertThat(before).isEqualTo(new JsonObject().put("backend", "local").put("configured", true)
        .put("capabilities", new io.vertx.core.json.JsonArray().add("adopt").add("files").add("metrics"))
        .put("status", "unknown").putNull("checked_at").put("message", "Not checked yet."));

    Resp ok = gw.post("/v1/providers/local/health-check", key, null);
    assertThat(ok.status()).isEqualTo(200);
    assertThat(ok.json().getString("status")).isEqualTo("healthy");
    assertThat(ok.json().getString("message")).isEqualTo("Provider is healthy.");
    assertThat(ok.json().getString("checked_at")).isNotNull();
    assertThat(local(gw.get("/v1/providers", key).json()).getString("status")).isEqualTo("healthy");

    Path sandboxes = gw.dataDir.resolve("sandboxes");
    Path moved = gw.dataDir.resolve("sandboxes.moved");
    if (Files.exists(sandboxes)) {
      Files.move(sandboxes, moved);
    }
    Files.writeString(sandboxes, "not a directory");
    try {
      Resp bad = gw.post("/v1/providers/local/health-check", key, null);
      assertThat(bad.status()).isEqualTo(200);
      assertThat(bad.json().getString("status")).isEqualTo("degraded");
      assertThat(bad.json().getString("message")).isEqualTo("Provider health check failed.");
      assertThat(bad.body()).doesNotContain("directory").doesNotContain("Exception");
    } finally {
      Files.delete(sandboxes);
      if (Files.exists(moved)) {
        Files.move(moved, sandboxes);
      }
    }
  }

  /** Each backend lists what it offers; an operation outside the list is feature_not_supported, from one place. */
  @Test
  void capabilities_are_listed_and_an_operation_outside_them_is_feature_not_supported() {
    Map<String, java.util.List<Object>> capabilities = new java.util.TreeMap<>();
    for (Object o : gw.get("/v1/providers", key).json().getJsonArray("items")) {
      JsonObject item = (JsonObject) o;
      capabilities.put(item.getString("backend"), item.getJsonArray("capabilities").getList());
    }
    assertThat(capabilities.get("bwrap")).containsExactly("adopt", "files", "metrics");
    assertThat(capabilities.get("docker")).containsExactly("adopt", "files", "metrics", "snapshot");
    String id = gw.sandbox(key, null).getString("id");
    Resp snapshot = gw.post("/v1/sandboxes/" + id + "/snapshot", key, null);
    assertThat(snapshot.status()).isEqualTo(502);
    assertThat(snapshot.json().getJsonObject("detail").getString("code")).isEqualTo("feature_not_supported");
    assertThat(snapshot.json().getJsonObject("detail").getString("op")).isEqualTo("snapshot");
    gw.delete("/v1/sandboxes/" + id, key);
  }

  static JsonObject local(JsonObject providers) {
    return providers.getJsonArray("items").stream().map(JsonObject.class::cast)
        .filter(p -> p.getString("backend").equals("local")).findFirst().orElseThrow();
  }

  @Test
  void every_enabled_backend_is_listed() {
    assertThat(gw.get("/v1/providers", key).json().getJsonArray("items").stream()
        .map(p -> ((JsonObject) p).getString("backend")).toList()).containsExactly("bwrap", "docker", "local", "safehouse");
  }

  @Test
  void unknown_backends_and_missing_scopes_are_refused() {
    assertThat(gw.post("/v1/providers/e2b/health-check", key, null).detail()).isEqualTo("backend is not enabled: e2b");
    String reader = gw.key(key, "providers:read");
    assertThat(gw.get("/v1/providers", reader).status()).isEqualTo(200);
    assertThat(gw.post("/v1/providers/local/health-check", reader, null).detail())
        .isEqualTo("API key requires scope: providers:write");
    assertThat(gw.get("/v1/providers", gw.key(key, "sandboxes:read")).detail())
        .isEqualTo("API key requires scope: providers:read");
  }
}
