package ai.bespokelabs.sandbox.gateway.ops;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.gateway.TestGateway;
import ai.bespokelabs.sandbox.gateway.TestGateway.Resp;
import ai.bespokelabs.sandbox.testkit.SseClient;
import ai.bespokelabs.sandbox.testkit.Waits;
import ai.bespokelabs.sandbox.testkit.WsClient;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** {@code GET /metrics}: Prometheus text with the gateway's series, guarded by its token, on its own port. */
class MetricsTest {
  static final String TOKEN = "metrics-token-0123456789";

  static String scrape(TestGateway gw, String token) {
    Resp r = gw.send("GET", "/metrics", token, null);
    assertThat(r.status()).as(r.body()).isEqualTo(200);
    assertThat(r.header("Content-Type")).startsWith("text/plain");
    return r.body();
  }

  @Test
  void the_node_reports_http_executions_streams_ledger_pool_and_jvm_series_without_tenant_labels() throws Exception {
    try (TestGateway gw = new TestGateway(Map.of("BESPOKE_METRICS_TOKEN", TOKEN))) {
      String key = gw.bootstrap("Scraped");
      String id = gw.sandbox(key, null).getString("id");
      Resp done = gw.post("/v1/sandboxes/" + id + "/execute", key, new JsonObject().put("command", "echo metered"));
      assertThat(done.status()).as(done.body()).isEqualTo(200);
      try (SseClient sse = SseClient.open(gw.base + "/v1/sandboxes/" + id + "/execute", key, "POST",
          new JsonObject().put("command", "printf streamed; exit 3").encode())) {
        while (!"exit".equals(sse.next().name())) {
          // read to the end
        }
      }

      assertThat(gw.send("GET", "/metrics", null, null).status()).isEqualTo(401);
      assertThat(gw.send("GET", "/metrics", "wrong", null).status()).isEqualTo(401);
      Waits.upTo(20).untilAsserted(() -> assertThat(scrape(gw, TOKEN))
          .contains("sandbox_executions_started_total{backend=\"local\"} 2.0")
          .contains("sandbox_executions_ended_total{backend=\"local\",status=\"completed\"} 2.0")
          .contains("sandbox_sandboxes_started_total{backend=\"local\"} 1.0")
          .contains("sandbox_ledger_events_priced_total")
          .contains("sandbox_ledger_lag_seconds_count"));
      String text = scrape(gw, TOKEN);
      assertThat(text)
          .contains("sandbox_execution_duration_seconds_count{backend=\"local\"} 2")
          .contains("sandbox_stream_bytes_total{transport=\"sse\"} 8.0")
          .contains("sandbox_stream_watchers{transport=\"sse\"} 0.0")
          .contains("sandbox_stream_credits_held 0.0")
          .containsPattern("vertx_http_server_requests_total\\{[^}]*route=\"/v1/sandboxes/:sandbox_id/execute\"")
          .contains("jvm_memory_used_bytes")
          .contains("process_uptime_seconds");
      // request latency by route template, method and status: the execute above, counted under its template
      assertThat(text)
          .containsPattern("vertx_http_server_response_time_seconds_count\\{code=\"200\",method=\"POST\","
              + "route=\"/v1/sandboxes/:sandbox_id/execute\"\\} [1-9]")
          .containsPattern("vertx_http_server_response_time_seconds_sum\\{code=\"200\",method=\"POST\","
              + "route=\"/v1/sandboxes/:sandbox_id/execute\"\\} [0-9.E-]+")
          .containsPattern("vertx_http_server_response_time_seconds_count\\{code=\"201\",method=\"POST\","
              + "route=\"/v1/sandboxes\"\\} 1");
      // the PostgreSQL pool: connections in use, requests waiting for one, and how long they waited and held one
      assertThat(text)
          .containsPattern("vertx_pool_in_use\\{[^}]*pool_type=\"sql\"\\} [0-9]")
          .containsPattern("vertx_pool_queue_pending\\{[^}]*pool_type=\"sql\"\\} [0-9]")
          .containsPattern("vertx_pool_queue_time_seconds_count\\{[^}]*pool_type=\"sql\"\\} [1-9]")
          .containsPattern("vertx_pool_usage_seconds_count\\{[^}]*pool_type=\"sql\"\\} [1-9]");
      // no series names a sandbox, an organization, a key or an execution
      assertThat(text).doesNotContain(id).doesNotContain(key).doesNotContain("org_").doesNotContain("exe_")
          .doesNotContain(TOKEN);

      assertThat(gw.delete("/v1/sandboxes/" + id, key).status()).isEqualTo(200);
      Waits.upTo(20).untilAsserted(() -> assertThat(scrape(gw, TOKEN))
          .contains("sandbox_sandboxes_ended_total{backend=\"local\",reason=\"operator\"} 1.0"));

      // a deadline the supervisor enforces: claimed, ended as ttl_expired, its lateness measured
      String due = gw.sandbox(key, null).getString("id");
      assertThat(gw.post("/v1/sandboxes/" + due + "/timeout", key, new JsonObject().put("timeout_secs", 1)).status())
          .isEqualTo(200);
      Waits.upTo(30).untilAsserted(() -> assertThat(scrape(gw, TOKEN))
          .containsPattern("sandbox_supervisor_claims_total [1-9]")
          .contains("sandbox_sandboxes_ended_total{backend=\"local\",reason=\"ttl_expired\"} 1.0")
          .contains("sandbox_supervisor_deadline_lateness_seconds_count 1"));
    }
  }

  @Test
  void streams_open_on_sse_and_on_a_websocket_show_in_the_watcher_gauges_until_they_close() {
    try (TestGateway gw = new TestGateway(Map.of())) {
      String key = gw.bootstrap("Watched");
      String id = gw.sandbox(key, null).getString("id");
      Resp started = gw.post("/v1/sandboxes/" + id + "/executions", key,
          new JsonObject().put("command", "printf open; sleep 60"));
      assertThat(started.status()).as(started.body()).isEqualTo(202);
      String execution = gw.base + "/v1/sandboxes/" + id + "/executions/" + started.json().getString("id");
      try (SseClient sse = SseClient.open(execution + "/stream", key, "GET", null);
          WsClient ws = WsClient.connect(execution + "/ws", key)) {
        assertThat(sse.next().name()).isEqualTo("stdout");
        assertThat(ws.nextJson().getString("type")).isEqualTo("stdout");
        assertThat(scrape(gw, null))
            .contains("sandbox_stream_watchers{transport=\"sse\"} 1.0")
            .contains("sandbox_stream_watchers{transport=\"websocket\"} 1.0");
      }
      Waits.upTo(20).untilAsserted(() -> assertThat(scrape(gw, null))
          .contains("sandbox_stream_watchers{transport=\"sse\"} 0.0")
          .contains("sandbox_stream_watchers{transport=\"websocket\"} 0.0"));
      assertThat(gw.post(execution.substring(gw.base.length()) + "/signal", key,
          new JsonObject().put("signal", "KILL")).status()).isEqualTo(204);
    }
  }

  @Test
  void provider_failures_of_every_operation_are_counted_once_by_backend_and_code() {
    try (TestGateway gw = new TestGateway(Map.of())) {
      String key = gw.bootstrap("Failing");
      String id = gw.sandbox(key, null).getString("id");
      // no lifecycle event records this one: a snapshot, which the local backend does not offer
      Resp snapshot = gw.post("/v1/sandboxes/" + id + "/snapshot", key, null);
      assertThat(snapshot.status()).as(snapshot.body()).isEqualTo(502);
      assertThat(snapshot.json().getJsonObject("detail").getString("code")).isEqualTo("feature_not_supported");
      // these two also end in lifecycle events (execution.failed, sandbox.failed), which must not count them again
      Resp exec = gw.post("/v1/sandboxes/" + id + "/execute", key,
          new JsonObject().put("command", "/no/such/program").put("args", new JsonArray().add("x")));
      assertThat(exec.status()).as(exec.body()).isEqualTo(502);
      assertThat(exec.json().getJsonObject("detail").getString("code")).isEqualTo("execution_failed");
      assertThat(gw.post("/v1/presets", key, new JsonObject().put("name", "failing-setup")
          .put("setup_commands", new JsonArray().add("exit 7"))).status()).isEqualTo(201);
      Resp create = gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "local")
          .put("preset", "failing-setup"));
      assertThat(create.status()).as(create.body()).isEqualTo(502);
      assertThat(create.json().getJsonObject("detail").getString("code")).isEqualTo("workspace");

      // once the ledger has priced both lifecycle events, each failure is counted exactly once
      Waits.upTo(20).untilAsserted(() -> assertThat(scrape(gw, null))
          .contains("sandbox_executions_ended_total{backend=\"local\",status=\"failed\"} 1.0")
          .contains("sandbox_sandboxes_ended_total{backend=\"local\",reason=\"failed\"} 1.0"));
      String text = scrape(gw, null);
      assertThat(text)
          .contains("sandbox_provider_errors_total{backend=\"local\",code=\"feature_not_supported\"} 1.0")
          .contains("sandbox_provider_errors_total{backend=\"local\",code=\"execution_failed\"} 1.0")
          .contains("sandbox_provider_errors_total{backend=\"local\",code=\"workspace\"} 1.0")
          // the event bus counts the failed replies apart, by failure type (a timeout would be TIMEOUT)
          .containsPattern("vertx_eventbus_reply_failures_total\\{[^}]*failure=\"RECIPIENT_FAILURE\"[^}]*\\} [1-9]")
          .doesNotContain(id).doesNotContain(key).doesNotContain("org_");
    }
  }

  @Test
  void a_metrics_port_of_its_own_takes_metrics_off_the_api_port() throws Exception {
    int port = TestGateway.freePort();
    try (TestGateway gw = new TestGateway(Map.of("BESPOKE_METRICS_PORT", String.valueOf(port)))) {
      assertThat(gw.send("GET", "/metrics", null, null).status()).isEqualTo(404);
      java.net.http.HttpResponse<String> r = gw.client.send(java.net.http.HttpRequest.newBuilder(
          java.net.URI.create("http://127.0.0.1:" + port + "/metrics")).build(),
          java.net.http.HttpResponse.BodyHandlers.ofString());
      assertThat(r.statusCode()).isEqualTo(200);
      assertThat(r.body()).contains("jvm_memory_used_bytes");
      java.net.http.HttpResponse<String> other = gw.client.send(java.net.http.HttpRequest.newBuilder(
          java.net.URI.create("http://127.0.0.1:" + port + "/v1/sandboxes")).build(),
          java.net.http.HttpResponse.BodyHandlers.ofString());
      assertThat(other.statusCode()).isEqualTo(404);
    }
  }
}
