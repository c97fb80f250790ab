package ai.bespokelabs.sandbox.client;

import java.util.List;
import java.util.Map;

/**
 * What to run: {@link #code(String, String)} or {@link #command(String, List)}, refined with the {@code with}
 * methods. {@code stdin} true keeps the program's stdin open for {@link SandboxClient#stdin}.
 */
public record ExecuteRequest(String code, String language, String command, List<String> args,
    Map<String, String> env, String cwd, Integer timeoutSecs, Boolean stdin) {

  /** Source code in {@code language} (null: python). */
  public static ExecuteRequest code(String code, String language) {
    return new ExecuteRequest(code, language, null, null, null, null, null, null);
  }

  /** A program with its arguments, run directly. */
  public static ExecuteRequest command(String program, List<String> args) {
    return new ExecuteRequest(null, null, program, List.copyOf(args), null, null, null, null);
  }

  /** A command line, run by the sandbox's shell. */
  public static ExecuteRequest shell(String commandLine) {
    return new ExecuteRequest(null, null, commandLine, null, null, null, null, null);
  }

  public ExecuteRequest withEnv(Map<String, String> value) {
    return new ExecuteRequest(code, language, command, args, value, cwd, timeoutSecs, stdin);
  }

  public ExecuteRequest withCwd(String value) {
    return new ExecuteRequest(code, language, command, args, env, value, timeoutSecs, stdin);
  }

  public ExecuteRequest withTimeoutSecs(Integer value) {
    return new ExecuteRequest(code, language, command, args, env, cwd, value, stdin);
  }

  public ExecuteRequest withStdin(boolean value) {
    return new ExecuteRequest(code, language, command, args, env, cwd, timeoutSecs, value);
  }
}
