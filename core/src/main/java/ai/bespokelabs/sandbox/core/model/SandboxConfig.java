package ai.bespokelabs.sandbox.core.model;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.Map;
import java.util.TreeMap;

/**
 * The create-time configuration of a sandbox (the seed's SandboxCreate fields except {@code backend}).
 * Null means "not given". Env var values travel to the adapter but are never stored: the persisted form
 * carries only {@code env_var_names}.
 */
public record SandboxConfig(
    String preset,
    Double cpu,
    Integer memoryMb,
    Integer diskMb,
    String gpu,
    Integer timeoutSecs,
    String image,
    Map<String, String> envVars,
    Boolean allowInternet,
    String appName,
    String template,
    String snapshotId,
    String workdir,
    String gitRepo,
    String gitRef) {

  public SandboxConfig {
    envVars = envVars == null ? null : Map.copyOf(envVars);
  }

  /** All fields including env values, sorted by name: the adapter message and the fingerprint input. */
  public JsonObject toWireJson() {
    JsonObject j = new JsonObject(new TreeMap<>());
    put(j, "preset", preset);
    put(j, "cpu", cpu);
    put(j, "memory_mb", memoryMb);
    put(j, "disk_mb", diskMb);
    put(j, "gpu", gpu);
    put(j, "timeout_secs", timeoutSecs);
    put(j, "image", image);
    if (envVars != null) {
      j.put("env_vars", new JsonObject(new TreeMap<String, Object>(envVars)));
    }
    put(j, "allow_internet", allowInternet);
    put(j, "app_name", appName);
    put(j, "template", template);
    put(j, "snapshot_id", snapshotId);
    put(j, "workdir", workdir);
    put(j, "git_repo", gitRepo);
    put(j, "git_ref", gitRef);
    return j;
  }

  /** The persisted and returned form: env values replaced by the sorted {@code env_var_names}. */
  public JsonObject toStoredJson() {
    JsonObject j = toWireJson();
    if (envVars != null) {
      j.remove("env_vars");
      j.put("env_var_names", new JsonArray(envVars.keySet().stream().sorted().toList()));
    }
    return j;
  }

  @SuppressWarnings("unchecked")
  public static SandboxConfig fromWireJson(JsonObject j) {
    JsonObject env = j.getJsonObject("env_vars");
    Number cpu = j.getNumber("cpu");
    return new SandboxConfig(j.getString("preset"), cpu == null ? null : cpu.doubleValue(),
        j.getInteger("memory_mb"), j.getInteger("disk_mb"), j.getString("gpu"), j.getInteger("timeout_secs"),
        j.getString("image"), env == null ? null : (Map<String, String>) (Map<?, ?>) env.getMap(),
        j.getBoolean("allow_internet"), j.getString("app_name"), j.getString("template"),
        j.getString("snapshot_id"), j.getString("workdir"), j.getString("git_repo"), j.getString("git_ref"));
  }

  private static void put(JsonObject j, String key, Object value) {
    if (value != null) {
      j.put(key, value);
    }
  }
}
