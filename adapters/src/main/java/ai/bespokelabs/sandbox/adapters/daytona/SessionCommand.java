package ai.bespokelabs.sandbox.adapters.daytona;

import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Pattern;

/**
 * The shell lines the Daytona adapter sends into a sandbox (pure; tested on a real {@code sh}).
 *
 * <p>A session command has no cwd, env or argv fields and runs inside the session's shell, so one execution
 * becomes one line: a child {@code sh} (under {@code setsid} when the image has it, so the program leads
 * its own process group) writes its pid to a file, changes to the cwd and execs the program through
 * {@code env(1)} with the execution's variables. The pid file is what {@link #signal} kills, since Daytona
 * has no per-command signal API.
 *
 * <p>Daytona cannot close a command's stdin either. Without kept stdin the program reads {@code /dev/null};
 * with it, the program reads from a relay loop that decodes one base64 line per write and ends, closing
 * the program's stdin, at a line holding a single {@code .} ({@link #EOF_LINE}).
 */
final class SessionCommand {
  /** What {@code closeStdin} sends: the relay loop ends and the program reads end-of-file. */
  static final String EOF_LINE = ".\n";

  private static final Pattern TAG = Pattern.compile("[A-Za-z0-9_-]{1,100}");

  private SessionCommand() {}

  /**
   * The session command running {@code argv} in {@code cwd} (null: the session's directory, the sandbox
   * user's home) with {@code env} added.
   *
   * @param tag a unique, shell-safe name for this execution (names its pid file)
   */
  static String of(List<String> argv, String cwd, Map<String, String> env, String tag, boolean keepStdin) {
    String script = "echo $$ > \"" + pidFile(tag) + "\" && cd -- \"$1\" && shift && "
        + (keepStdin
            ? "while IFS= read -r l && [ \"$l\" != . ]; do printf %s \"$l\" | base64 -d; done | \"$@\""
            : "exec \"$@\" < /dev/null");
    StringBuilder line = new StringBuilder("$(command -v setsid) sh -c ").append(quote(script)).append(" bsk ")
        .append(quote(cwd == null || cwd.isBlank() ? "." : cwd));
    if (!env.isEmpty()) {
      line.append(" env");
      new TreeMap<>(env).forEach((k, v) -> line.append(' ').append(quote(k + "=" + v)));
    }
    argv.forEach(a -> line.append(' ').append(quote(a)));
    return line.toString();
  }

  /**
   * A {@code process/execute} command sending {@code signal} to the execution's process group (or to the
   * program alone when it could not get a group of its own). Daytona splits this line on spaces outside
   * quotes and runs it without a shell, hence the explicit {@code sh -c "..."} without inner double quotes.
   */
  static String signal(String tag, String signal) {
    return "sh -c \"p=$(cat " + pidFile(tag) + ") && { kill -s " + signal + " -- -$p 2>/dev/null || kill -s "
        + signal + " $p; }\"";
  }

  /** The pid file of an execution, in the sandbox's temporary directory. */
  static String pidFile(String tag) {
    if (!TAG.matcher(tag).matches()) {
      throw new IllegalArgumentException("execution tag is not shell-safe");
    }
    return "${TMPDIR:-/tmp}/.bsk-" + tag + ".pid";
  }

  /** {@code s} as one single-quoted shell word. */
  static String quote(String s) {
    return "'" + s.replace("'", "'\\''") + "'";
  }
}
