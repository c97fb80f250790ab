package ai.bespokelabs.sandbox.adapters.local;

import java.nio.file.Path;
import java.time.Instant;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The in-memory state of one live host-process sandbox: its directory (deleted on destroy only when
 * {@code owned}), its env vars (never persisted anywhere) and the process groups its executions started
 * that may still have members. Thread-safe: executions run concurrently with each other and with destroy.
 */
final class SandboxRuntime {
  final Path dir;
  final boolean owned;
  final Map<String, String> env;
  final ai.bespokelabs.sandbox.core.model.SandboxConfig config;
  final Instant createdAt;
  /** The host uid its programs run as when the gateway is root ({@link HostUsers}); -1 otherwise. */
  final int uid;
  static final int PRUNE_THRESHOLD = 32;
  private final Set<Long> groups = new HashSet<>();
  private boolean closed;
  /** Set before its programs are killed when the sandbox ends because its time ran out. */
  private volatile boolean expired;

  SandboxRuntime(Path dir, boolean owned, Map<String, String> env, ai.bespokelabs.sandbox.core.model.SandboxConfig config,
      Instant createdAt, int uid) {
    this.uid = uid;
    this.config = config;
    this.dir = dir;
    this.owned = owned;
    this.env = Map.copyOf(env);
    this.createdAt = createdAt;
  }

  /** Records a started group; false when the sandbox is already being destroyed (kill it yourself). */
  synchronized boolean track(long pgid) {
    return !closed && groups.add(pgid);
  }

  /**
   * Forgets groups that have no members left, once enough have accumulated to be worth one scan of
   * {@code /proc}; groups left behind by background processes stay tracked for destroy.
   */
  synchronized void prune() {
    if (groups.size() < PRUNE_THRESHOLD) {
      return;
    }
    ProcessGroups.populatedGroups().ifPresent(groups::retainAll);
  }

  /** Forgets a group known to have no members left. */
  synchronized void untrack(long pgid) {
    groups.remove(pgid);
  }

  /**
   * Refuses further groups and returns every group to kill; {@code expired}: the sandbox ends because its time
   * ran out, so the programs still running end as timed out.
   */
  synchronized List<Long> close(boolean expired) {
    this.expired = expired;
    closed = true;
    return List.copyOf(groups);
  }

  /** Whether the sandbox was closed because its time ran out. */
  boolean expired() {
    return expired;
  }
}
