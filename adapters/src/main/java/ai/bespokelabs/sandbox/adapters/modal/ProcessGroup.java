package ai.bespokelabs.sandbox.adapters.modal;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;

/**
 * How a program started through the command router can be signalled, since the router has no signal call: every
 * program starts under a small {@code sh} that writes its pid to a file named after the exec id (in the sandbox's
 * temporary directory) and execs the program, first making it lead a process group of its own with
 * {@code setsid} when {@code /proc} shows it does not already (a process that is not a group leader gets a new
 * session without a fork, so the pid stays the one written). A signal is a second, helper exec that sends it to that process group
 * (or, should there be no such group, to the program alone). Everything travels as argv, never as a shell line
 * built from user input.
 */
final class ProcessGroup {
  private static final Pattern SIGNAL_NAME = Pattern.compile("[A-Z][A-Z0-9]{0,7}");
  private static final Pattern EXEC_ID = Pattern.compile("[A-Za-z0-9-]{1,64}");
  /** $1: exec id; the rest: the program's argv. */
  static final String LEAD = "f=\"${TMPDIR:-/tmp}/.bsk-$1.pid\"; shift; g=; "
      + "read -r _ _ _ _ g _ 2>/dev/null < /proc/$$/stat; "
      + "if [ -n \"$g\" ] && [ \"$g\" != \"$$\" ] && command -v setsid >/dev/null 2>&1; then "
      + "exec setsid sh -c 'echo $$ > \"$0\" && exec \"$@\"' \"$f\" \"$@\"; fi; "
      + "echo $$ > \"$f\" && exec \"$@\"";
  /** $1: exec id, $2: signal name. */
  static final String SIGNAL = "p=$(cat \"${TMPDIR:-/tmp}/.bsk-$1.pid\") && "
      + "{ kill -s \"$2\" -- \"-$p\" 2>/dev/null || kill -s \"$2\" \"$p\"; }";

  private ProcessGroup() {}

  /** {@code argv} run so that {@link #signal} reaches it and its children. */
  static List<String> lead(String execId, List<String> argv) {
    List<String> out = new ArrayList<>(List.of("sh", "-c", LEAD, "bsk", checked(execId)));
    out.addAll(argv);
    return out;
  }

  /** The helper sending {@code signal} (a name such as {@code TERM}) to the program started as {@code execId}. */
  static List<String> signal(String execId, String signal) {
    if (!SIGNAL_NAME.matcher(signal).matches()) {
      throw new IllegalArgumentException("not a signal name");
    }
    return List.of("sh", "-c", SIGNAL, "bsk", checked(execId), signal);
  }

  private static String checked(String execId) {
    if (!EXEC_ID.matcher(execId).matches()) {
      throw new IllegalArgumentException("exec id is not file-name safe");
    }
    return execId;
  }
}
