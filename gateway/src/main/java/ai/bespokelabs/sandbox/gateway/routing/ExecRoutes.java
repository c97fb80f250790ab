package ai.bespokelabs.sandbox.gateway.routing;

import ai.bespokelabs.sandbox.core.model.SandboxRecord;
import ai.bespokelabs.sandbox.core.repo.ExecutionRepository.Target;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * Where this node last saw each running sandbox's executions go (backend, node, provider resource), so a
 * blocking execute can launch while its execution row is inserted. Only a hint: the insert still checks the
 * sandbox. Entries expire after {@link #TTL_NANOS}; terminate and adopt remove them on every node
 * ({@link #CHANGED_ADDRESS}).
 */
public final class ExecRoutes {
  /** Published with a sandbox id when it moves (adopt) or ends (terminate). */
  public static final String CHANGED_ADDRESS = "sandbox.exec.route-changed";
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
}
