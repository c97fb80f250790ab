package ai.bespokelabs.sandbox.cli;

/** A mistake of the user the command reports in one line (exit code 1). */
final class CliException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  CliException(String message) {
    super(message);
  }
}
