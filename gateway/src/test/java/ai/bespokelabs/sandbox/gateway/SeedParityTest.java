package ai.bespokelabs.sandbox.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.gateway.TestGateway.Resp;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Executions on host backends behave as the seed's local backend runs them. */
@ExtendWith(GatewayExtension.class)
class SeedParityTest {
  static TestGateway gw;
  static String key;

  @BeforeAll
  static void start() {
    key = gw.bootstrap("Parity");
  }

  static Resp exec(String id, JsonObject body) {
    return gw.post("/v1/sandboxes/" + id + "/execute", key, body);
  }

  @ParameterizedTest
  @ValueSource(strings = {"local", "bwrap"})
  void command_lines_run_under_bash(String backend) {
    String id = gw.sandbox(key, new JsonObject().put("backend", backend)).getString("id");
    Resp test = exec(id, new JsonObject().put("command", "[[ 1 == 1 ]] && echo ok"));
    assertThat(test.json().getString("stdout")).as(test.body()).isEqualTo("ok\n");
    Resp bytes = exec(id, new JsonObject().put("command", "printf '\\xff' | od -An -tx1"));
    assertThat(bytes.json().getString("stdout").trim()).isEqualTo("ff");
  }

  @ParameterizedTest
  @ValueSource(strings = {"local", "bwrap"})
  void an_empty_args_list_means_no_arguments(String backend) {
    String id = gw.sandbox(key, new JsonObject().put("backend", backend)).getString("id");
    Resp r = exec(id, new JsonObject().put("command", "echo hi there").put("args", new JsonArray()));
    assertThat(r.status()).as(r.body()).isEqualTo(200);
    assertThat(r.json().getString("stdout")).isEqualTo("hi there\n");
  }

  @ParameterizedTest
  @ValueSource(strings = {"local", "bwrap"})
  void sandbox_root_and_home_name_the_sandbox_directory(String backend) {
    JsonObject sbx = gw.sandbox(key, new JsonObject().put("backend", backend));
    String inside = "bwrap".equals(backend) ? "/sandbox" : sbx.getString("provider_resource_id");
    Resp r = exec(sbx.getString("id"), new JsonObject().put("command", "echo \"$SANDBOX_ROOT|$HOME\""));
    assertThat(r.json().getString("stdout")).isEqualTo(inside + "|" + inside + "\n");
  }

  @org.junit.jupiter.api.Test
  void an_unknown_language_is_the_callers_mistake() {
    String id = gw.sandbox(key, null).getString("id");
    Resp r = exec(id, new JsonObject().put("code", "print 1").put("language", "cobol"));
    assertThat(r.status()).isEqualTo(422);
    assertThat(String.valueOf(r.detail())).startsWith("unsupported language: cobol (supported: bash, javascript,");
  }

  @ParameterizedTest
  @ValueSource(strings = {"local", "bwrap"})
  void a_command_ended_by_its_sandboxs_timeout_reports_a_timeout(String backend) throws Exception {
    String id = gw.sandbox(key, new JsonObject().put("backend", backend).put("timeout_secs", 3)).getString("id");
    Thread.sleep(1500);
    long t0 = System.nanoTime();
    Resp r = exec(id, new JsonObject().put("command", "echo started; sleep 30"));
    assertThat((System.nanoTime() - t0) / 1_000_000).as("ended with the sandbox").isLessThan(10_000);
    assertThat(r.status()).as(r.body()).isEqualTo(200);
    assertThat(r.json().getInteger("exit_code")).as(r.body()).isEqualTo(124);
    assertThat(r.json().getBoolean("timed_out")).isTrue();
    assertThat(r.json().getString("status")).isEqualTo("timed_out");
    assertThat(r.json().getString("stdout")).isEqualTo("started\n");
    assertThat(r.json().getString("stderr"))
        .matches("Command timed out after [0-9.]+s: the sandbox reached its timeout\n");
    JsonObject stored = gw.get("/v1/sandboxes/" + id + "/executions/" + r.json().getString("execution_id"), key).json();
    assertThat(stored.getString("status")).as(stored.encode()).isEqualTo("timed_out");
    assertThat(SupervisorTest.awaitStatus(gw, key, id, "destroyed").getString("termination_reason"))
        .isEqualTo("ttl_expired");
  }

  @org.junit.jupiter.api.Test
  void a_command_ended_by_its_own_timeout_says_so_on_stderr() {
    String id = gw.sandbox(key, null).getString("id");
    Resp r = exec(id, new JsonObject().put("command", "echo started; sleep 30").put("timeout_secs", 1));
    assertThat(r.json().getInteger("exit_code")).isEqualTo(124);
    assertThat(r.json().getBoolean("timed_out")).isTrue();
    assertThat(r.json().getString("stderr")).isEqualTo("Command timed out after 1s\n");
  }

  /** A DELETE is no timeout: a command it ends reports the kill (exit 137), as before. */
  @org.junit.jupiter.api.Test
  void a_command_ended_by_a_delete_reports_the_kill() throws Exception {
    String id = gw.sandbox(key, null).getString("id");
    var running = java.util.concurrent.CompletableFuture.supplyAsync(
        () -> exec(id, new JsonObject().put("command", "echo started; sleep 30")));
    Thread.sleep(1000);
    assertThat(gw.delete("/v1/sandboxes/" + id, key).status()).isEqualTo(200);
    Resp r = running.get(20, java.util.concurrent.TimeUnit.SECONDS);
    assertThat(r.json().getInteger("exit_code")).as(r.body()).isEqualTo(137);
    assertThat(r.json().getBoolean("timed_out")).isFalse();
    assertThat(r.json().getString("stderr")).isEmpty();
  }
}
