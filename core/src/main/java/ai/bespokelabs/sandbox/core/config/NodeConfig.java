package ai.bespokelabs.sandbox.core.config;

import java.nio.file.Path;
import java.util.Optional;

/**
 * This gateway node ({@code node} in {@code conf/gateway.json}).
 *
 * @param dataDir generated secrets, node id, embedded PostgreSQL, local sandboxes ({@code BESPOKE_DATA_DIR})
 * @param id name on the event bus ({@code BESPOKE_NODE_ID}); empty until the composition root resolves it
 * @param shutdownGraceSecs how long a shutdown waits for in-flight work ({@code BESPOKE_SHUTDOWN_GRACE_SECS})
 * @param supervisionIntervalSecs supervision pass, 0 disables it ({@code BESPOKE_SUPERVISION_INTERVAL_SECS})
 * @param sandboxRoot where host sandboxes' directories live ({@code BESPOKE_SANDBOX_ROOT}); empty: the data
 *     directory, or on a root gateway whose data directory sandbox uids cannot traverse, a directory under
 *     {@code /var/lib/bespoke-sandbox}
 */
public record NodeConfig(Path dataDir, Optional<String> id, int shutdownGraceSecs, int supervisionIntervalSecs,
    Optional<Path> sandboxRoot) {
  public NodeConfig(Path dataDir, Optional<String> id, int shutdownGraceSecs, int supervisionIntervalSecs) {
    this(dataDir, id, shutdownGraceSecs, supervisionIntervalSecs, Optional.empty());
  }

  public NodeConfig withId(String newId) {
    return new NodeConfig(dataDir, Optional.of(newId), shutdownGraceSecs, supervisionIntervalSecs, sandboxRoot);
  }

  public String requireId() {
    return id.orElseThrow(() -> new IllegalStateException("node id is not resolved"));
  }
}
