package ai.bespokelabs.sandbox.gateway.http;

import ai.bespokelabs.sandbox.core.error.ApiException;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Pattern;

/**
 * A validated execute body: exactly one of code and command, plus the optional {@code env}, {@code cwd},
 * {@code timeout_secs} and {@code stdin} (keep stdin open; only for started executions).
 */
public record ExecRequest(String code, String language, String command, List<String> args, Map<String, String> env,
    String cwd, Integer timeoutSecs, boolean stdin) {
  static final int MAX_SOURCE = 1 << 20;
  private static final Pattern ENV_NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,255}");

  public static ExecRequest parse(Body body) {
    String code = body.string("code", false, 0, MAX_SOURCE);
    String language = body.string("language", false, 1, 32);
    String command = body.string("command", false, 0, MAX_SOURCE);
    List<String> args = body.stringList("args");
    Map<String, String> env = body.stringMap("env");
    String cwd = body.string("cwd", false, 1, 4096);
    Integer timeout = body.integer("timeout_secs", 0, null);
    Boolean stdin = body.bool("stdin");
    body.check();
    if ((code == null) == (command == null)) {
      throw ApiException.invalid("provide exactly one of code or command");
    }
    for (String s : args == null ? List.<String>of() : args) {
      if (s.indexOf('\0') >= 0) {
        throw ApiException.invalid("args must not contain NUL characters");
      }
    }
    if ((code != null && code.indexOf('\0') >= 0) || (command != null && command.indexOf('\0') >= 0)) {
      throw ApiException.invalid("code and command must not contain NUL characters");
    }
    if (env != null) {
      for (Map.Entry<String, String> e : env.entrySet()) {
        if (!ENV_NAME.matcher(e.getKey()).matches()) {
          throw ApiException.invalid("env var names must match [A-Za-z_][A-Za-z0-9_]*");
        }
        if (e.getValue().indexOf('\0') >= 0) {
          throw ApiException.invalid("env var values must not contain NUL characters");
        }
      }
    }
    return new ExecRequest(code, language == null ? "python" : language, command, args,
        env == null ? Map.of() : env, cwd, timeout, Boolean.TRUE.equals(stdin));
  }

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
