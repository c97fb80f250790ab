package ai.bespokelabs.sandbox.cli;

import java.util.function.BooleanSupplier;

/** Where Ctrl-C goes: the command that registered a handler, which answers whether it took care of it. */
public final class Interrupts {
  private static volatile BooleanSupplier handler;

  private Interrupts() {
  }

  static void set(BooleanSupplier value) {
    handler = value;
  }

  static void clear() {
    handler = null;
  }

  /** Delivers one Ctrl-C; false when nothing took it (the caller then ends the process). */
  public static boolean fire() {
    BooleanSupplier h = handler;
    return h != null && h.getAsBoolean();
  }
}
