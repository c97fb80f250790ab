package ai.bespokelabs.sandbox.client;

import java.util.Map;

/** A provider error stored on a sandbox or an execution (the payload of {@link ProviderException}). */
public record ProviderError(String message, String code, String backend, String op, boolean retryable,
    String outcome, Map<String, Object> context) {
}
