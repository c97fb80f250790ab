package ai.bespokelabs.sandbox.adapters.local;

import java.util.HashSet;
import java.util.Set;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Process-group control. A program started as a session leader (see {@link SessionSpawner}) leads a new group
 * whose id is its pid, so signalling {@code -pgid} reaches every process it spawned, including background
 * ones that outlive it. Signals go through the native {@code kill} when the native spawner is available,
 * else through the host's {@code kill} binary.
 */
final class ProcessGroups {
  private static final int SIGKILL = 9;
  private static final Map<String, Integer> SIGNALS = Map.of("TERM", 15, "KILL", SIGKILL, "INT", 2);
  private static final Optional<Path> SETSID = HostWrapper.findExecutable("setsid", HostWrapper.SYSTEM_BIN, List.of());
  private static final Optional<Path> KILL = HostWrapper.findExecutable("kill", HostWrapper.SYSTEM_BIN, List.of());

  private ProcessGroups() {}

  /** The {@code setsid} binary: {@code /usr/bin/setsid}, else the first one on the gateway's PATH. */
  static Optional<Path> setsid() {
    return SETSID;
  }

  /**
   * Sends SIGKILL to every listed group; groups that no longer exist are ignored. Without a {@code kill}
   * binary, falls back to killing the leader and its live descendants (orphaned grandchildren escape).
   */
  static void kill(Collection<Long> groups) {
    kill(SessionSpawner.available(), groups);
  }

  /** {@link #kill(Collection)} through {@code spawner}'s signals, or the {@code kill} binary when empty. */
  static void kill(Optional<SessionSpawner> spawner, Collection<Long> groups) {
    // "-0" is the caller's own group and "-1" every process it may signal: never pass those on
    if (spawner.isPresent()) {
      groups.stream().filter(pgid -> pgid > 1).forEach(pgid -> spawner.get().signal(-pgid, SIGKILL));
      return;
    }
    Optional<Set<Long>> live = populatedGroups();
    List<Long> pgids = groups.stream().filter(pgid -> pgid > 1)
        .filter(pgid -> live.map(l -> l.contains(pgid)).orElse(true)).toList();
    if (pgids.isEmpty()) {
      return;
    }
    if (KILL.isEmpty()) {
      pgids.forEach(pgid -> ProcessHandle.of(pgid).ifPresent(h -> {
        h.descendants().forEach(ProcessHandle::destroyForcibly);
        h.destroyForcibly();
      }));
      return;
    }
    List<String> argv = new ArrayList<>(List.of(KILL.get().toString(), "-KILL", "--"));
    pgids.forEach(pgid -> argv.add("-" + pgid));
    runQuietly(argv);
  }

  /**
   * The ids of every process group that has at least one live (not zombie) member, read from
   * {@code /proc}; empty when {@code /proc} cannot be read, in which case callers keep what they track.
   */
  static Optional<Set<Long>> populatedGroups() {
    if (!ProcStats.available()) {
      return Optional.empty();
    }
    Set<Long> groups = new HashSet<>();
    ProcStats.forEach(p -> {
      if (p.state() != 'Z') { // a zombie cannot be signalled; its live group mates count themselves
        groups.add(p.pgrp());
      }
    });
    return Optional.of(groups);
  }

  /** Sends SIGKILL to each listed process (by pid). */
  static void killProcesses(List<Long> pids) {
    List<Long> targets = pids.stream().filter(pid -> pid > 1).toList();
    if (targets.isEmpty()) {
      return;
    }
    Optional<SessionSpawner> spawner = SessionSpawner.available();
    if (spawner.isPresent()) {
      targets.forEach(pid -> spawner.get().signal(pid, SIGKILL));
      return;
    }
    if (KILL.isEmpty()) {
      targets.forEach(pid -> ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly));
      return;
    }
    List<String> argv = new ArrayList<>(List.of(KILL.get().toString(), "-KILL", "--"));
    targets.forEach(pid -> argv.add(Long.toString(pid)));
    runQuietly(argv);
  }

  /**
   * Sends {@code TERM}, {@code KILL} or {@code INT} to group {@code pgid}, if it still has members, through
   * {@code spawner}'s signals or, when empty, the {@code kill} binary.
   */
  static void signal(Optional<SessionSpawner> spawner, long pgid, String signal) {
    Integer number = SIGNALS.get(signal);
    if (pgid <= 1 || number == null) {
      return;
    }
    if (spawner.isPresent()) {
      spawner.get().signal(-pgid, number);
    } else if (KILL.isPresent()) {
      runQuietly(List.of(KILL.get().toString(), "-" + signal, "--", "-" + pgid));
    }
  }

  private static int runQuietly(List<String> argv) {
    try {
      Process p = new ProcessBuilder(argv).redirectOutput(ProcessBuilder.Redirect.DISCARD)
          .redirectError(ProcessBuilder.Redirect.DISCARD).start();
      return p.waitFor();
    } catch (IOException e) {
      return -1;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return -1;
    }
  }
}
