package ai.bespokelabs.sandbox.testkit;

import java.time.Duration;
import org.awaitility.Awaitility;
import org.awaitility.core.ConditionFactory;

/** Condition waits (Awaitility) as the tests use them: checked at once, then every 50 ms, on the caller's thread. */
public final class Waits {
  private Waits() {}

  /** A wait that gives up after {@code timeout}. */
  public static ConditionFactory upTo(Duration timeout) {
    return Awaitility.await().atMost(timeout).pollDelay(Duration.ZERO).pollInterval(Duration.ofMillis(50))
        .pollInSameThread();
  }

  /** A wait that gives up after {@code seconds}. */
  public static ConditionFactory upTo(int seconds) {
    return upTo(Duration.ofSeconds(seconds));
  }
}
