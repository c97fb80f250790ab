package ai.bespokelabs.sandbox.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.gateway.TestGateway.Resp;
import ai.bespokelabs.sandbox.testkit.Waits;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** The seed's sandbox API on the local backend, over real HTTP against a real gateway and PostgreSQL. */
@ExtendWith(GatewayExtension.class)
class SandboxApiTest {
  static TestGateway gw;
  static String key;

  @BeforeAll
  static void start() {
    key = gw.bootstrap("Acme");
  }

  static Resp exec(String sandboxId, JsonObject body, String... headers) {
    return gw.post("/v1/sandboxes/" + sandboxId + "/execute", key, body, headers);
  }

  @Test
  void create_execute_and_destroy_a_local_sandbox() {
    JsonObject sbx = gw.sandbox(key, new JsonObject().put("timeout_secs", 300));
    assertThat(sbx.getString("id")).matches("sbx_[0-9a-f]{32}");
    assertThat(sbx.getString("status")).isEqualTo("running");
    assertThat(sbx.getInteger("version")).isEqualTo(2);
    assertThat(sbx.getString("creator_api_key_name")).isEqualTo("Initial key");
    assertThat(sbx.getString("retry_status")).isEqualTo("not_applicable");
    assertThat(sbx.getString("hourly_rate_usd")).isEqualTo("0");
    assertThat(sbx.getString("expires_at")).isNotNull();
    assertThat(sbx.fieldNames()).doesNotContain("organization_id");
    String id = sbx.getString("id");

    Resp py = exec(id, new JsonObject().put("code", "print(6 * 7)"));
    assertThat(py.status()).isEqualTo(200);
    assertThat(py.json().getString("stdout")).isEqualTo("42\n");
    assertThat(py.json().getInteger("exit_code")).isZero();
    assertThat(py.json().getString("request_id")).startsWith("req_");
    assertThat(py.json().getJsonObject("usage").fieldNames())
        .containsExactlyInAnyOrder("runtime_seconds", "provider_cost_usd", "customer_cost_usd");

    Resp shell = exec(id, new JsonObject().put("command", "echo hello >&2; echo out"));
    assertThat(shell.json().getString("stdout")).isEqualTo("out\n");
    assertThat(shell.json().getString("stderr")).isEqualTo("hello\n");

    Resp args = exec(id, new JsonObject().put("command", "printf").put("args", new JsonArray().add("[%s]").add("a b")));
    assertThat(args.json().getString("stdout")).isEqualTo("[a b]");

    Resp got = gw.get("/v1/sandboxes/" + id, key);
    assertThat(got.json()).isEqualTo(sbx);
    // the version as an ETag, which If-Match takes back as it is
    String etag = got.header("ETag");
    assertThat(etag).isEqualTo("\"" + sbx.getInteger("version") + "\"");

    Resp gone = gw.delete("/v1/sandboxes/" + id, key, "If-Match", etag);
    assertThat(gone.status()).isEqualTo(200);
    assertThat(gone.json().getString("status")).isEqualTo("destroyed");
    assertThat(gone.json().getString("destroyed_at")).as("a destroyed sandbox says when").isNotNull()
        .isEqualTo(gone.json().getString("terminated_at"));
    assertThat(gone.header("ETag")).isEqualTo("\"" + gone.json().getInteger("version") + "\"");
    assertThat(gone.json().getString("termination_reason")).isEqualTo("operator");
    assertThat(gone.json().getString("terminated_by_api_key_name")).isEqualTo("Initial key");
    assertThat(gone.json().getInteger("version")).isEqualTo(4);
    assertThat(Path.of(sbx.getString("provider_resource_id"))).doesNotExist();
    Resp later = exec(id, new JsonObject().put("command", "true"));
    assertThat(later.status()).isEqualTo(409);
    assertThat(later.detail()).isEqualTo("sandbox is destroyed");
  }

  /**
   * Repeated executions are launched while their row is inserted. When the insert finds the sandbox no
   * longer running (here: stopped behind this node's back, as another node would), the caller gets the 409
   * and the program launched meanwhile is killed (this one before its second step).
   */
  @Test
  void an_execution_launched_early_on_a_sandbox_that_stopped_is_refused_and_killed() throws Exception {
    JsonObject sbx = gw.sandbox(key, new JsonObject().put("timeout_secs", 300));
    String id = sbx.getString("id");
    assertThat(exec(id, new JsonObject().put("command", "true")).status()).isEqualTo(200);
    gw.gateway.pool().preparedQuery("UPDATE sandboxes SET status = 'stopping' WHERE id = $1")
        .execute(io.vertx.sqlclient.Tuple.of(id)).await();
    Resp refused = exec(id, new JsonObject().put("command", "sleep 1; touch launched-late"));
    assertThat(refused.status()).isEqualTo(409);
    assertThat(refused.detail()).isEqualTo("sandbox is stopping");
    Waits.upTo(3).during(Duration.ofSeconds(2)).untilAsserted(
        () -> assertThat(Path.of(sbx.getString("provider_resource_id"), "launched-late")).doesNotExist());
    gw.gateway.pool().preparedQuery("UPDATE sandboxes SET status = 'running' WHERE id = $1")
        .execute(io.vertx.sqlclient.Tuple.of(id)).await();
    assertThat(exec(id, new JsonObject().put("command", "echo again")).json().getString("stdout")).isEqualTo("again\n");
    assertThat(gw.delete("/v1/sandboxes/" + id, key).status()).isEqualTo(200);
  }

  @Test
  void non_zero_exit_is_preserved_and_timeout_is_124() {
    String id = gw.sandbox(key, new JsonObject().put("timeout_secs", 300)).getString("id");
    Resp fail = exec(id, new JsonObject().put("command", "echo partial; exit 17"));
    assertThat(fail.status()).isEqualTo(200);
    assertThat(fail.json().getInteger("exit_code")).isEqualTo(17);
    assertThat(fail.json().getString("stdout")).isEqualTo("partial\n");
    long t0 = System.nanoTime();
    Resp slow = exec(id, new JsonObject().put("command", "echo started; sleep 30").put("timeout_secs", 1));
    assertThat((System.nanoTime() - t0) / 1_000_000).isLessThan(10_000);
    assertThat(slow.status()).isEqualTo(200);
    assertThat(slow.json().getInteger("exit_code")).isEqualTo(124);
    assertThat(slow.json().getBoolean("timed_out")).isTrue();
    assertThat(slow.json().getString("stdout")).isEqualTo("started\n");
  }

  @Test
  void create_is_idempotent_with_one_provider_call() throws IOException {
    JsonObject body = new JsonObject().put("backend", "local").put("env_vars", new JsonObject().put("A", "1"));
    Resp first = gw.post("/v1/sandboxes", key, body, "Idempotency-Key", "launch-001");
    Resp second = gw.post("/v1/sandboxes", key, body, "Idempotency-Key", "launch-001");
    assertThat(first.status()).isEqualTo(201);
    assertThat(second.status()).isEqualTo(201);
    assertThat(second.json()).isEqualTo(first.json());
    String id = first.json().getString("id");
    try (Stream<Path> dirs = Files.list(gw.dataDir.resolve("sandboxes"))) {
      assertThat(dirs.filter(p -> p.getFileName().toString().equals(id))).hasSize(1);
    }
    Resp detail = gw.get("/v1/sandboxes/" + id + "/detail", key);
    assertThat(detail.json().getJsonArray("attempts")).hasSize(1);
    assertThat(detail.json().getJsonArray("attempts").getJsonObject(0).getString("status")).isEqualTo("succeeded");

    Resp different = gw.post("/v1/sandboxes", key, body.copy().put("env_vars", new JsonObject().put("A", "2")),
        "Idempotency-Key", "launch-001");
    assertThat(different.status()).isEqualTo(409);
    assertThat(different.detail()).isEqualTo("idempotency key was already used with a different request");
    Resp tooLong = gw.post("/v1/sandboxes", key, body, "Idempotency-Key", "x".repeat(256));
    assertThat(tooLong.status()).isEqualTo(422);
    assertThat(tooLong.detail()).isEqualTo("idempotency key must contain 1 to 255 characters");
  }

  @Test
  void execute_is_idempotent_and_runs_once() {
    String id = gw.sandbox(key, null).getString("id");
    JsonObject body = new JsonObject().put("command", "echo run >> runs.txt; wc -l < runs.txt");
    Resp first = exec(id, body, "Idempotency-Key", "job-1");
    Resp replay = exec(id, body, "Idempotency-Key", "job-1");
    assertThat(first.status()).isEqualTo(200);
    assertThat(first.json().getString("request_id")).isEqualTo("job-1");
    assertThat(replay.json()).isEqualTo(first.json());
    Resp count = exec(id, new JsonObject().put("command", "wc -l < runs.txt"));
    assertThat(count.json().getString("stdout").trim()).isEqualTo("1");
    JsonArray executions = gw.get("/v1/sandboxes/" + id + "/detail", key).json().getJsonArray("executions");
    assertThat(executions).hasSize(2);
    assertThat(executions.getJsonObject(1).getString("request_id")).isEqualTo("job-1");
    assertThat(executions.getJsonObject(1).getString("status")).isEqualTo("completed");
  }

  @Test
  void a_concurrent_duplicate_execution_is_409_in_progress() throws Exception {
    String id = gw.sandbox(key, null).getString("id");
    var slow = java.util.concurrent.CompletableFuture.supplyAsync(
        () -> exec(id, new JsonObject().put("command", "sleep 1; echo done"), "Idempotency-Key", "dup"));
    Waits.upTo(10).until(() -> gw.get("/v1/sandboxes/" + id + "/detail", key).json().getJsonArray("executions")
        .stream().map(JsonObject.class::cast).anyMatch(e -> e.getString("request_id").equals("dup")));
    Resp dup = exec(id, new JsonObject().put("command", "sleep 1; echo done"), "Idempotency-Key", "dup");
    assertThat(dup.status()).isEqualTo(409);
    assertThat(dup.detail()).isEqualTo("execution is already in progress");
    assertThat(slow.get().json().getString("stdout")).isEqualTo("done\n");
  }

  @Test
  void if_match_guards_termination_and_delete_is_repeatable() {
    JsonObject sbx = gw.sandbox(key, null);
    String id = sbx.getString("id");
    Resp stale = gw.delete("/v1/sandboxes/" + id, key, "If-Match", "1");
    assertThat(stale.status()).isEqualTo(409);
    assertThat(stale.detail()).isEqualTo("sandbox changed; refresh before terminating");
    Resp bad = gw.delete("/v1/sandboxes/" + id, key, "If-Match", "abc");
    assertThat(bad.status()).isEqualTo(422);
    assertThat(bad.detail()).isEqualTo("If-Match must contain a sandbox version");
    assertThat(gw.delete("/v1/sandboxes/" + id, key, "If-Match", "0").detail())
        .isEqualTo("If-Match must contain a positive sandbox version");
    Resp ok = gw.delete("/v1/sandboxes/" + id, key, "If-Match", "W/\"2\"");
    assertThat(ok.status()).isEqualTo(200);
    Resp again = gw.delete("/v1/sandboxes/" + id, key, "If-Match", "1");
    assertThat(again.status()).isEqualTo(200);
    assertThat(again.json()).isEqualTo(ok.json());
  }

  @Test
  void other_tenants_see_nothing() {
    String other = gw.bootstrap("Other");
    String id = gw.sandbox(key, null).getString("id");
    for (Resp r : new Resp[] {
        gw.get("/v1/sandboxes/" + id, other),
        gw.get("/v1/sandboxes/" + id + "/detail", other),
        gw.post("/v1/sandboxes/" + id + "/execute", other, new JsonObject().put("command", "true")),
        gw.delete("/v1/sandboxes/" + id, other)}) {
      assertThat(r.status()).isEqualTo(404);
      assertThat(r.detail()).isEqualTo("sandbox not found");
    }
    assertThat(gw.get("/v1/sandboxes", other).array()).isEmpty();
    assertThat(gw.get("/v1/sandboxes/" + id, key).json().getString("status")).isEqualTo("running");
  }

  @Test
  void list_is_newest_first_and_pages_with_a_cursor() {
    String org = gw.bootstrap("Pager");
    for (int i = 0; i < 5; i++) {
      gw.sandbox(org, null);
    }
    JsonArray all = gw.get("/v1/sandboxes", org).array();
    assertThat(all).hasSize(5);
    JsonArray collected = new JsonArray();
    String cursor = null;
    int pages = 0;
    do {
      Resp page = gw.get("/v1/sandboxes?limit=2" + (cursor == null ? "" : "&cursor=" + cursor), org);
      page.array().forEach(collected::add);
      cursor = page.header("X-Next-Cursor");
      pages++;
    } while (cursor != null);
    assertThat(pages).isEqualTo(3);
    assertThat(collected).isEqualTo(all);
    assertThat(gw.get("/v1/sandboxes?cursor=not-a-cursor&limit=2", org).detail()).isEqualTo("invalid pagination cursor");
    assertThat(gw.get("/v1/sandboxes?limit=0", org).status()).isEqualTo(422);
  }

  @Test
  void detail_has_the_contract_fields_only() {
    String id = gw.sandbox(key, null).getString("id");
    exec(id, new JsonObject().put("command", "echo hi"));
    JsonObject detail = gw.get("/v1/sandboxes/" + id + "/detail", key).json();
    assertThat(detail.fieldNames()).containsExactlyInAnyOrder("sandbox", "attempts", "executions", "cost",
        "provider_observations");
    assertThat(detail.encode()).doesNotContain("organization_id").doesNotContain("error_json")
        .doesNotContain("response_json").doesNotContain("request_fingerprint").doesNotContain("create_token");
    JsonObject e = detail.getJsonArray("executions").getJsonObject(0);
    assertThat(e.fieldNames()).containsExactlyInAnyOrder("id", "request_id", "status", "created_at", "completed_at",
        "response", "error");
    assertThat(e.getJsonObject("response").getString("stdout")).isEqualTo("hi\n");
  }

  @Test
  void env_values_are_used_but_never_stored_or_returned() {
    JsonObject sbx = gw.sandbox(key, new JsonObject().put("env_vars", new JsonObject().put("GREETING", "hola-value")));
    assertThat(sbx.getJsonObject("config").getJsonArray("env_var_names")).isEqualTo(new JsonArray().add("GREETING"));
    assertThat(sbx.encode()).doesNotContain("hola-value");
    Resp r = exec(sbx.getString("id"), new JsonObject().put("command", "test \"$GREETING\" = hola-value && echo same"));
    assertThat(r.json().getString("stdout")).isEqualTo("same\n");
    assertThat(DatabaseDump.of(gw)).doesNotContain("hola-value");
  }
}
