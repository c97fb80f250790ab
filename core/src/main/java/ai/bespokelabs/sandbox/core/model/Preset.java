package ai.bespokelabs.sandbox.core.model;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.List;

/** Named sandbox defaults with setup commands: a built-in one or an organization's own. */
public record Preset(String name, String description, Double cpu, Integer memoryMb, Integer timeoutSecs,
    String image, List<String> setup, boolean builtIn) {

  public JsonObject toJson() {
    return new JsonObject().put("name", name).put("description", description).put("cpu", cpu)
        .put("memory_mb", memoryMb).put("timeout_secs", timeoutSecs).put("image", image)
        .put("setup_commands", new JsonArray(setup)).put("built_in", builtIn);
  }
}
