package ai.bespokelabs.sandbox.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.testkit.StreamCheck;
import io.vertx.core.json.JsonObject;
import java.util.ServiceLoader;
import org.junit.jupiter.api.Test;

/** The check every gateway test runs through: it refuses answers and streamed events the document does not describe. */
class ContractCheckTest {
  static final String SBX = "sbx_" + "1".repeat(32);
  static final String EXE = "exe_" + "2".repeat(32);
  static final String BASE = "http://127.0.0.1:8000/v1/sandboxes/" + SBX;
  static final String STREAM = BASE + "/executions/" + EXE + "/stream?after=0";
  static final String EXECUTE = BASE + "/execute";
  static final String ATTACH = "ws://127.0.0.1:8000/v1/sandboxes/" + SBX + "/executions/" + EXE + "/ws";
  static final String START = "ws://127.0.0.1:8000/v1/sandboxes/" + SBX + "/executions/ws?mode=text";

  static JsonObject exit() {
    return new JsonObject("{\"type\":\"exit\",\"seq\":2,\"exit_code\":0,\"stdout\":\"hi\",\"stderr\":\"\","
        + "\"stdout_truncated\":false,\"stderr_truncated\":false,\"timed_out\":false,\"duration_ms\":41,"
        + "\"cancelled\":false,\"last_seq\":2,\"status\":\"completed\"}");
  }

  static String sse(String url, String name, String id, String data) {
    return ContractCheck.sseViolation("GET", url, name, id, new JsonObject(data));
  }

  @Test
  void answers_are_held_to_the_document() {
    assertThat(ContractCheck.violation("GET", "/healthz", 200, "application/json", "{\"status\":\"ok\"}")).isNull();
    assertThat(ContractCheck.violation("GET", "/healthz", 200, "application/json", "{\"status\":\"sick\"}"))
        .contains("/healthz");
    assertThat(ContractCheck.violation("GET", "/v1/sandboxes/sbx_1", 200, "application/json", "{\"id\":1}"))
        .isNotNull();
    assertThat(ContractCheck.violation("GET", "/v1/sandboxes/sbx_1", 404, "application/json",
        "{\"detail\":\"sandbox not found\"}")).isNull();
    assertThat(ContractCheck.violation("GET", "/v1/sandboxes/sbx_1", 299, "application/json", "{}"))
        .as("an undocumented status").isNotNull();
  }

  @Test
  void stream_events_as_the_document_describes_them_pass() {
    assertThat(sse(STREAM, "stdout", "1", "{\"type\":\"stdout\",\"seq\":1,\"data\":\"hi\"}")).isNull();
    assertThat(sse(STREAM, "stderr", "2", "{\"type\":\"stderr\",\"seq\":2,\"data_b64\":\"/w==\"}")).isNull();
    assertThat(sse(STREAM, "notice", "3", "{\"type\":\"notice\",\"seq\":3,\"message\":\"capped\",\"stream\":\"stdout\","
        + "\"cap_bytes\":1048576}")).isNull();
    assertThat(sse(STREAM, "gap", "9", "{\"type\":\"gap\",\"seq\":9,\"from_seq\":4,\"to_seq\":9,\"bytes\":null,"
        + "\"message\":\"output left the journal before this client read it\"}")).isNull();
    assertThat(ContractCheck.sseViolation("GET", STREAM, "exit", null, exit())).isNull();
    assertThat(sse(STREAM, "error", null, "{\"type\":\"error\",\"message\":\"execution failed: x\"}")).isNull();
    assertThat(ContractCheck.sseViolation("POST", EXECUTE, "started", null, new JsonObject().put("type", "started")
        .put("execution_id", EXE).put("request_id", "req_1"))).isNull();
    assertThat(ContractCheck.sseViolation("GET", "http://127.0.0.1:8000/v1/sandbox-events", "lifecycle", "7.1",
        new JsonObject().put("sandbox_id", SBX).put("type", "sandbox.running").put("status", "running")
            .put("occurred_at", "2026-12-01T20:15:42.113000+00:00"))).isNull();
    assertThat(ContractCheck.webSocketViolation(ATTACH, new JsonObject().put("type", "stdout").put("seq", 1)
        .put("data", "hi"))).isNull();
    assertThat(ContractCheck.webSocketViolation(START, new JsonObject().put("type", "started")
        .put("execution_id", EXE).put("request_id", "req_1"))).isNull();
    assertThat(ContractCheck.webSocketViolation(ATTACH, exit())).isNull();
  }

  @Test
  void malformed_stream_events_are_refused() {
    assertThat(sse(STREAM, "stdout", "1", "{\"type\":\"stdout\",\"seq\":1}"))
        .as("output without its bytes").contains("StreamOutputEvent").contains("data");
    assertThat(sse(STREAM, "stdout", "1", "{\"type\":\"stdout\",\"seq\":1,\"data\":\"a\",\"data_b64\":\"YQ==\"}"))
        .as("both encodings").isNotNull();
    assertThat(sse(STREAM, "stdout", "1", "{\"type\":\"stdout\",\"seq\":\"1\",\"data\":\"a\"}"))
        .as("seq as a string").contains("/seq");
    assertThat(ContractCheck.sseViolation("GET", STREAM, "exit", null, exit().copy().put("status", "exploded")))
        .as("an undocumented status").contains("/status");
    assertThat(ContractCheck.sseViolation("GET", STREAM, "exit", null, exit().copy().put("pid", 7)))
        .as("an undocumented field").contains("StreamExitEvent");
    JsonObject noStatus = exit().copy();
    noStatus.remove("status");
    assertThat(ContractCheck.sseViolation("GET", STREAM, "exit", null, noStatus)).contains("status");
    assertThat(sse(STREAM, "dance", null, "{\"type\":\"dance\"}")).as("an unknown type").contains("none of");
    assertThat(sse(STREAM, "stderr", "1", "{\"type\":\"stdout\",\"seq\":1,\"data\":\"a\"}"))
        .as("a name that is not the type").contains("named stderr");
    assertThat(sse(STREAM, "stdout", "2", "{\"type\":\"stdout\",\"seq\":1,\"data\":\"a\"}"))
        .as("an id that is not the seq").contains("seq 1");
    assertThat(ContractCheck.sseViolation("GET", STREAM, "exit", "2", exit())).as("an exit with an id")
        .contains("no id");
    assertThat(ContractCheck.sseViolation("GET", STREAM, "started", null, new JsonObject().put("type", "started")
        .put("execution_id", EXE).put("request_id", "req_1"))).as("started is execute's alone").contains("none of");
    assertThat(ContractCheck.sseViolation("GET", "http://127.0.0.1:8000/v1/sandbox-events", "lifecycle", "7.1",
        new JsonObject().put("sandbox_id", "sbx_1").put("type", "sandbox.running").put("status", "running")
            .put("occurred_at", "2026-12-01T20:15:42.113000+00:00"))).contains("/sandbox_id");
    assertThat(ContractCheck.webSocketViolation(ATTACH, new JsonObject().put("type", "stdout").put("seq", -1)
        .put("data", "hi"))).contains("/seq");
    assertThat(ContractCheck.webSocketViolation(ATTACH, new JsonObject().put("type", "stdin").put("data", "x")))
        .as("a client frame from the server").contains("none of");
    assertThat(ContractCheck.sseViolation("GET", "http://127.0.0.1:8000/v1/sandboxes", "x", null, new JsonObject()))
        .as("events from a route that declares none").contains("declares no events");
  }

  @Test
  void the_testkit_clients_hold_every_event_to_the_document() {
    assertThat(ServiceLoader.load(StreamCheck.class).stream().map(ServiceLoader.Provider::type))
        .contains(StreamContractCheck.class);
  }
}
