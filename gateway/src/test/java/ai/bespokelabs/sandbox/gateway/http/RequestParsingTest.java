package ai.bespokelabs.sandbox.gateway.http;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.gateway.routing.Backends;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonObject;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class RequestParsingTest {
  static final Backends LOCAL = new Backends(Map.of("local", true), Optional.empty(), "n1");

  static CreateRequest create(JsonObject body) {
    return CreateRequest.parse(Body.parse(body.toBuffer()), LOCAL);
  }

  @Test
  void fingerprint_is_canonical_and_includes_env_values() {
    String a = create(new JsonObject().put("backend", "local").put("cpu", 2).put("env_vars",
        new JsonObject().put("B", "2").put("A", "1"))).fingerprintInput();
    String b = create(new JsonObject().put("env_vars", new JsonObject().put("A", "1").put("B", "2")).put("cpu", 2)
        .put("backend", "LOCAL ")).fingerprintInput();
    assertThat(a).isEqualTo(b).isEqualTo("{\"backend\":\"local\",\"cpu\":2.0,\"env_vars\":{\"A\":\"1\",\"B\":\"2\"}}");
    String c = create(new JsonObject().put("backend", "local").put("cpu", 2).put("env_vars",
        new JsonObject().put("A", "1").put("B", "3"))).fingerprintInput();
    assertThat(c).isNotEqualTo(a);
  }

  @Test
  void nulls_are_dropped_before_validation() {
    CreateRequest r = create(new JsonObject().put("backend", "local").put("gpu", (Object) null)
        .put("files", (Object) null));
    assertThat(r.config().gpu()).isNull();
    assertThat(r.config().toStoredJson().isEmpty()).isTrue();
  }

  @Test
  void stored_config_has_env_names_only() {
    CreateRequest r = create(new JsonObject().put("backend", "local").put("env_vars",
        new JsonObject().put("Z", "secret-z").put("A", "secret-a")));
    JsonObject stored = r.config().toStoredJson();
    assertThat(stored.encode()).isEqualTo("{\"env_var_names\":[\"A\",\"Z\"]}");
  }

  @Test
  void if_match_forms() {
    assertThat(SandboxApi.ifMatch(null)).isNull();
    assertThat(SandboxApi.ifMatch(" 3 ")).isEqualTo(3);
    assertThat(SandboxApi.ifMatch("\"4\"")).isEqualTo(4);
    assertThat(SandboxApi.ifMatch("W/\"5\"")).isEqualTo(5);
    assertThatThrownBy(() -> SandboxApi.ifMatch("v1")).isInstanceOf(ApiException.class)
        .hasMessage("If-Match must contain a sandbox version");
    assertThatThrownBy(() -> SandboxApi.ifMatch("-2")).hasMessage("If-Match must contain a positive sandbox version");
  }

  @Test
  void error_mapping_table() {
    assertThat(ErrorMapper.map(ApiException.conflict("x"), 0)).isEqualTo(new ErrorMapper.Mapped(409, "x"));
    assertThat(ErrorMapper.map(new IllegalStateException("secret stack"), 0))
        .isEqualTo(new ErrorMapper.Mapped(500, "Internal control-plane error."));
    assertThat(ErrorMapper.map(null, 413)).isEqualTo(new ErrorMapper.Mapped(413, "request body is too large"));
    assertThat(ErrorMapper.map(null, 404).detail()).isEqualTo("Not Found");
  }

  @Test
  void body_rejects_non_objects() {
    assertThatThrownBy(() -> Body.parse(Buffer.buffer("\"x\""))).isInstanceOf(ApiException.class);
    assertThatThrownBy(() -> Body.parse(Buffer.buffer("{"))).isInstanceOf(ApiException.class);
  }
}
