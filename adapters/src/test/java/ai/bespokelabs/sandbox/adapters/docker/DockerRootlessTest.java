package ai.bespokelabs.sandbox.adapters.docker;

import static org.assertj.core.api.Assertions.assertThat;

import io.vertx.core.Vertx;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Whether the engine runs rootless, which decides whether this host's egress rules can see its containers'
 * traffic: the real engine of the tests (rootful), and engines answering {@code GET /info} as the Engine API
 * describes it.
 */
class DockerRootlessTest {
  static Vertx vertx;

  @BeforeAll
  static void start() {
    vertx = Vertx.vertx();
  }

  @AfterAll
  static void stop() throws Exception {
    vertx.close().await(10, TimeUnit.SECONDS);
  }

  @Test
  void the_test_engine_runs_as_root() throws Exception {
    DockerProvider real = new DockerProvider(vertx, new DockerSettings(TestEngine.get().dockerHost(), TestEngine.IMAGE));
    assertThat(real.rootless().await(30, TimeUnit.SECONDS)).isFalse();
  }

  @Test
  void an_engine_listing_rootless_among_its_security_options_is_rootless() throws Exception {
    assertThat(rootless(new JsonArray().add("name=seccomp,profile=builtin").add("name=rootless")
        .add("name=cgroupns"))).isTrue();
    assertThat(rootless(new JsonArray().add("name=apparmor").add("name=seccomp,profile=default"))).isFalse();
    assertThat(rootless(new JsonArray().add("name=userns"))).as("user namespaces are not rootless").isFalse();
  }

  /** What {@link DockerProvider#rootless} makes of an engine whose {@code /info} lists {@code options}. */
  static boolean rootless(JsonArray options) throws Exception {
    List<String> unexpected = new CopyOnWriteArrayList<>();
    HttpServer engine = vertx.createHttpServer().requestHandler(req -> {
      if (req.method() == HttpMethod.GET && req.path().equals(DockerEngine.API + "/info")) {
        req.response().putHeader("Content-Type", "application/json")
            .end(new JsonObject().put("ID", "sim").put("OperatingSystem", "Linux").put("SecurityOptions", options)
                .encode());
      } else {
        unexpected.add(req.method() + " " + req.uri());
        req.response().setStatusCode(404).putHeader("Content-Type", "application/json")
            .end(new JsonObject().put("message", "page not found").encode());
      }
    }).listen(0, "127.0.0.1").await(10, TimeUnit.SECONDS);
    try {
      DockerProvider provider = new DockerProvider(vertx,
          new DockerSettings("tcp://127.0.0.1:" + engine.actualPort(), TestEngine.IMAGE));
      boolean answer = provider.rootless().await(10, TimeUnit.SECONDS);
      assertThat(unexpected).as("calls the Engine API does not have").isEmpty();
      return answer;
    } finally {
      engine.close().await(10, TimeUnit.SECONDS);
    }
  }
}
