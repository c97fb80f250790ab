package ai.bespokelabs.sandbox.gateway;

import ai.bespokelabs.sandbox.core.db.Wakeups;
import ai.bespokelabs.sandbox.gateway.auth.Authenticator;
import ai.bespokelabs.sandbox.gateway.http.PolicyHints;
import ai.bespokelabs.sandbox.gateway.routing.ExecRoutes;
import io.vertx.core.Future;
import io.vertx.core.Vertx;

/**
 * Keeps this node's caches (authenticated keys, policy hints, execution routes) in step with every other
 * node's changes: PostgreSQL notifies {@link #CHANNEL} at commit when a key is revoked, a policy changes or a
 * running sandbox stops or moves (triggers, migration V12), and this node forgets the entry. The node that
 * makes a change also forgets at once; the caches' time limits are the backstop for a notification lost
 * while the listening connection reconnects.
 */
final class CacheInvalidations {
  static final String CHANNEL = "cache_invalidated";

  private CacheInvalidations() {}

  static Future<Wakeups.Listening> listen(Vertx vertx, Wakeups wakeups, Authenticator keys, PolicyHints policies,
      ExecRoutes routes) {
    return wakeups.listenPayloads(vertx, CHANNEL, payload -> {
      int colon = payload.indexOf(':');
      String id = payload.substring(colon + 1);
      switch (payload.substring(0, Math.max(colon, 0))) {
        case "key" -> keys.forget(id);
        case "policy" -> policies.forget(id);
        case "route" -> routes.forget(id);
        default -> { } // a newer node's kind: nothing cached here
      }
    });
  }
}
