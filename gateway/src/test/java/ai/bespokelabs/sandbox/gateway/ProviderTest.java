package ai.bespokelabs.sandbox.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.adapters.codecapsules.CodeCapsulesSimulator;
import ai.bespokelabs.sandbox.adapters.daytona.DaytonaSimulator;
import ai.bespokelabs.sandbox.adapters.e2b.E2bSimulator;
import ai.bespokelabs.sandbox.adapters.modal.ModalSimulator;
import ai.bespokelabs.sandbox.adapters.ray.RaySimulator;
import ai.bespokelabs.sandbox.adapters.runpod.RunPodSimulator;
import ai.bespokelabs.sandbox.adapters.tensorlake.TensorlakeSimulator;
import ai.bespokelabs.sandbox.gateway.TestGateway.Resp;
import io.vertx.core.json.JsonObject;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
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

  /** What a backend whose tool or engine is missing here answers: what to install. */
  static final Map<String, String> MISSING = Map.of(
      "safehouse", "safehouse is not installed on this host (macOS only: install Agent Safehouse and put safehouse"
          + " on the gateway's PATH)",
      "docker", "no Docker Engine API socket on this host (install Docker, or Podman with its API service:"
          + " apt-get install podman && systemctl enable --now podman.socket, then set DOCKER_HOST)");

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
    assertThat(safehouse.json().getJsonObject("detail").getString("message")).isEqualTo(MISSING.get("safehouse"));
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

  /**
   * With every cloud provider configured (each against its simulator), {@code GET /v1/providers} lists all
   * eleven backends in name order with the capabilities each declares, none checked yet. A host backend whose
   * tool or engine this machine lacks (safehouse is macOS only; docker needs an engine) is still listed, as not
   * configured, and a create there is refused with {@code backend_not_installed}.
   */
  @Test
  void with_every_cloud_provider_configured_all_eleven_backends_are_listed_with_their_capabilities()
      throws Exception {
    String secret = "provider_listing_test_key_0123";
    try (E2bSimulator e2b = E2bSimulator.start(); DaytonaSimulator daytona = DaytonaSimulator.start(secret);
        ModalSimulator modal = ModalSimulator.start(); RunPodSimulator runpod = RunPodSimulator.start(secret);
        RaySimulator ray = RaySimulator.start(secret); TensorlakeSimulator tensorlake = TensorlakeSimulator.start(secret);
        CodeCapsulesSimulator codecapsules = CodeCapsulesSimulator.start()) {
      Map<String, String> env = new java.util.HashMap<>();
      env.putAll(e2b.env());
      env.putAll(Map.of("DAYTONA_API_KEY", secret, "DAYTONA_API_URL", daytona.url()));
      env.putAll(modal.env());
      env.putAll(Map.of("RUNPOD_API_KEY", secret, "RUNPOD_API_URL", runpod.url()));
      env.putAll(Map.of("RAY_ADDRESS", ray.url(), "RAY_JOB_TOKEN", secret));
      env.putAll(Map.of("TENSORLAKE_API_KEY", secret, "TENSORLAKE_API_URL", tensorlake.url(),
          "TENSORLAKE_SANDBOX_URL", tensorlake.daemonUrl()));
      env.putAll(codecapsules.env());
      try (TestGateway all = new TestGateway(env)) {
        String ops = all.bootstrap("Every provider");
        boolean engine = Files.exists(Path.of("/var/run/docker.sock")) || System.getenv("DOCKER_HOST") != null;
        Map<String, Boolean> configured = new java.util.LinkedHashMap<>();
        configured.put("bwrap", true);
        configured.put("codecapsules", true);
        configured.put("daytona", true);
        configured.put("docker", engine);
        configured.put("e2b", true);
        configured.put("local", true);
        configured.put("modal", true);
        configured.put("ray", true);
        configured.put("runpod", true);
        configured.put("safehouse", false);
        configured.put("tensorlake", true);
        Map<String, List<String>> capabilities = Map.ofEntries(
            Map.entry("bwrap", List.of("adopt", "files", "metrics")),
            Map.entry("codecapsules", List.of("files", "metrics")),
            Map.entry("daytona", List.of("adopt", "files", "metrics", "provider_timeout")),
            Map.entry("docker", List.of("adopt", "files", "metrics", "snapshot")),
            Map.entry("e2b", List.of("adopt", "files", "metrics", "provider_timeout")),
            Map.entry("local", List.of("adopt", "files", "metrics")),
            Map.entry("modal", List.of("adopt", "files", "snapshot")),
            Map.entry("ray", List.of()),
            Map.entry("runpod", List.of("files")),
            Map.entry("safehouse", List.of("adopt", "files", "metrics")),
            Map.entry("tensorlake", List.of("adopt", "files", "metrics", "snapshot")));

        Resp listed = all.get("/v1/providers", ops);
        assertThat(listed.status()).as(listed.body()).isEqualTo(200);
        io.vertx.core.json.JsonArray items = listed.json().getJsonArray("items");
        assertThat(items.stream().map(i -> ((JsonObject) i).getString("backend")).toList())
            .containsExactlyElementsOf(configured.keySet());
        for (Object o : items) {
          JsonObject item = (JsonObject) o;
          String backend = item.getString("backend");
          boolean on = configured.get(backend);
          String message = on ? "Not checked yet." : MISSING.get(backend);
          assertThat(item).as(backend).isEqualTo(new JsonObject().put("backend", backend)
              .put("configured", on)
              .put("capabilities", new io.vertx.core.json.JsonArray(capabilities.get(backend)))
              .put("status", on ? "unknown" : "unconfigured").putNull("checked_at").put("message", message));
          if (!on) {
            Resp refused = all.post("/v1/sandboxes", ops, new JsonObject().put("backend", backend));
            assertThat(refused.status()).as(refused.body()).isEqualTo(422);
            assertThat(refused.json().getJsonObject("detail").getString("code")).as(refused.body())
                .isEqualTo("backend_not_installed");
            assertThat(refused.json().getJsonObject("detail").getString("backend")).isEqualTo(backend);
            assertThat(refused.json().getJsonObject("detail").getString("message")).isEqualTo(message);
          }
        }
        assertThat(e2b.violations()).isEmpty();
        assertThat(daytona.violations()).isEmpty();
        assertThat(modal.violations()).isEmpty();
        assertThat(runpod.violations()).isEmpty();
        assertThat(ray.violations()).isEmpty();
        assertThat(tensorlake.violations()).isEmpty();
        assertThat(codecapsules.violations()).isEmpty();
      }
    }
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
