package ai.bespokelabs.sandbox.adapters.docker;

import ai.bespokelabs.sandbox.adapters.spi.Inventory;
import ai.bespokelabs.sandbox.core.bus.Messages.Resource;
import ai.bespokelabs.sandbox.core.error.ErrorCode;
import io.vertx.core.Future;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Our containers on the node's engine (found by their labels), their removal, and the engine's health. */
final class DockerInventory implements Inventory {
  private static final Logger LOG = LoggerFactory.getLogger(DockerInventory.class);
  private static final Duration CALL = Duration.ofSeconds(30);

  private final DockerEngine engine;

  DockerInventory(DockerEngine engine) {
    this.engine = engine;
  }

  /** Our containers on this engine; none when no engine is installed here. */
  @Override
  public Future<List<Resource>> list() {
    if (!engine.host().present()) {
      return Future.succeededFuture(List.of());
    }
    return containers(DockerProvider.MANAGED + "=true").map(found -> {
      List<Resource> out = new ArrayList<>();
      for (JsonObject c : found) {
        String sandbox = c.getJsonObject("Labels", new JsonObject()).getString(DockerProvider.SANDBOX);
        String state = c.getString("State", "");
        out.add(new Resource(c.getString("Id"), sandbox, "running".equals(state) ? "running" : "stopped", null));
      }
      return out;
    });
  }

  @Override
  public Future<Void> checkHealth() {
    return engine.get("health", "/_ping", Duration.ofSeconds(5)).compose(r -> r.ok() ? Future.<Void>succeededFuture()
        : Future.failedFuture(engine.statusFailure("health", r, ErrorCode.CONNECTION)));
  }

  /** Containers (any state) carrying {@code label} ({@code key=value}) besides our managed mark. */
  Future<List<JsonObject>> containers(String label) {
    JsonObject filters = new JsonObject().put("label", new JsonArray().add(DockerProvider.MANAGED + "=true")
        .add(label));
    return engine.get("list", "/containers/json?all=true&filters=" + DockerEngine.q(filters.encode()), CALL)
        .compose(r -> {
          if (!r.ok()) {
            return Future.failedFuture(engine.statusFailure("list", r, ErrorCode.COMMAND_FAILED));
          }
          List<JsonObject> out = new ArrayList<>();
          r.array().forEach(o -> {
            if (o instanceof JsonObject j) {
              out.add(j);
            }
          });
          return Future.succeededFuture(out);
        });
  }

  /**
   * Kills a container, then force-removes it with its anonymous volumes; false when it did not exist. The kill
   * comes first because Podman's forced removal stops a running container with its stop timeout (10 s for a
   * program that ignores SIGTERM) before removing it; a kill that finds it stopped or gone changes nothing.
   */
  Future<Boolean> remove(String id) {
    String container = "/containers/" + DockerEngine.q(id);
    return engine.post("destroy", container + "/kill", null, CALL).otherwiseEmpty()
        .compose(killed -> engine.delete("destroy", container + "?force=true&v=true", CALL)).compose(r -> {
      if (r.status() == 404) {
        return Future.succeededFuture(false);
      }
      if (!r.ok()) {
        LOG.debug("docker remove failed: {}", DockerEngine.message(r));
        return Future.failedFuture(engine.statusFailure("destroy", r, ErrorCode.COMMAND_FAILED));
      }
      return Future.succeededFuture(true);
    });
  }

  /** Removes the containers one after the other; true when every one was already gone. */
  Future<Boolean> removeAll(List<String> ids) {
    Future<Boolean> gone = Future.succeededFuture(true);
    for (String id : ids) {
      gone = gone.compose(all -> remove(id).map(removed -> all && !removed));
    }
    return gone;
  }
}
