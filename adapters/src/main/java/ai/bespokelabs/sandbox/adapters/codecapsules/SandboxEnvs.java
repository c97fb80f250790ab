package ai.bespokelabs.sandbox.adapters.codecapsules;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The env vars of each sandbox created by this node, by resource id. CodeCapsules takes env vars per
 * execution only, so a sandbox's are added to each of its executions. Values live in memory only (they are
 * never stored), so a sandbox served after a restart or by another node runs without them.
 */
final class SandboxEnvs {
  private final Map<String, Map<String, String>> envs = new ConcurrentHashMap<>();

  void put(String resourceId, Map<String, String> env) {
    envs.put(resourceId, Map.copyOf(env));
  }

  void remove(String resourceId) {
    envs.remove(resourceId);
  }

  /** The sandbox's env with {@code overrides} on top. */
  Map<String, String> with(String resourceId, Map<String, String> overrides) {
    Map<String, String> base = envs.getOrDefault(resourceId, Map.of());
    if (base.isEmpty()) {
      return overrides;
    }
    Map<String, String> merged = new java.util.LinkedHashMap<>(base);
    merged.putAll(overrides);
    return merged;
  }
}
