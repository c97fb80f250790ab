package ai.bespokelabs.sandbox.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.gateway.TestGateway.Resp;
import ai.bespokelabs.sandbox.testkit.Waits;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** The audit trail, alerts and retention, per organization. */
@ExtendWith(GatewayExtension.class)
class OperationsTest {
  static TestGateway gw;

  static List<JsonObject> all(String path, String key) {
    List<JsonObject> out = new java.util.ArrayList<>();
    String cursor = null;
    do {
      JsonObject page = gw.get(path + "?limit=2" + (cursor == null ? "" : "&cursor=" + cursor), key).json();
      page.getJsonArray("items").forEach(o -> out.add((JsonObject) o));
      cursor = page.getString("next_cursor");
    } while (cursor != null);
    return out;
  }

  @Test
  void every_mutation_and_export_is_audited_with_redacted_details() {
    String key = gw.bootstrap("Audited");
    String id = gw.sandbox(key, null).getString("id");
    gw.post("/v1/sandboxes/" + id + "/execute", key, new JsonObject().put("command", "true"));
    gw.send("PUT", "/v1/policies/current", key, "{}");
    String reader = gw.key(key, "sandboxes:read", "audit:read");
    assertThat(gw.delete("/v1/sandboxes/" + id, reader).status()).isEqualTo(403);
    assertThat(gw.delete("/v1/sandboxes/" + id, "bsk_live_wrong").status()).isEqualTo(401);
    gw.delete("/v1/sandboxes/" + id, key);
    String secret = "bsk_live_" + "s".repeat(43);
    gw.get("/v1/exports/usage.csv?token=" + secret + "&note=" + URLEncoder.encode("Bearer abc " + secret,
        StandardCharsets.UTF_8), key);

    // an entry is written once its response has ended, so the last one may land just after the client has it
    List<JsonObject> entries = Waits.upTo(5).until(() -> all("/v1/audit", reader),
        all -> all.stream().anyMatch(e -> e.getString("action").startsWith("get /v1/exports")));
    List<String> actions = entries.stream().map(e -> e.getString("action")).toList();
    assertThat(actions).contains("sandbox.create", "sandbox.execute", "policy.update", "sandbox.terminate",
        "api_key.create", "get /v1/exports/{kind}.csv");
    JsonObject denied = entries.stream().filter(e -> e.getString("outcome").equals("denied")).findFirst().orElseThrow();
    assertThat(denied.getString("action")).isEqualTo("sandbox.terminate");
    assertThat(denied.getJsonObject("details").getInteger("status_code")).isEqualTo(403);
    assertThat(denied.getString("api_key_name")).startsWith("k-");
    assertThat(entries).as("401s are not audited").noneMatch(e -> e.getJsonObject("details").getInteger("status_code") == 401);
    JsonObject export = entries.stream().filter(e -> e.getString("action").startsWith("get ")).findFirst().orElseThrow();
    assertThat(export.getString("resource_type")).isEqualTo("http_route");
    assertThat(export.getString("resource_id")).isEqualTo("/v1/exports/usage.csv");
    JsonObject query = export.getJsonObject("details").getJsonObject("query");
    assertThat(query.getString("token")).isEqualTo("[REDACTED]");
    assertThat(query.getString("note")).doesNotContain(secret).doesNotContain("abc");
    assertThat(gw.get("/v1/audit", reader).json().encode()).doesNotContain(secret);
    assertThat(gw.get("/v1/audit?cursor=not-a-cursor", reader).detail()).isEqualTo("invalid pagination cursor");
    assertThat(gw.get("/v1/audit?limit=201", reader).json().getJsonArray("detail").getJsonObject(0).getString("type"))
        .isEqualTo("less_than_equal");
    assertThat(gw.get("/v1/audit", gw.bootstrap("Elsewhere")).json().getJsonArray("items").encode())
        .doesNotContain(id);
  }

  /** Entries arriving while one is being written are written together: each request still gets exactly one. */
  @Test
  void a_burst_of_mutations_is_audited_once_each() throws Exception {
    String key = gw.bootstrap("Burst");
    String reader = gw.key(key, "audit:read");
    int n = 120;
    java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(24);
    List<java.util.concurrent.Future<Integer>> sent = new java.util.ArrayList<>();
    for (int i = 0; i < n; i++) {
      String note = "burst-" + i;
      sent.add(pool.submit(() -> gw.send("PUT", "/v1/policies/current?note=" + note, key, "{}").status()));
    }
    for (var f : sent) {
      assertThat(f.get(60, java.util.concurrent.TimeUnit.SECONDS)).isEqualTo(200);
    }
    pool.shutdown();
    // one page: offset pages read while the last entries are still landing would shift and repeat rows
    List<String> notes = Waits.upTo(10).until(() -> gw.get("/v1/audit?limit=200", reader).json().getJsonArray("items")
        .stream().map(JsonObject.class::cast).filter(e -> e.getString("action").equals("policy.update"))
        .map(e -> e.getJsonObject("details").getJsonObject("query").getString("note")).toList(),
        found -> found.size() >= n);
    assertThat(notes).hasSize(n).doesNotHaveDuplicates()
        .containsExactlyInAnyOrderElementsOf(java.util.stream.IntStream.range(0, n).mapToObj(i -> "burst-" + i).toList());
  }

  @Test
  void alerts_fire_once_each() throws Exception {
    String key = gw.bootstrap("Alerted");
    Resp config = gw.send("PUT", "/v1/alerts/configuration", key, new JsonObject().put("long_running_secs", 60)
        .put("repeated_failures_count", 1).encode());
    assertThat(config.status()).isEqualTo(200);
    assertThat(config.json().getInteger("version")).isEqualTo(2);
    assertThat(config.json().getBoolean("provider_degradation_enabled")).isTrue();
    JsonObject sbx = gw.sandbox(key, null);
    JsonObject doomed = gw.sandbox(key, null);
    ReconciliationTest.deleteTree(Path.of(doomed.getString("provider_resource_id")));
    gw.post("/v1/reconciliation/local", key, null);
    gw.clock.advance(Duration.ofSeconds(120));
    List<JsonObject> first = all("/v1/alerts", key);
    List<JsonObject> second = all("/v1/alerts", key);
    assertThat(second).isEqualTo(first);
    assertThat(first.stream().map(a -> a.getString("alert_type")).toList())
        .containsExactlyInAnyOrder("long_running", "repeated_failures");
    assertThat(first.stream().filter(a -> a.getString("alert_type").equals("long_running")).findFirst().orElseThrow()
        .getString("resource_id")).isEqualTo(sbx.getString("id"));

    Path sandboxes = gw.dataDir.resolve("sandboxes");
    Path moved = gw.dataDir.resolve("sandboxes.away");
    Files.move(sandboxes, moved);
    Files.writeString(sandboxes, "broken");
    try {
      gw.post("/v1/providers/local/health-check", key, null);
      gw.post("/v1/providers/local/health-check", key, null);
    } finally {
      Files.delete(sandboxes);
      Files.move(moved, sandboxes);
    }
    assertThat(all("/v1/alerts", key).stream().filter(a -> a.getString("alert_type").equals("provider_degradation")))
        .as("degradation alerts only on the transition").hasSize(1);
    gw.post("/v1/providers/local/health-check", key, null);
    assertThat(gw.send("PUT", "/v1/alerts/configuration", key, new JsonObject().put("budget_threshold_percent", 101)
        .encode()).status()).isEqualTo(422);
    JsonObject reset = gw.send("PUT", "/v1/alerts/configuration", key, "{}").json();
    assertThat(reset.getValue("long_running_secs")).isNull();
    assertThat(reset.getInteger("repeated_failures_window_minutes")).isEqualTo(60);
  }

  @Test
  void retention_deletes_only_aged_operational_records_and_audit() throws Exception {
    String key = gw.bootstrap("Retained");
    assertThat(gw.get("/v1/retention/current", key).json().getInteger("operational_days")).isEqualTo(90);
    Resp put = gw.send("PUT", "/v1/retention/current", key,
        new JsonObject().put("operational_days", 1).put("audit_days", 2).encode());
    assertThat(put.json().getInteger("version")).isEqualTo(2);
    gw.send("PUT", "/v1/policies/current", key, new JsonObject().put("allowed_backends", new JsonArray()).encode());
    gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "local"));
    // an audit entry is written once its response has ended: all three carry the time before the clock moves
    Waits.upTo(5).until(() -> all("/v1/audit", key).size(), n -> n >= 3);
    gw.clock.advance(Duration.ofHours(30));
    JsonObject counts = gw.post("/v1/retention/apply", key, null).json();
    assertThat(counts.getInteger("denials_deleted")).isEqualTo(1);
    assertThat(counts.getInteger("audit_deleted")).isZero();
    gw.clock.advance(Duration.ofHours(24));
    JsonObject later = gw.post("/v1/retention/apply", key, null).json();
    assertThat(later.getInteger("audit_deleted")).isGreaterThanOrEqualTo(3);
    assertThat(gw.send("PUT", "/v1/retention/current", key, new JsonObject().put("audit_days", 0).encode()).status())
        .isEqualTo(422);
    assertThat(gw.send("PUT", "/v1/retention/current", key, new JsonObject().put("audit_days", 3651).encode()).status())
        .isEqualTo(422);
  }
}
