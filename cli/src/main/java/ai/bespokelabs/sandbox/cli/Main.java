package ai.bespokelabs.sandbox.cli;

/** The {@code sandbox} command: runs {@link SandboxCommand} and exits with its code. */
public final class Main {
  private Main() {
  }

  public static void main(String[] args) {
    installInterruptHandler();
    int code = SandboxCommand.run(args, System.in, System.out, System.err, System.getenv());
    System.out.flush();
    System.exit(code);
  }

  /** Ctrl-C goes to the running command (exec forwards it as a signal); otherwise it ends the process. */
  private static void installInterruptHandler() {
    try {
      sun.misc.Signal.handle(new sun.misc.Signal("INT"), s -> {
        if (!Interrupts.fire()) {
          Runtime.getRuntime().halt(130);
        }
      });
    } catch (IllegalArgumentException | UnsupportedOperationException e) {
      // no SIGINT here (or it is reserved): Ctrl-C ends the process as usual
    }
  }
}
