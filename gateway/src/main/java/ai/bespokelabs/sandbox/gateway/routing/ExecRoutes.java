package ai.bespokelabs.sandbox.gateway.routing;

import ai.bespokelabs.sandbox.core.model.SandboxRecord;
import ai.bespokelabs.sandbox.core.repo.ExecutionRepository.Target;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * Where this node last saw each running sandbox's executions go (backend, node, provider resource), so a
 * blocking execute can launch while its execution row is inserted. Only a hint: the insert still checks the
 * sandbox. Entries expire after {@link #TTL_NANOS}; a sandbox that stops running or moves is removed on every
 * node (a PostgreSQL notification, see {@code CacheInvalidations}), and so is every sandbox of a lost node.
 */
public final class ExecRoutes {
  static final long TTL_NANOS = TimeUnit.SECONDS.toNanos(10);
  static final int CAPACITY = 10_000;

  private record Route(String organizationId, Target target, long seenAt) {}

  private final Map<String, Route> routes = new ConcurrentHashMap<>();

  /** Remembers a sandbox seen running. */
  public void remember(String organizationId, Target target) {
    if (routes.size() >= CAPACITY) {
      routes.clear();
    }
    routes.put(target.sandboxId(), new Route(organizationId, target, System.nanoTime()));
  }

  /** Remembers a sandbox this node just created, running. */
  public void remember(SandboxRecord sbx) {
    if ("running".equals(sbx.status())) {
      remember(sbx.organizationId(), new Target(sbx.id(), sbx.status(), sbx.backend(), sbx.nodeId(),
          sbx.providerResourceId(), sbx.config().timeoutSecs(),
          sbx.hourlyRateUsd()));
    }
  }

  /** The organization's sandbox as last seen running within the time limit, or null. */
  public Target route(String organizationId, String sandboxId) {
    Route r = routes.get(sandboxId);
    if (r == null || !r.organizationId().equals(organizationId) || System.nanoTime() - r.seenAt() > TTL_NANOS) {
      return null;
    }
    return r.target();
  }

  public void forget(String sandboxId) {
    routes.remove(sandboxId);
  }

  /** Forgets every sandbox whose executions ran on {@code nodeId} (it was lost). */
  public void forgetNode(String nodeId) {
    routes.values().removeIf(r -> nodeId.equals(r.target().nodeId()));
  }
}
