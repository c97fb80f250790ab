package ai.bespokelabs.sandbox.gateway.auth;

import java.util.Collection;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/** The seventeen scopes, the {@code *} wildcard and the legacy {@code sandboxes:write} expansion. */
public final class Scopes {
  public static final String SANDBOXES_READ = "sandboxes:read";
  public static final String SANDBOXES_CREATE = "sandboxes:create";
  public static final String SANDBOXES_EXECUTE = "sandboxes:execute";
  public static final String SANDBOXES_TERMINATE = "sandboxes:terminate";
  public static final String USAGE_READ = "usage:read";
  public static final String POLICIES_READ = "policies:read";
  public static final String POLICIES_WRITE = "policies:write";
  public static final String PROVIDERS_READ = "providers:read";
  public static final String PROVIDERS_WRITE = "providers:write";
  public static final String PROVIDERS_RECONCILE = "providers:reconcile";
  public static final String ALERTS_READ = "alerts:read";
  public static final String ALERTS_WRITE = "alerts:write";
  public static final String AUDIT_READ = "audit:read";
  public static final String EXPORTS_READ = "exports:read";
  public static final String RETENTION_READ = "retention:read";
  public static final String RETENTION_WRITE = "retention:write";
  public static final String KEYS_WRITE = "keys:write";
  public static final String ALL = "*";
  public static final String LEGACY_SANDBOXES_WRITE = "sandboxes:write";

  public static final List<String> RUNTIME_SCOPES = List.of(SANDBOXES_READ, SANDBOXES_CREATE, SANDBOXES_EXECUTE,
      SANDBOXES_TERMINATE, USAGE_READ, POLICIES_READ, POLICIES_WRITE, PROVIDERS_READ, PROVIDERS_WRITE,
      PROVIDERS_RECONCILE, ALERTS_READ, ALERTS_WRITE, AUDIT_READ, EXPORTS_READ, RETENTION_READ, RETENTION_WRITE,
      KEYS_WRITE);

  private static final Set<String> LEGACY_GRANTS =
      Set.of(SANDBOXES_CREATE, SANDBOXES_EXECUTE, SANDBOXES_TERMINATE, PROVIDERS_RECONCILE);

  private Scopes() {}

  /** True when a key may be issued with {@code scope}. */
  public static boolean isKnown(String scope) {
    return ALL.equals(scope) || LEGACY_SANDBOXES_WRITE.equals(scope) || RUNTIME_SCOPES.contains(scope);
  }

  /** True when a key holding {@code granted} may use {@code required}. */
  public static boolean grants(List<String> granted, String required) {
    for (String g : granted) {
      if (g.equals(ALL) || g.equals(required)
          || (g.equals(LEGACY_SANDBOXES_WRITE) && LEGACY_GRANTS.contains(required))) {
        return true;
      }
    }
    return false;
  }

  /**
   * The first of {@code wanted} (in its order) that a key holding {@code held} does not cover: a key hands out
   * and revokes only what it holds itself. {@code *} is covered only by {@code *}; the legacy
   * {@code sandboxes:write} by keys granting each scope it expands to.
   */
  public static Optional<String> firstNotCovered(List<String> held, Collection<String> wanted) {
    for (String w : wanted) {
      boolean covered = switch (w) {
        case ALL -> held.contains(ALL);
        case LEGACY_SANDBOXES_WRITE -> LEGACY_GRANTS.stream().allMatch(g -> grants(held, g));
        default -> grants(held, w);
      };
      if (!covered) {
        return Optional.of(w);
      }
    }
    return Optional.empty();
  }
}
