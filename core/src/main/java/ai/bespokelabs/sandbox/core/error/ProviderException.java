package ai.bespokelabs.sandbox.core.error;

/**
 * A provider operation failed. The exception message is only the error code: provider texts may echo
 * credentials and never travel further than the adapter's own debug log.
 */
public final class ProviderException extends RuntimeException {
  private final transient ProviderError error;

  public ProviderException(ProviderError error) {
    this(error, null);
  }

  public ProviderException(ProviderError error, Throwable cause) {
    super(error.code().wire() + " during " + error.op() + " on " + error.backend(), cause, false, false);
    this.error = error;
  }

  public ProviderError error() {
    return error;
  }
}
