package ai.bespokelabs.sandbox.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.gateway.TestGateway.Resp;
import ai.bespokelabs.sandbox.gateway.echo.EchoFactory;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.Test;

/**
 * A backend registers itself: a package of the test class path with its factory listed in
 * {@code META-INF/services} is offered, listed and used like the built-in ones, with no shared file naming it.
 */
class SelfRegisteringBackendTest {
  @Test
  void a_backend_on_the_class_path_is_configured_listed_created_and_runs_programs() {
    // its settings are read like the gateway's own (here from the environment), though no shared file names them
    try (TestGateway gw = new TestGateway(java.util.Map.of(EchoFactory.ENABLED, "true", EchoFactory.PREFIX, "said:"))) {
      String key = gw.bootstrap("Echo");
      JsonObject echo = null;
      for (Object o : gw.get("/v1/providers", key).json().getJsonArray("items")) {
        if (EchoFactory.NAME.equals(((JsonObject) o).getString("backend"))) {
          echo = (JsonObject) o;
        }
      }
      assertThat(echo).as("listed by /v1/providers").isNotNull();
      assertThat(echo.getBoolean("configured")).isTrue();
      Resp created = gw.post("/v1/sandboxes", key, new JsonObject().put("backend", EchoFactory.NAME));
      assertThat(created.status()).as(created.body()).isEqualTo(201);
      String id = created.json().getString("id");
      Resp ran = gw.post("/v1/sandboxes/" + id + "/execute", key,
          new JsonObject().put("command", "hello").put("args", new JsonArray().add("world")));
      assertThat(ran.status()).as(ran.body()).isEqualTo(200);
      assertThat(ran.json().getString("stdout")).isEqualTo("said: hello world\n");
      assertThat(gw.delete("/v1/sandboxes/" + id, key).status()).isEqualTo(200);
    }
    try (TestGateway gw = new TestGateway()) {
      String key = gw.bootstrap("Plain");
      assertThat(gw.get("/v1/providers", key).json().getJsonArray("items").stream()
          .map(o -> ((JsonObject) o).getString("backend"))).as("off by its default").doesNotContain(EchoFactory.NAME);
    }
  }
}
