package ai.bespokelabs.sandbox.gateway.http;

import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.model.SandboxConfig;
import ai.bespokelabs.sandbox.gateway.Backends;
import io.vertx.core.json.JsonObject;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Pattern;

/** A validated {@code POST /v1/sandboxes} body. */
public record CreateRequest(String backend, SandboxConfig config) {
  static final Set<String> FIELDS = Set.of("backend", "preset", "cpu", "memory_mb", "disk_mb", "gpu", "timeout_secs",
      "image", "env_vars", "allow_internet", "app_name", "template", "snapshot_id", "workdir", "git_repo", "git_ref");
  private static final Pattern ENV_NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,255}");
  private static final int MAX_ENV_VARS = 512;

  public static CreateRequest parse(Body body, Backends backends) {
    String backend = body.string("backend", true, 1, 64);
    SandboxConfig config = new SandboxConfig(
        body.string("preset", false, 1, 255),
        body.positiveNumber("cpu"),
        body.integer("memory_mb", 0, null),
        body.integer("disk_mb", 0, null),
        body.string("gpu", false, 1, 255),
        body.integer("timeout_secs", 0, null),
        body.string("image", false, 1, 1024),
        body.stringMap("env_vars"),
        body.bool("allow_internet"),
        body.string("app_name", false, 1, 255),
        body.string("template", false, 1, 255),
        body.string("snapshot_id", false, 1, 1024),
        body.string("workdir", false, 1, 4096),
        body.string("git_repo", false, 1, 4096),
        body.string("git_ref", false, 1, 255));
    body.check();
    List<String> unknown = body.presentFields().stream().filter(f -> !FIELDS.contains(f)).sorted().toList();
    if (!unknown.isEmpty()) {
      throw ApiException.invalid("unsupported sandbox configuration: " + String.join(", ", unknown));
    }
    if (config.envVars() != null) {
      if (config.envVars().size() > MAX_ENV_VARS) {
        throw ApiException.invalid("env_vars may hold at most " + MAX_ENV_VARS + " variables");
      }
      for (Map.Entry<String, String> e : config.envVars().entrySet()) {
        if (!ENV_NAME.matcher(e.getKey()).matches()) {
          throw ApiException.invalid("env var names must match [A-Za-z_][A-Za-z0-9_]*");
        }
        if (e.getValue().indexOf('\0') >= 0) {
          throw ApiException.invalid("env var values must not contain NUL characters");
        }
      }
    }
    String name = backend.trim().toLowerCase(Locale.ROOT);
    if (!backends.isEnabled(name)) {
      throw ApiException.invalid("backend is not enabled: " + name);
    }
    return new CreateRequest(name, config);
  }

  /** Canonical JSON of {@code {"backend": ..., **config}} (raw env values included) for the fingerprint. */
  public String fingerprintInput() {
    JsonObject all = new JsonObject(new TreeMap<>());
    all.put("backend", backend);
    config.toWireJson().forEach(e -> all.put(e.getKey(), e.getValue()));
    return all.encode();
  }
}
