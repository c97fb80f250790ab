package ai.bespokelabs.sandbox.adapters.exec;

import ai.bespokelabs.sandbox.core.error.ApiException;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;

/**
 * Turns an exec request into the argument vector of the program to run (pure; no process is started).
 * Code runs through its language's interpreter; a command without args (or with an empty list) is a shell
 * command line ({@code ls -la /tmp}); a command with args is a program run directly, without a shell.
 */
public final class CommandLine {
  /** The interpreter used when a request carries code but no language (the seed's default). */
  public static final String DEFAULT_LANGUAGE = "python";

  /** The shell of command lines where nothing else is said: POSIX sh, present everywhere. */
  public static final String SH = "/bin/sh";

  /** The languages {@code code} may be written in, with the interpreters that run them. */
  public static final java.util.SortedSet<String> LANGUAGES = java.util.Collections.unmodifiableSortedSet(
      new java.util.TreeSet<>(List.of("python", "python3", "javascript", "js", "node", "ruby", "perl", "bash", "sh",
          "zsh")));

  private CommandLine() {}

  /**
   * The argv for {@code code} (when non-null, run by {@code language}) or else for {@code command}.
   *
   * @throws ApiException 422 when neither is given or the language is not a valid interpreter name
   */
  public static List<String> of(String code, String language, String command, List<String> args) {
    return of(code, language, command, args, SH);
  }

  /** As {@link #of(String, String, String, List)}, command lines running under {@code shell}. */
  public static List<String> of(String code, String language, String command, List<String> args, String shell) {
    if (code != null) {
      return forCode(code, language);
    }
    if (command != null) {
      return forCommand(command, args, shell);
    }
    throw new ApiException(422, "code or command is required");
  }

  /** {@code python3 -c code}, {@code node -e code}, {@code <shell> -c code}, … by language. */
  public static List<String> forCode(String code, String language) {
    String lang = language == null ? DEFAULT_LANGUAGE : language;
    if (!LANGUAGES.contains(lang)) {
      throw new ApiException(422, "unsupported language: " + (lang.length() > 32 ? lang.substring(0, 32) + "…" : lang)
          + " (supported: " + String.join(", ", LANGUAGES) + ")");
    }
    return switch (lang) {
      case "python", "python3" -> List.of("python3", "-c", code);
      case "javascript", "js", "node" -> List.of("node", "-e", code);
      case "ruby", "perl" -> List.of(lang, "-e", code);
      default -> List.of(lang, "-c", code); // bash, sh, zsh
    };
  }

  /** {@code /bin/sh -c command} for a command line (no or empty {@code args}), else the program and its args. */
  public static List<String> forCommand(String command, List<String> args) {
    return forCommand(command, args, SH);
  }

  /** {@code <shell> -c command} for a command line (no or empty {@code args}), else the program and its args. */
  public static List<String> forCommand(String command, List<String> args, String shell) {
    if (args == null || args.isEmpty()) {
      return List.of(shell, "-c", command);
    }
    List<String> argv = new ArrayList<>(args.size() + 1);
    argv.add(command);
    argv.addAll(args);
    return List.copyOf(argv);
  }
}
