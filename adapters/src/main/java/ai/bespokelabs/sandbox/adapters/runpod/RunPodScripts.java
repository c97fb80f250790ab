package ai.bespokelabs.sandbox.adapters.runpod;

import ai.bespokelabs.sandbox.core.error.ApiException;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * The POSIX shell the gateway runs on a pod for one execution, all in one place. The program runs detached from
 * any SSH connection, so a dropped connection loses nothing:
 *
 * <ul>
 *   <li>{@link #launch}: makes the execution's private directory {@code /tmp/.bsk-<execution id>} (mode 700)
 *       and starts the wrapper there in a session of its own, returning once the program runs.
 *   <li>the wrapper: starts a sentinel ({@code sleep}) whose pid it writes to {@code pid}, then the program in a
 *       session (so a process group) of its own ({@code setsid}), its pid in {@code pgid}, stdout to
 *       {@code out}, stderr to {@code err}, stdin from {@code /dev/null} or, when kept open, from {@code in} (a
 *       file the gateway writes at byte offsets) followed by {@code tail} through a FIFO until the file
 *       {@code eof} appears; once the program ended, writes {@code eof}, the program's exit status
 *       ({@code wait}'s: 128 + n for signal n) to {@code status}, atomically, and ends the sentinel and reaps
 *       it. Followers watch the sentinel, not the wrapper: a process that ended stays visible until its parent
 *       reaps it, and the wrapper's parent is the pod's init, which may reap late or never.
 *   <li>{@link #follow}: streams {@code out} from one byte offset on the channel's stdout and {@code err} from
 *       another on its stderr ({@code tail -f}, ending once the sentinel has ended and all was read), then exits
 *       with the program's status; a dropped connection resumes with a new follow from the offsets delivered
 *       so far.
 *   <li>{@link #start}: the launch and the first follow in one exec channel, so an execution costs one channel
 *       on its critical path, like a plain SSH exec. The launch's own stdout and stderr go to {@code /dev/null}
 *       and, once it succeeded, the shell prints {@link #STARTED} on stdout before it runs the follow: the
 *       channel's first stdout bytes are that marker, and nothing the program wrote can come before it, since
 *       the program writes to files that only the follow (started after the marker) puts on the channel. The
 *       gateway reads the marker before it accepts any output (stderr is not read until then: sshd may forward
 *       the follow's stderr ahead of the marker) and counts the program's bytes after it. When the launch
 *       fails the shell exits with the launch's status without the marker, so "did not start" is told from the
 *       program's output and from its exit status by the marker's absence, not by a reserved status. A channel
 *       that drops before the marker is retried whole: the launch is idempotent, starts nothing twice, and no
 *       output was delivered yet; once the marker arrived, a drop resumes with {@link #follow} alone.
 *   <li>{@link #stdin}: writes bytes at an offset of {@code in}, so a retried write is harmless; {@link #eof};
 *       {@link #signal} to the program's process group; {@link #status}; {@link #cleanup}.
 * </ul>
 */
final class RunPodScripts {
  private static final Pattern NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*");
  private static final Pattern EXEC_ID = Pattern.compile("[A-Za-z0-9_-]{1,100}");
  /** The follow's exit status when it cannot tell the program's: {@link #status} is asked then. */
  static final int UNSURE = 255;
  /**
   * How often a follow and the stdin feeder look for more, and notice the program ended (seconds): it bounds
   * what a short execution waits after its end; each wake-up is a stat and a kill -0.
   */
  private static final String POLL = "0.05";
  /**
   * How often a follow notices the program ended (seconds): {@code tail} checks the sentinel in its own
   * process (a kill -0, no fork), so a short poll is cheap and shortens what every execution waits at its end;
   * new output is noticed at once where {@code tail} uses inotify, else at this pace.
   */
  private static final String FOLLOW_POLL = "0.01";
  /** What {@link #start} prints on stdout once the program runs, before any of its output. */
  static final String STARTED = "bsk-started\n";

  /**
   * The wrapper, as {@code sh -c WRAPPER sh <dir> <keep stdin: 0|1> <cwd or ''> <program words...>}; its output
   * goes nowhere (it runs detached).
   */
  private static final String WRAPPER = String.join("\n",
      "D=$1; K=$2; C=$3; shift 3",
      "sleep 2147483647 & Z=$!",
      "echo $Z > \"$D/pid.t\" && mv \"$D/pid.t\" \"$D/pid\"",
      "I=/dev/null",
      "if [ \"$K\" = 1 ]; then",
      "  mkfifo \"$D/fifo\" && I=\"$D/fifo\"",
      "  ( sleep 2147483647 & Y=$!",
      "    tail -c +1 -s " + POLL + " -f --pid=$Y \"$D/in\" > \"$D/fifo\" 2>/dev/null &",
      "    while [ ! -e \"$D/eof\" ]; do sleep " + POLL + "; done; kill $Y; wait $Y ) &",
      "fi",
      "if [ -n \"$C\" ] && ! cd \"$C\" 2>>\"$D/err\"; then S=1; [ \"$K\" = 1 ] && : < \"$D/fifo\"; else",
      "  setsid -w \"$@\" < \"$I\" >> \"$D/out\" 2>> \"$D/err\" & P=$!",
      "  echo $P > \"$D/pgid\"",
      "  wait $P; S=$?",
      "fi",
      ": > \"$D/eof\"",
      "echo $S > \"$D/status.t\" && mv \"$D/status.t\" \"$D/status\"",
      "kill $Z; wait $Z");

  private RunPodScripts() {}

  /** The execution's private directory on the pod. */
  static String dir(String executionId) {
    if (!EXEC_ID.matcher(executionId).matches()) {
      throw new ApiException(422, "invalid execution id");
    }
    return "/tmp/.bsk-" + executionId;
  }

  /**
   * Starts {@code env <env...> <argv...>} detached, in {@code cwd} (null: the login's home); exits 0 once it
   * runs (or ended at once), non-zero when it did not start within 10 seconds. Idempotent: run again after a
   * dropped connection, it starts nothing new when the directory exists and waits for that program.
   */
  static String launch(String dir, String cwd, Map<String, String> env, List<String> argv, boolean keepStdin) {
    StringBuilder program = new StringBuilder("env");
    for (Map.Entry<String, String> e : env.entrySet()) {
      if (!NAME.matcher(e.getKey()).matches()) {
        throw new ApiException(422, "invalid env var name");
      }
      program.append(' ').append(quote(e.getKey() + "=" + e.getValue()));
    }
    for (String a : argv) {
      program.append(' ').append(quote(a));
    }
    String d = quote(dir);
    return "umask 077 && { [ -d " + d + " ] || { mkdir " + d + " && : > " + d + "/out && : > " + d + "/err"
        + " && : > " + d + "/in && { setsid sh -c " + quote(WRAPPER) + " sh " + d + " " + (keepStdin ? "1" : "0")
        + " " + quote(cwd == null || cwd.isBlank() ? "" : cwd) + " " + program + " < /dev/null > /dev/null 2>&1"
        + " & }; }; } && n=0 && while [ ! -s " + d + "/pgid ] && [ ! -e " + d + "/status ]; do n=$((n+1));"
        + " [ $n -gt 1000 ] && exit 1; sleep 0.01; done";
  }

  /**
   * {@code launch} (made by {@link #launch}), then, once the program runs, {@link #STARTED} on stdout and the
   * follow from the start of its output; exits with the launch's non-zero status, without the marker, when the
   * program did not start.
   */
  static String start(String dir, String launch) {
    return "{ " + launch + "; } < /dev/null > /dev/null 2>&1 || exit $?; printf '%s' " + quote(STARTED) + "; "
        + follow(dir, 0, 0);
  }

  /**
   * {@code out} from byte {@code outOffset} on stdout, {@code err} from {@code errOffset} on stderr; then exits
   * with the program's exit status, or {@link #UNSURE} when there is none (or the program's was that).
   */
  static String follow(String dir, long outOffset, long errOffset) {
    String d = quote(dir);
    return "W=$(cat " + d + "/pid) || exit " + UNSURE + "; "
        + "tail -c +" + (outOffset + 1) + " -s " + FOLLOW_POLL + " -f --pid=\"$W\" " + d + "/out & "
        + "tail -c +" + (errOffset + 1) + " -s " + FOLLOW_POLL + " -f --pid=\"$W\" " + d + "/err >&2; wait; "
        + "S=$(cat " + d + "/status 2>/dev/null) && exit \"$S\"; exit " + UNSURE;
  }

  /** Writes the channel's stdin at byte {@code offset} of the program's stdin file. */
  static String stdin(String dir, long offset) {
    return "[ ! -e " + quote(dir) + "/eof ] && dd of=" + quote(dir) + "/in bs=65536 seek=" + offset
        + " oflag=seek_bytes conv=notrunc status=none";
  }

  /** Ends the program's stdin once all written so far was read. */
  static String eof(String dir) {
    return ": > " + quote(dir) + "/eof";
  }

  /** {@code kill -s SIGNAL} to the program's process group (nothing once it ended). */
  static String signal(String dir, String signal) {
    return "p=$(cat " + quote(dir) + "/pgid 2>/dev/null) && [ -n \"$p\" ] && kill -s " + signal + " -- -\"$p\" "
        + "2>/dev/null; exit 0";
  }

  /** Prints the program's exit status; fails while there is none. */
  static String status(String dir) {
    return "cat " + quote(dir) + "/status";
  }

  /** Removes the execution's directory. */
  static String cleanup(String dir) {
    return "rm -rf " + quote(dir);
  }

  /** One POSIX shell word. */
  static String quote(String s) {
    return "'" + s.replace("'", "'\\''") + "'";
  }
}
