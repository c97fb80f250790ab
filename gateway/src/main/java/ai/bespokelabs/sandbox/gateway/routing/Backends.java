package ai.bespokelabs.sandbox.gateway.routing;

import ai.bespokelabs.sandbox.core.config.ConfigException;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

/**
 * The backends this gateway serves: those registered (an adapter exists) and enabled by
 * {@code BESPOKE_ALLOWED_BACKENDS} (all registered ones when unset), and whether each is node-bound.
 */
public final class Backends {
  private final Map<String, Boolean> enabled;
  private final String nodeId;
  /** Why a registered backend cannot create sandboxes on this node, by name; absent when it can. */
  private final Map<String, String> unavailable = new java.util.concurrent.ConcurrentHashMap<>();
  private final Map<String, List<String>> capabilities;
  private final Map<String, ai.bespokelabs.sandbox.adapters.spi.PlacementFacts> placement =
      new java.util.concurrent.ConcurrentHashMap<>();
  private volatile boolean draining;

  /** The registered {@code backends}, enabled as {@code allowList} says (all when empty). */
  public static Backends of(List<ai.bespokelabs.sandbox.adapters.spi.Backend> backends, Optional<List<String>> allowList,
      String nodeId) {
    Map<String, Boolean> registered = new java.util.LinkedHashMap<>();
    Map<String, List<String>> capabilities = new TreeMap<>();
    Map<String, String> unavailable = new java.util.HashMap<>();
    for (ai.bespokelabs.sandbox.adapters.spi.Backend b : backends) {
      registered.put(b.name(), b.nodeBound());
      capabilities.put(b.name(), b.capabilities().stream().map(ai.bespokelabs.sandbox.adapters.spi.Capability::wire)
          .sorted().toList());
      b.unavailable().ifPresent(reason -> unavailable.put(b.name(), reason));
    }
    Backends out = new Backends(registered, allowList, nodeId, unavailable, capabilities);
    for (ai.bespokelabs.sandbox.adapters.spi.Backend b : backends) {
      out.placement.put(b.name(), b.placement());
    }
    return out;
  }

  public Backends(Map<String, Boolean> registeredNodeBound, Optional<List<String>> allowList, String nodeId) {
    this(registeredNodeBound, allowList, nodeId, Map.of(), Map.of());
  }

  /**
   * @param unavailable why each registered backend that cannot create sandboxes on this node cannot
   * @param capabilities each backend's optional capabilities, by wire name
   */
  public Backends(Map<String, Boolean> registeredNodeBound, Optional<List<String>> allowList, String nodeId,
      Map<String, String> unavailable, Map<String, List<String>> capabilities) {
    this.unavailable.putAll(unavailable);
    this.capabilities = Map.copyOf(capabilities);
    Map<String, Boolean> on = new TreeMap<>();
    if (allowList.isPresent()) {
      for (String b : allowList.get()) {
        if (!registeredNodeBound.containsKey(b)) {
          throw new ConfigException("BESPOKE_ALLOWED_BACKENDS names a backend this gateway does not provide: " + b
              + " (available: " + String.join(", ", new TreeMap<>(registeredNodeBound).keySet()) + ")");
        }
        on.put(b, registeredNodeBound.get(b));
      }
    } else {
      on.putAll(registeredNodeBound);
    }
    this.enabled = Map.copyOf(on);
    this.nodeId = nodeId;
  }

  /** True for enabled backends whose sandboxes live on one node. */
  public boolean isNodeBound(String backend) {
    return Boolean.TRUE.equals(enabled.get(backend));
  }

  public boolean isEnabled(String backend) {
    return enabled.containsKey(backend);
  }

  /** Whether this node has what a create of {@code backend} needs (its tool, engine or credentials). */
  public boolean isInstalled(String backend) {
    return !unavailable.containsKey(backend);
  }

  /** Why a create of {@code backend} cannot be served on this node (what to install, which setting is wrong). */
  public Optional<String> unavailable(String backend) {
    return Optional.ofNullable(unavailable.get(backend));
  }

  /** Records that {@code backend} failed to start on this node, and why. */
  public void markUnavailable(String backend, String reason) {
    unavailable.put(backend, reason);
  }

  /** What {@code backend} offers beyond lifecycle and executions (e.g. {@code files}, {@code snapshot}), sorted. */
  public List<String> capabilities(String backend) {
    return capabilities.getOrDefault(backend, List.of());
  }

  /** What {@code backend: "auto"} may rely on {@code backend} for (the weakest facts when it declared none). */
  public ai.bespokelabs.sandbox.adapters.spi.PlacementFacts placement(String backend) {
    return placement.getOrDefault(backend, ai.bespokelabs.sandbox.adapters.spi.PlacementFacts.NONE);
  }

  public List<String> names() {
    return enabled.keySet().stream().sorted().toList();
  }

  /** The enabled backends whose sandboxes live on one node. */
  public String[] nodeBound() {
    return enabled.entrySet().stream().filter(Map.Entry::getValue).map(Map.Entry::getKey).toArray(String[]::new);
  }

  public String nodeId() {
    return nodeId;
  }

  /** This node stops taking new sandboxes of node-bound backends (it is draining before it stops). */
  public void drain() {
    draining = true;
  }

  /** Whether this node is draining: it takes no new node-bound sandboxes and is not ready for more traffic. */
  public boolean draining() {
    return draining;
  }
}
