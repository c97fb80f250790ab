package ai.bespokelabs.sandbox.adapters.runpod;

import ai.bespokelabs.sandbox.adapters.http.HttpFailures;
import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError;
import ai.bespokelabs.sandbox.core.error.ProviderException;

/** The RunPod adapter's failures outside an HTTP exchange (SSH, SFTP, a pod's answers), in the error contract. */
final class RunPodErrors {
  private RunPodErrors() {}

  static ProviderException notFound(String op) {
    return new ProviderException(ProviderError.of(ErrorCode.NOT_FOUND, RunPodProvider.BACKEND, op, false,
        ProviderError.Outcome.FAILED));
  }

  static ProviderException transportError(String op, Throwable t, boolean mutating) {
    return HttpFailures.transport(RunPodProvider.BACKEND, op, t, mutating);
  }

  static ProviderException badResponse(String op, boolean mutating) {
    return HttpFailures.badResponse(RunPodProvider.BACKEND, op, mutating);
  }
}
