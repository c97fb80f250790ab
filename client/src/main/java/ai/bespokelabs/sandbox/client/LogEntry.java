package ai.bespokelabs.sandbox.client;

/** A sandbox log entry: {@code source} is {@code system} (its lifecycle) or {@code exec} (an execution). */
public record LogEntry(String ts, String source, String message, String execId) {
}
