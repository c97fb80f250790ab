package ai.bespokelabs.sandbox.adapters.exec;

import java.nio.charset.StandardCharsets;
import java.util.Locale;

/** How every backend reports a command that ran out of time: the exit code and the seed's stderr line. */
public final class Timeouts {
  /** The exit code of a run killed by its timeout, as {@code timeout(1)} reports it. */
  public static final int EXIT_CODE = 124;

  private Timeouts() {}

  /** The stderr line ending the output of a command its own timeout killed, in the seed's words. */
  public static byte[] message(int timeoutSecs) {
    return ("Command timed out after " + timeoutSecs + "s\n").getBytes(StandardCharsets.UTF_8);
  }

  /** The stderr line ending the output of a command killed because its sandbox's time ran out. */
  public static byte[] sandboxMessage(long durationMs) {
    return String.format(Locale.ROOT, "Command timed out after %.1fs: the sandbox reached its timeout\n",
        durationMs / 1000.0).getBytes(StandardCharsets.UTF_8);
  }
}
