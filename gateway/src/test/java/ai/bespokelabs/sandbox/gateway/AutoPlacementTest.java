package ai.bespokelabs.sandbox.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.adapters.daytona.DaytonaSimulator;
import ai.bespokelabs.sandbox.adapters.e2b.E2bSimulator;
import ai.bespokelabs.sandbox.gateway.TestGateway.Resp;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@code backend: "auto"} against the E2B and Daytona simulators beside the host backends, priced by
 * {@code conf/pricing.json}: E2B 0.083 $ per vCPU-hour with memory included, Daytona 0.036 per vCPU-hour plus
 * 0.018 per GiB-hour. One vCPU with 1 GiB is cheaper on Daytona (0.054), with 4 GiB on E2B (0.083 against 0.108).
 */
class AutoPlacementTest {
  static final String DAYTONA_KEY = "dtn_auto_placement_key";
  static E2bSimulator e2b;
  static DaytonaSimulator daytona;
  static TestGateway gw;

  @BeforeAll
  static void start() {
    e2b = E2bSimulator.start();
    daytona = DaytonaSimulator.start(DAYTONA_KEY).startDelayMs(20);
    Map<String, String> env = new HashMap<>(e2b.env());
    env.put("DAYTONA_API_KEY", DAYTONA_KEY);
    env.put("DAYTONA_API_URL", daytona.url());
    gw = new TestGateway(env);
  }

  @AfterEach
  void conforming() {
    e2b.faults().clear();
    daytona.clearFaults();
    assertThat(e2b.violations()).as("requests E2B would refuse").isEmpty();
    assertThat(daytona.violations()).as("requests Daytona would refuse").isEmpty();
  }

  @AfterAll
  static void stop() {
    gw.close();
    e2b.close();
    daytona.close();
  }

  static JsonObject vm(int memoryMb) {
    return new JsonObject().put("backend", "auto").put("isolation", "vm").put("cpu", 1).put("memory_mb", memoryMb);
  }

  static Map<String, JsonObject> candidates(JsonObject placement) {
    Map<String, JsonObject> out = new HashMap<>();
    for (Object o : placement.getJsonArray("candidates")) {
      out.put(((JsonObject) o).getString("backend"), (JsonObject) o);
    }
    return out;
  }

  static JsonObject created(Resp r) {
    assertThat(r.status()).as(r.body()).isEqualTo(201);
    return r.json();
  }

  @Test
  void the_cheapest_fitting_backend_wins_memory_moves_it_and_the_plan_agrees() {
    String key = gw.bootstrap("Auto cheapest");
    JsonObject planned = gw.get("/v1/placement?isolation=vm&cpu=1&memory_mb=1024", key).json();
    assertThat(planned.getString("chosen")).isEqualTo("daytona");

    JsonObject small = created(gw.post("/v1/sandboxes", key, vm(1024)));
    assertThat(small.getString("backend")).as("what GET /v1/placement said").isEqualTo("daytona");
    JsonObject placement = small.getJsonObject("placement");
    assertThat(placement.getString("requested")).isEqualTo("auto");
    assertThat(placement.getString("chosen")).isEqualTo("daytona");
    Map<String, JsonObject> c = candidates(placement);
    assertThat(c.get("daytona").getString("status")).isEqualTo("chosen");
    assertThat(c.get("daytona").getString("hourly_usd")).isEqualTo("0.054");
    assertThat(c.get("e2b").getString("status")).isEqualTo("not_tried");
    assertThat(c.get("e2b").getString("hourly_usd")).isEqualTo("0.083");
    assertThat(c.get("local").getString("status")).isEqualTo("rejected");
    assertThat(c.get("local").getString("reason")).isEqualTo("isolation process is below the requested vm");
    assertThat(small.getString("hourly_rate_usd")).isEqualTo("0.054");

    Resp ran = gw.post("/v1/sandboxes/" + small.getString("id") + "/execute", key,
        new JsonObject().put("command", "echo placed"));
    assertThat(ran.status()).as(ran.body()).isEqualTo(200);
    assertThat(ran.json().getString("stdout")).isEqualTo("placed\n");
    JsonObject detail = gw.get("/v1/sandboxes/" + small.getString("id") + "/detail", key).json();
    assertThat(detail.getJsonObject("sandbox").getJsonObject("placement").getString("chosen"))
        .as("the detail keeps the decision").isEqualTo("daytona");

    assertThat(gw.get("/v1/placement?isolation=vm&cpu=1&memory_mb=4096", key).json().getString("chosen"))
        .isEqualTo("e2b");
    JsonObject large = created(gw.post("/v1/sandboxes", key, vm(4096)));
    assertThat(large.getString("backend")).as("4 GiB costs 0.108 on Daytona, 0.083 on E2B").isEqualTo("e2b");
    assertThat(e2b.sandboxes()).containsKey(large.getString("provider_resource_id"));

    JsonObject anywhere = created(gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "auto")));
    assertThat(anywhere.getString("backend")).as("free, and at equal price the stronger isolation").isEqualTo("bwrap");
    JsonObject local = created(gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "auto")
        .put("prefer", new JsonArray().add("local"))));
    assertThat(local.getString("backend")).as("prefer orders equal prices").isEqualTo("local");

    JsonObject preferred = created(gw.post("/v1/sandboxes", key, vm(1024).put("exclude", new JsonArray().add("daytona"))));
    assertThat(preferred.getString("backend")).isEqualTo("e2b");
    assertThat(candidates(preferred.getJsonObject("placement")).get("daytona").getString("reason"))
        .isEqualTo("excluded by the request");
    for (JsonObject s : new JsonObject[] {small, large, anywhere, local, preferred}) {
      assertThat(gw.delete("/v1/sandboxes/" + s.getString("id"), key).status()).isEqualTo(200);
    }
  }

  @Test
  void a_refusal_fails_over_and_a_retry_of_the_same_create_answers_the_same_sandbox() {
    String key = gw.bootstrap("Auto failover");
    long tries = daytona.count(HttpMethod.POST, "/api/sandbox");
    daytona.inject(HttpMethod.POST, "/api/sandbox", DaytonaSimulator.Fault.status(503));
    JsonObject sbx = created(gw.post("/v1/sandboxes", key, vm(1024), "Idempotency-Key", "auto-failover-1"));
    assertThat(daytona.count(HttpMethod.POST, "/api/sandbox")).as("Daytona was asked first").isEqualTo(tries + 1);
    assertThat(sbx.getString("backend")).isEqualTo("e2b");
    assertThat(sbx.getString("status")).isEqualTo("running");
    assertThat(sbx.getString("hourly_rate_usd")).as("the rate of where it runs").isEqualTo("0.083");
    assertThat(sbx.getInteger("attempt_count")).isEqualTo(2);
    Map<String, JsonObject> c = candidates(sbx.getJsonObject("placement"));
    assertThat(c.get("daytona").getString("status")).isEqualTo("failed");
    assertThat(c.get("daytona").getString("reason")).isEqualTo("create failed: creation_failed (provider status 503)");
    assertThat(c.get("e2b").getString("status")).isEqualTo("chosen");
    assertThat(sbx.getJsonObject("placement").getString("chosen")).isEqualTo("e2b");

    JsonObject again = created(gw.post("/v1/sandboxes", key, vm(1024), "Idempotency-Key", "auto-failover-1"));
    assertThat(again.getString("id")).isEqualTo(sbx.getString("id"));
    assertThat(again.getString("backend")).isEqualTo("e2b");
    assertThat(daytona.count(HttpMethod.POST, "/api/sandbox")).as("a replay creates nothing").isEqualTo(tries + 1);
    Resp other = gw.post("/v1/sandboxes", key, vm(2048), "Idempotency-Key", "auto-failover-1");
    assertThat(other.status()).as("the same key with another body").isEqualTo(409);

    JsonArray logs = new JsonArray(gw.get("/v1/sandboxes/" + sbx.getString("id") + "/logs", key).body());
    assertThat(logs.encode()).contains("creation on daytona failed (provider error creation_failed); trying e2b");
    JsonArray attempts = gw.get("/v1/sandboxes/" + sbx.getString("id") + "/detail", key).json()
        .getJsonArray("attempts");
    assertThat(attempts).hasSize(2);
    assertThat(attempts.getJsonObject(0).getString("backend")).isEqualTo("daytona");
    assertThat(attempts.getJsonObject(0).getString("status")).isEqualTo("failed");
    assertThat(attempts.getJsonObject(1).getString("backend")).isEqualTo("e2b");
    assertThat(attempts.getJsonObject(1).getString("status")).isEqualTo("succeeded");
    assertThat(gw.delete("/v1/sandboxes/" + sbx.getString("id"), key).status()).isEqualTo(200);
  }

  @Test
  void a_dropped_connection_during_create_does_not_fail_over() {
    String key = gw.bootstrap("Auto lost create");
    int onE2b = e2b.sandboxes().size();
    daytona.inject(HttpMethod.POST, "/api/sandbox", DaytonaSimulator.Fault.loseResponse());
    Resp lost = gw.post("/v1/sandboxes", key, vm(1024));
    assertThat(lost.status()).as(lost.body()).isGreaterThanOrEqualTo(502);
    JsonObject detail = lost.json().getJsonObject("detail");
    assertThat(detail.getString("backend")).isEqualTo("daytona");
    assertThat(detail.getString("outcome")).isEqualTo("unknown");
    assertThat(e2b.sandboxes()).as("nothing was tried on E2B").hasSize(onE2b);

    JsonObject failed = new JsonArray(gw.get("/v1/sandboxes", key).body()).stream()
        .map(JsonObject.class::cast).filter(s -> "failed".equals(s.getString("status"))).findFirst().orElseThrow();
    assertThat(failed.getString("backend")).isEqualTo("daytona");
    Map<String, JsonObject> c = candidates(failed.getJsonObject("placement"));
    assertThat(c.get("daytona").getString("status")).isEqualTo("failed");
    assertThat(c.get("daytona").getString("reason")).endsWith("the outcome is unknown, so no other backend was tried");
    assertThat(c.get("e2b").getString("status")).isEqualTo("not_tried");
    assertThat(failed.getJsonObject("placement").getString("chosen")).isNull();
  }

  @Test
  void the_policy_applies_to_the_choice_and_may_make_auto_the_default() {
    String key = gw.bootstrap("Auto policy");
    Resp put = gw.send("PUT", "/v1/policies/current", key, new JsonObject()
        .put("allowed_backends", new JsonArray().add("e2b").add("local")).put("default_backend", "auto").encode());
    assertThat(put.status()).as(put.body()).isEqualTo(200);
    assertThat(put.json().getString("default_backend")).isEqualTo("auto");

    JsonObject sbx = created(gw.post("/v1/sandboxes", key, new JsonObject().put("isolation", "vm").put("cpu", 1)
        .put("memory_mb", 1024)));
    assertThat(sbx.getString("backend")).as("the cheapest, Daytona, is not allowed").isEqualTo("e2b");
    assertThat(candidates(sbx.getJsonObject("placement")).get("daytona").getString("reason"))
        .isEqualTo("not allowed by the organization's policy");
    assertThat(gw.delete("/v1/sandboxes/" + sbx.getString("id"), key).status()).isEqualTo(200);

    assertThat(gw.send("PUT", "/v1/policies/current", key, new JsonObject().put("default_backend", "local").encode())
        .status()).isEqualTo(200);
    JsonObject local = created(gw.post("/v1/sandboxes", key, new JsonObject()));
    assertThat(local.getString("backend")).isEqualTo("local");
    assertThat(local.containsKey("placement")).as("a named backend has no placement").isFalse();
    assertThat(gw.delete("/v1/sandboxes/" + local.getString("id"), key).status()).isEqualTo(200);

    Resp bogus = gw.send("PUT", "/v1/policies/current", key, new JsonObject().put("default_backend", "bogus").encode());
    assertThat(bogus.status()).isEqualTo(422);
    assertThat(bogus.detail()).isEqualTo("default_backend must be auto or an enabled backend: bogus");
    Resp outside = gw.send("PUT", "/v1/policies/current", key, new JsonObject().put("default_backend", "daytona")
        .put("allowed_backends", new JsonArray().add("e2b")).encode());
    assertThat(outside.status()).isEqualTo(422);
    assertThat(outside.detail()).isEqualTo("default_backend must be one of allowed_backends");

    String plain = gw.bootstrap("Auto no default");
    Resp missing = gw.post("/v1/sandboxes", plain, new JsonObject().put("cpu", 1));
    assertThat(missing.status()).as("no policy default: backend stays required").isEqualTo(422);
    assertThat(missing.json().getJsonArray("detail").getJsonObject(0).getString("type")).isEqualTo("missing");
  }

  @Test
  void no_candidate_is_a_422_naming_every_backend_and_its_reason() {
    String key = gw.bootstrap("Auto none");
    int onE2b = e2b.sandboxes().size();
    long onDaytona = daytona.count(HttpMethod.POST, "/api/sandbox");
    Resp none = gw.post("/v1/sandboxes", key, vm(1024).put("max_hourly_usd", "0.05"));
    assertThat(none.status()).as(none.body()).isEqualTo(422);
    assertThat((String) none.detail()).startsWith("no backend can take this sandbox: ")
        .contains("daytona (costs 0.054 $/h, above max_hourly_usd 0.05)")
        .contains("e2b (costs 0.083 $/h, above max_hourly_usd 0.05)")
        .contains("local (isolation process is below the requested vm)")
        .contains("bwrap (");
    assertThat(e2b.sandboxes()).hasSize(onE2b);
    assertThat(daytona.count(HttpMethod.POST, "/api/sandbox")).isEqualTo(onDaytona);
    assertThat(new JsonArray(gw.get("/v1/sandboxes", key).body())).as("nothing was claimed").isEmpty();
    assertThat(gw.get("/v1/placement?isolation=vm&cpu=1&memory_mb=1024&max_hourly_usd=0.05", key).json()
        .getValue("chosen")).isNull();

    Resp named = gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "local").put("isolation", "vm"));
    assertThat(named.status()).isEqualTo(422);
    assertThat(named.detail()).isEqualTo("only backend auto takes isolation");
    Resp level = gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "auto").put("isolation", "hypervisor"));
    assertThat(level.status()).isEqualTo(422);
    assertThat(level.detail()).isEqualTo("isolation must be one of process, namespace, container, vm");
  }
}
