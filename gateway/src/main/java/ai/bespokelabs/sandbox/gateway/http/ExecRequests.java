package ai.bespokelabs.sandbox.gateway.http;

import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.gateway.exec.ExecRequest;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/** Parses and validates an execute body (REST, SSE, and a WebSocket {@code start} frame). */
public final class ExecRequests {
  static final int MAX_SOURCE = 1 << 20;
  private static final Pattern ENV_NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,255}");

  private ExecRequests() {}

  public static ExecRequest parse(Body body) {
    body.nonNull("language");
    String code = body.string("code", false, 0, MAX_SOURCE);
    String language = body.string("language", false, 0, 32);
    String command = body.string("command", false, 0, MAX_SOURCE);
    List<String> args = body.stringList("args");
    Map<String, String> env = body.stringMap("env");
    String cwd = body.string("cwd", false, 1, 4096);
    Integer timeout = body.integer("timeout_secs", 0, null);
    Boolean stdin = body.bool("stdin");
    body.check();
    if ((code == null) == (command == null)) {
      throw body.valueError("provide exactly one of code or command");
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
}
