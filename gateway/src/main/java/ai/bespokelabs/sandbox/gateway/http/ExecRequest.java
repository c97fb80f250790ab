package ai.bespokelabs.sandbox.gateway.http;

import ai.bespokelabs.sandbox.core.error.ApiException;
import java.util.List;

/** A validated {@code POST /v1/sandboxes/{id}/execute} body: exactly one of code and command. */
public record ExecRequest(String code, String language, String command, List<String> args) {
  static final int MAX_SOURCE = 1 << 20;

  public static ExecRequest parse(Body body) {
    String code = body.string("code", false, 0, MAX_SOURCE);
    String language = body.string("language", false, 1, 32);
    String command = body.string("command", false, 0, MAX_SOURCE);
    List<String> args = body.stringList("args");
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
    return new ExecRequest(code, language == null ? "python" : language, command, args);
  }
}
