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

  private Supervisor supervisor;
  private boolean supervisorFailed;

  /** Starts a supervisor; fails when it cannot be started. */
  interface SupervisorStarter {
    Supervisor start() throws java.io.IOException;
  }

  /**
   * The sandbox's live supervisor, started (again) when it has none or it ended; empty once one failed to start
   * (the sandbox's executions then start one by one) or the sandbox is closing.
   *
   * @throws java.io.IOException when a first start fails (later calls answer empty)
   */
  synchronized java.util.Optional<Supervisor> supervisor(SupervisorStarter starter) throws java.io.IOException {
    if (closed || supervisorFailed) {
      return java.util.Optional.empty();
    }
    if (supervisor == null || !supervisor.alive()) {
      if (supervisor != null) {
        supervisor.close();
        supervisor = null;
      }
      try {
        supervisor = starter.start();
      } catch (java.io.IOException | RuntimeException e) {
        supervisorFailed = true;
        throw e;
      }
    }
    return java.util.Optional.of(supervisor);
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
    if (supervisor != null) {
      supervisor.close();
    }
    return List.copyOf(groups);
  }

  /** Whether the sandbox was closed because its time ran out. */
  boolean expired() {
    return expired;
  }
}
