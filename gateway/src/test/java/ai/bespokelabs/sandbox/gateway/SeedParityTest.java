package ai.bespokelabs.sandbox.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.gateway.TestGateway.Resp;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Executions on host backends behave as the seed's local backend runs them. */
class SeedParityTest {
  static TestGateway gw;
  static String key;

  @BeforeAll
  static void start() {
    gw = new TestGateway();
    key = gw.bootstrap("Parity");
  }

  @AfterAll
  static void stop() {
    gw.close();
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
}
