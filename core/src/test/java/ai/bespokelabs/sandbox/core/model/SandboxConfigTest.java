package ai.bespokelabs.sandbox.core.model;

import static org.assertj.core.api.Assertions.assertThat;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class SandboxConfigTest {
  private static final SandboxConfig REQUESTED = new SandboxConfig("small", 2.0, 512, null, null, 600, "img",
      Map.of("ZED", "z", "TOKEN", "s3cret"), false, null, null, null, "/work", null, null);

  @Test
  void the_stored_form_keeps_the_names_and_drops_the_values() {
    JsonObject stored = REQUESTED.toStoredJson();
    assertThat(stored.getJsonArray("env_var_names")).isEqualTo(new JsonArray().add("TOKEN").add("ZED"));
    assertThat(stored.containsKey("env_vars")).isFalse();
    assertThat(stored.encode()).doesNotContain("s3cret");
    assertThat(REQUESTED.envVarNames()).containsExactly("TOKEN", "ZED");
  }

  @Test
  void a_stored_configuration_reads_back_to_the_same_stored_form() {
    JsonObject stored = REQUESTED.toStoredJson();
    SandboxConfig back = SandboxConfig.fromStoredJson(new JsonObject(stored.encode()));
    assertThat(back.envVars()).isNull();
    assertThat(back.envVarNames()).containsExactly("TOKEN", "ZED");
    assertThat(back.cpu()).isEqualTo(2.0);
    assertThat(back.memoryMb()).isEqualTo(512);
    assertThat(back.timeoutSecs()).isEqualTo(600);
    assertThat(back.allowInternet()).isFalse();
    assertThat(back.workdir()).isEqualTo("/work");
    assertThat(back.toStoredJson()).isEqualTo(stored);
    SandboxConfig none = SandboxConfig.fromStoredJson(new JsonObject().put("cpu", 1));
    assertThat(none.cpu()).isEqualTo(1.0);
    assertThat(none.envVarNames()).isNull();
    assertThat(none.toStoredJson()).isEqualTo(new JsonObject().put("cpu", 1.0));
  }

  @Test
  void names_given_without_values_are_kept_sorted() {
    SandboxConfig c = new SandboxConfig(null, null, null, null, null, null, null, null, null, null, null, null, null,
        null, null, List.of("b", "a"));
    assertThat(c.envVarNames()).containsExactly("a", "b");
    assertThat(c.toWireJson().isEmpty()).isTrue();
  }
}
