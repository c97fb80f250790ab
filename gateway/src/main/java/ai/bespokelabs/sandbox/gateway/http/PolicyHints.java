package ai.bespokelabs.sandbox.gateway.http;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * Organizations this node recently found without any policy guardrail, so their creates (without an
 * idempotency key) may ask the provider while the sandbox row is inserted. Only a hint: the insert still
 * checks the policy, and a create launched on a stale hint is undone. Entries expire after {@link #TTL_NANOS};
 * a policy change removes the organization on every node (a PostgreSQL notification, see
 * {@code CacheInvalidations}).
 */
public final class PolicyHints {
  static final long TTL_NANOS = TimeUnit.SECONDS.toNanos(10);
  static final int CAPACITY = 10_000;

  private final Map<String, Long> unrestricted = new ConcurrentHashMap<>();

  /** Whether the organization was seen without guardrails within the time limit. */
  public boolean unrestricted(String organizationId) {
    Long seenAt = unrestricted.get(organizationId);
    return seenAt != null && System.nanoTime() - seenAt <= TTL_NANOS;
  }

  public void rememberUnrestricted(String organizationId) {
    if (unrestricted.size() >= CAPACITY) {
      unrestricted.clear();
    }
    unrestricted.put(organizationId, System.nanoTime());
  }

  public void forget(String organizationId) {
    unrestricted.remove(organizationId);
  }
}
