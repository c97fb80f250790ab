package ai.bespokelabs.sandbox.client;

import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;

/**
 * When to repeat a request: only after an error the gateway marks {@code retryable}, at most
 * {@code maxAttempts} tries in all, waiting the provider's {@code retry_after_ms} when it gives one and an
 * exponential backoff with jitter (from {@code initialBackoff}, capped at {@code maxBackoff}) otherwise.
 */
public record Retry(int maxAttempts, Duration initialBackoff, Duration maxBackoff) {
  /** Three tries, from 200 ms up to 5 s. */
  public static final Retry DEFAULT = new Retry(3, Duration.ofMillis(200), Duration.ofSeconds(5));
  /** A single try. */
  public static final Retry NONE = new Retry(1, Duration.ZERO, Duration.ZERO);

  public Retry {
    if (maxAttempts < 1) {
      throw new IllegalArgumentException("maxAttempts must be at least 1");
    }
  }

  /** How long to wait before try {@code attempt + 1} after {@code error} ended try {@code attempt} (1-based). */
  long delayMillis(int attempt, SandboxException error) {
    long hint = error.retryAfterMs();
    if (hint >= 0) {
      return hint;
    }
    long base = Math.min(maxBackoff.toMillis(), initialBackoff.toMillis() << Math.min(attempt - 1, 20));
    return base / 2 + ThreadLocalRandom.current().nextLong(base / 2 + 1);
  }
}
