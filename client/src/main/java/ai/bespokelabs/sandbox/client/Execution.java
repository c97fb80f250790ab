package ai.bespokelabs.sandbox.client;

/**
 * A started execution: {@code running} until the program ends, then {@code completed}, {@code timed_out} or
 * {@code cancelled} with {@code exitCode} set, or {@code failed} with {@code error}.
 */
public record Execution(String id, String sandboxId, String requestId, String status, boolean stdin,
    String createdAt, String completedAt, Integer exitCode, Long lastSeq, ProviderError error) {

  /** Whether the program has ended (its status is no longer {@code running}). */
  public boolean ended() {
    return !"running".equals(status);
  }
}
