package ai.bespokelabs.sandbox.gateway.exec;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * A validated execute request: exactly one of code and command, plus the optional {@code env}, {@code cwd},
 * {@code timeout_secs} and {@code stdin} (keep stdin open; only for started executions). The HTTP layer
 * parses it from a request body.
 */
public record ExecRequest(String code, String language, String command, List<String> args, Map<String, String> env,
    String cwd, Integer timeoutSecs, boolean stdin) {
  /**
   * Canonical JSON of the request (sorted keys, defaults applied, raw env values), for the fingerprint; what
   * runs the same program hashes the same (no args and an empty list; a language given with a command).
   */
  public String fingerprintInput() {
    JsonObject all = new JsonObject(new TreeMap<>());
    all.put("code", code).put("language", code == null ? null : language).put("command", command)
        .put("args", args == null || args.isEmpty() ? null : new JsonArray(args))
        .put("env", new JsonObject(new TreeMap<String, Object>(env))).put("cwd", cwd)
        .put("timeout_secs", timeoutSecs).put("stdin", stdin);
    return all.encode();
  }
}
