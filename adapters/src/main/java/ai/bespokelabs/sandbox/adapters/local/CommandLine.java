package ai.bespokelabs.sandbox.adapters.local;

import ai.bespokelabs.sandbox.core.error.ApiException;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;

/**
 * Turns an exec request into the argument vector of the program to run (pure; no process is started).
 * Code runs through its language's interpreter; a command without args is a shell command line
 * ({@code ls -la /tmp}); a command with args is a program run directly, without a shell.
 */
public final class CommandLine {
  /** The interpreter used when a request carries code but no language (the seed's default). */
  public static final String DEFAULT_LANGUAGE = "python";

  private static final Pattern LANGUAGE = Pattern.compile("^[a-z][a-z0-9_+.-]{0,31}$");

  private CommandLine() {}

  /**
   * The argv for {@code code} (when non-null, run by {@code language}) or else for {@code command}.
   *
   * @throws ApiException 422 when neither is given or the language is not a valid interpreter name
   */
  public static List<String> of(String code, String language, String command, List<String> args) {
    if (code != null) {
      return forCode(code, language);
    }
    if (command != null) {
      return forCommand(command, args);
    }
    throw new ApiException(422, "code or command is required");
  }

  /** {@code python3 -c code}, {@code node -e code}, {@code <shell> -c code}, … by language. */
  public static List<String> forCode(String code, String language) {
    String lang = language == null ? DEFAULT_LANGUAGE : language;
    if (!LANGUAGE.matcher(lang).matches()) {
      throw new ApiException(422, "unsupported language: " + lang);
    }
    return switch (lang) {
      case "python", "python3" -> List.of("python3", "-c", code);
      case "javascript", "js", "node" -> List.of("node", "-e", code);
      case "ruby", "perl" -> List.of(lang, "-e", code);
      default -> List.of(lang, "-c", code);
    };
  }

  /** {@code /bin/sh -c command} for a command line ({@code args == null}), else the program and its args. */
  public static List<String> forCommand(String command, List<String> args) {
    if (args == null) {
      return List.of("/bin/sh", "-c", command);
    }
    List<String> argv = new ArrayList<>(args.size() + 1);
    argv.add(command);
    argv.addAll(args);
    return List.copyOf(argv);
  }
}
