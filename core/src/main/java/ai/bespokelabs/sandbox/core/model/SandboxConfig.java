package ai.bespokelabs.sandbox.core.model;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The create-time configuration of a sandbox (the seed's SandboxCreate fields except {@code backend}).
 * Null means "not given". Env var values travel to the adapter but are never stored: the persisted form
 * carries only {@code env_var_names}, so a configuration read back from storage has {@code envVarNames} and
 * no {@code envVars}. {@code envVarNames} is always the sorted names of {@code envVars} when those are given.
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
    String gitRef,
    List<String> envVarNames) {

  public SandboxConfig {
    envVars = envVars == null ? null : Map.copyOf(envVars);
    if (envVars != null) {
      envVarNames = envVars.keySet().stream().sorted().toList();
    } else if (envVarNames != null) {
      envVarNames = envVarNames.stream().sorted().toList();
    }
  }

  /** A configuration as requested, env values included. */
  public SandboxConfig(String preset, Double cpu, Integer memoryMb, Integer diskMb, String gpu, Integer timeoutSecs,
      String image, Map<String, String> envVars, Boolean allowInternet, String appName, String template,
      String snapshotId, String workdir, String gitRepo, String gitRef) {
    this(preset, cpu, memoryMb, diskMb, gpu, timeoutSecs, image, envVars, allowInternet, appName, template,
        snapshotId, workdir, gitRepo, gitRef, null);
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
    j.remove("env_vars");
    if (envVarNames != null) {
      j.put("env_var_names", new JsonArray(envVarNames));
    }
    return j;
  }

  /** A configuration read back from its {@link #toStoredJson() stored form} (env values are not there). */
  public static SandboxConfig fromStoredJson(JsonObject j) {
    JsonArray names = j.getJsonArray("env_var_names");
    Number cpu = j.getNumber("cpu");
    return new SandboxConfig(j.getString("preset"), cpu == null ? null : cpu.doubleValue(),
        j.getInteger("memory_mb"), j.getInteger("disk_mb"), j.getString("gpu"), j.getInteger("timeout_secs"),
        j.getString("image"), null, j.getBoolean("allow_internet"), j.getString("app_name"),
        j.getString("template"), j.getString("snapshot_id"), j.getString("workdir"), j.getString("git_repo"),
        j.getString("git_ref"), names == null ? null : names.stream().map(String::valueOf).toList());
  }

  private static void put(JsonObject j, String key, Object value) {
    if (value != null) {
      j.put(key, value);
    }
  }
}
