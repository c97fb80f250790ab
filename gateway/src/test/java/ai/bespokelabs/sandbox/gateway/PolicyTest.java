package ai.bespokelabs.sandbox.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.gateway.TestGateway.Resp;
import ai.bespokelabs.sandbox.testkit.Waits;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** Organization policies: validation, every denial before any provider call, and exact limits under races. */
@ExtendWith(GatewayExtension.class)
class PolicyTest {
  static TestGateway gw;

  static Resp put(String key, JsonObject policy) {
    return gw.send("PUT", "/v1/policies/current", key, policy.encode());
  }

  @Test
  void defaults_then_full_replace_with_versions() {
    String key = gw.bootstrap("Defaults");
    JsonObject initial = gw.get("/v1/policies/current", key).json();
    assertThat(initial.getInteger("version")).isEqualTo(1);
    assertThat(initial.getValue("max_concurrent_sandboxes")).isNull();
    Resp first = put(key, new JsonObject().put("max_concurrent_sandboxes", 3)
        .put("allowed_backends", new JsonArray().add(" LOCAL ").add("local"))
        .put("allowed_gpu_types", new JsonArray().add(" H100 ").add("A10")));
    assertThat(first.status()).isEqualTo(200);
    assertThat(first.json().getInteger("version")).isEqualTo(2);
    assertThat(first.json().getJsonArray("allowed_backends")).isEqualTo(new JsonArray().add("local"));
    assertThat(first.json().getJsonArray("allowed_gpu_types")).isEqualTo(new JsonArray().add("A10").add("H100"));
    assertThat(first.json().getString("updated_by_api_key_id")).startsWith("key_");
    Resp second = put(key, new JsonObject().put("max_sandbox_lifetime_secs", 60));
    assertThat(second.json().getInteger("version")).isEqualTo(3);
    assertThat(second.json().getValue("max_concurrent_sandboxes")).as("omitted fields become null").isNull();
  }

  @Test
  void invalid_policies_change_nothing() {
    String key = gw.bootstrap("Invalid");
    put(key, new JsonObject().put("max_concurrent_sandboxes", 2));
    Resp unknown = put(key, new JsonObject().put("allowed_backends", new JsonArray().add("e2b")));
    assertThat(unknown.status()).isEqualTo(422);
    assertThat(unknown.detail()).isEqualTo("backend is not enabled: e2b");
    Resp emptyGpu = put(key, new JsonObject().put("allowed_gpu_types", new JsonArray().add("  ")));
    assertThat(emptyGpu.detail()).isEqualTo("allowed GPU types must not be empty strings");
    assertThat(put(key, new JsonObject().put("max_concurrent_sandboxes", -1)).status()).isEqualTo(422);
    assertThat(put(key, new JsonObject().put("max_sandbox_lifetime_secs", 0)).status()).isEqualTo(422);
    assertThat(put(key, new JsonObject().put("hourly_spend_limit_usd", "-5")).status()).isEqualTo(422);
    assertThat(put(key, new JsonObject().put("daily_spend_limit_usd", "lots")).status()).isEqualTo(422);
    JsonObject now = gw.get("/v1/policies/current", key).json();
    assertThat(now.getInteger("max_concurrent_sandboxes")).isEqualTo(2);
    assertThat(now.getInteger("version")).isEqualTo(2);
    String reader = gw.key(key, "policies:read");
    assertThat(put(reader, new JsonObject()).detail()).isEqualTo("API key requires scope: policies:write");
  }

  @Test
  void each_policy_denies_with_the_contract_body_and_is_recorded() {
    String key = gw.bootstrap("Denials");
    put(key, new JsonObject().put("allowed_gpu_types", new JsonArray().add("L4")).put("max_sandbox_lifetime_secs", 600)
        .put("allowed_backends", new JsonArray().add("local")));
    Resp gpu = gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "local").put("gpu", "H100")
        .put("timeout_secs", 60));
    assertThat(gpu.status()).isEqualTo(403);
    assertThat(gpu.json().getJsonObject("detail")).isEqualTo(new JsonObject()
        .put("message", "GPU type H100 is not allowed by organization policy.").put("code", "policy_denied")
        .put("policy", "allowed_gpu_types").put("retryable", false).put("current", "H100").put("limit", "L4"));
    Resp missing = gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "local"));
    assertThat(missing.json().getJsonObject("detail").getString("message"))
        .isEqualTo("A sandbox lifetime is required by organization policy.");
    Resp tooLong = gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "local").put("timeout_secs", 601));
    assertThat(tooLong.json().getJsonObject("detail").getInteger("current")).isEqualTo(601);
    assertThat(tooLong.json().getJsonObject("detail").getInteger("limit")).isEqualTo(600);
    assertThat(gw.get("/v1/sandboxes", key).array()).as("nothing was created").isEmpty();

    JsonObject summary = gw.get("/v1/policy-summary", key).json();
    JsonArray denials = summary.getJsonArray("denials");
    assertThat(denials).hasSize(3);
    JsonObject latest = denials.getJsonObject(0);
    assertThat(latest.getString("policy")).isEqualTo("max_sandbox_lifetime_secs");
    assertThat(latest.getInteger("requested_timeout_secs")).isEqualTo(601);
    assertThat(latest.getString("api_key_name")).isEqualTo("Initial key");
    assertThat(latest.getString("current_value")).isEqualTo("601");
    assertThat(latest.getString("limit_value")).isEqualTo("600");
    assertThat(summary.getJsonObject("usage").getLong("active_sandboxes")).isZero();
    String policyOnly = gw.key(key, "policies:read");
    assertThat(gw.get("/v1/policy-summary", policyOnly).detail()).isEqualTo("API key requires scope: usage:read");
  }

  /**
   * Creates of an organization seen without guardrails ask the provider while their row is inserted. A policy
   * this node was not told about (set on another node, its announcement still on the way) still holds: the
   * insert finds it, the sandbox made early is destroyed, and the create is judged under the policy.
   */
  @Test
  void a_policy_this_node_has_not_heard_of_still_holds_for_a_create_asked_early() throws Exception {
    String key = gw.bootstrap("Unannounced policy");
    JsonObject first = gw.sandbox(key, new JsonObject().put("backend", "local"));
    assertThat(strays(gw.dataDir.resolve("sandboxes"))).isEmpty();
    assertThat(gw.sandbox(key, new JsonObject().put("backend", "local")).getString("status")).isEqualTo("running");
    DatabaseDump.execute(gw, "INSERT INTO organization_policies (organization_id, allowed_backends, version,"
        + " updated_at) SELECT organization_id, ARRAY['bwrap'], 1, now() FROM sandboxes WHERE id = '" + first.getString("id") + "'");
    Resp denied = gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "local"));
    assertThat(denied.status()).as(denied.body()).isEqualTo(403);
    assertThat(denied.json().getJsonObject("detail").getString("policy")).isEqualTo("allowed_backends");
    assertThat(gw.get("/v1/sandboxes", key).array()).hasSize(2);
    java.nio.file.Path root = gw.dataDir.resolve("sandboxes");
    Waits.upTo(10).untilAsserted(
        () -> assertThat(strays(root)).as("the sandbox made before the insert found the policy is gone").isEmpty());
  }

  /** Concurrent creates of an organization without guardrails, most asked early: each makes exactly one sandbox. */
  @Test
  void concurrent_creates_asked_early_make_one_sandbox_each() throws Exception {
    String key = gw.bootstrap("Early burst");
    gw.sandbox(key, new JsonObject().put("backend", "local"));
    ExecutorService pool = Executors.newFixedThreadPool(16);
    List<CompletableFuture<Resp>> creates = new ArrayList<>();
    for (int i = 0; i < 60; i++) {
      creates.add(CompletableFuture.supplyAsync(
          () -> gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "local")), pool));
    }
    java.util.Set<String> ids = new java.util.HashSet<>();
    for (CompletableFuture<Resp> c : creates) {
      Resp r = c.get(120, TimeUnit.SECONDS);
      assertThat(r.status()).as(r.body()).isEqualTo(201);
      assertThat(r.json().getString("status")).isEqualTo("running");
      assertThat(java.nio.file.Path.of(r.json().getString("provider_resource_id"))).isDirectory();
      ids.add(r.json().getString("id"));
    }
    pool.shutdown();
    assertThat(ids).hasSize(60);
    assertThat(gw.get("/v1/sandboxes", key).array()).hasSize(61);
    assertThat(strays(gw.dataDir.resolve("sandboxes"))).isEmpty();
  }

  /** Local sandbox directories (named after their sandbox) of no sandbox the database knows. */
  private static List<String> strays(java.nio.file.Path root) throws Exception {
    java.util.Set<String> known = new java.util.HashSet<>();
    DatabaseDump.of(gw).lines().filter(l -> l.startsWith("sandboxes: "))
        .forEach(l -> known.add(new JsonObject(l.substring("sandboxes: ".length())).getString("id")));
    try (var dirs = java.nio.file.Files.list(root)) {
      return dirs.map(d -> d.getFileName().toString()).filter(n -> !n.startsWith(".") && !known.contains(n)).toList();
    }
  }

  @Test
  void two_hundred_concurrent_creates_against_a_limit_of_five_make_exactly_five() throws Exception {
    String key = gw.bootstrap("Race");
    put(key, new JsonObject().put("max_concurrent_sandboxes", 5));
    ExecutorService pool = Executors.newFixedThreadPool(64);
    List<CompletableFuture<Integer>> creates = new ArrayList<>();
    for (int i = 0; i < 200; i++) {
      creates.add(CompletableFuture.supplyAsync(
          () -> gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "local")).status(), pool));
    }
    int created = 0;
    int denied = 0;
    for (CompletableFuture<Integer> c : creates) {
      int status = c.get(120, TimeUnit.SECONDS);
      if (status == 201) {
        created++;
      } else if (status == 403) {
        denied++;
      }
    }
    pool.shutdown();
    assertThat(created).isEqualTo(5);
    assertThat(denied).isEqualTo(195);
    assertThat(gw.get("/v1/sandboxes", key).array()).hasSize(5);
    JsonObject summary = gw.get("/v1/policy-summary", key).json();
    assertThat(summary.getJsonObject("usage").getLong("active_sandboxes")).isEqualTo(5L);
    assertThat(DatabaseDump.of(gw).lines().filter(l -> l.startsWith("policy_denials: ")
        && l.contains("max_concurrent_sandboxes")).count()).isEqualTo(195);
    String id = gw.get("/v1/sandboxes", key).array().getJsonObject(0).getString("id");
    assertThat(gw.delete("/v1/sandboxes/" + id, key).status()).isEqualTo(200);
    assertThat(gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "local")).status())
        .as("a destroyed sandbox frees its slot").isEqualTo(201);
  }

  @Test
  void the_hourly_rate_and_pricing_source_are_captured_at_create() {
    String key = gw.bootstrap("Pricing");
    JsonObject sbx = gw.sandbox(key, new JsonObject().put("cpu", 2).put("memory_mb", 2048));
    assertThat(sbx.getString("hourly_rate_usd")).isEqualTo("0");
    assertThat(sbx.getString("pricing_source")).isEqualTo("2026-03-28");
  }
}
