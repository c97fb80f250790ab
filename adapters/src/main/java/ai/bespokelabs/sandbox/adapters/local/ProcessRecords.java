package ai.bespokelabs.sandbox.adapters.local;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A durable record of the process groups each local sandbox started ({@code <root>/.groups/<sandbox id>}, one
 * {@code pgid start-time} line per execution), so that after the gateway was killed and restarted, destroying
 * the sandbox still finds and kills everything it left running.
 *
 * <p>Group ids are pids, and pids are reused (after 32,768 on many hosts). A recorded group that has ended
 * must never stand for a later one: a new group of any sandbox takes its id away from whichever sandbox
 * recorded that id before ({@link #record} returns it, and drops it from its file; the kernel hands out a pid
 * only while no group has that id), and a group whose leader pid now belongs to a process started at another
 * time than the recorded leader is skipped.
 */
final class ProcessRecords {
  private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(ProcessRecords.class);
  private final Path dir;
  /**
   * Which sandbox recorded each group id, for the records of this root: at most one entry per id, as many as
   * the record files hold ids (they are forgotten with their sandbox).
   */
  private final Map<Long, String> owners = new ConcurrentHashMap<>();
  private final Map<String, Object> locks = new ConcurrentHashMap<>();

  ProcessRecords(Path root) {
    this.dir = root.resolve(".groups");
    for (String sandboxId : sandboxes()) {
      read(sandboxId).keySet().forEach(pgid -> owners.put(pgid, sandboxId));
    }
  }

  private Object lock(String sandboxId) {
    return locks.computeIfAbsent(sandboxId, k -> new Object());
  }

  /**
   * Appends the group of a just-started execution. Returns the other sandbox that had recorded the same id
   * for a group of its own, which has ended (its record of it is dropped), or null.
   */
  String record(String sandboxId, long pgid) {
    OptionalLong start = startTime(pgid);
    synchronized (lock(sandboxId)) {
      try {
        Files.createDirectories(dir);
        Files.writeString(dir.resolve(sandboxId), pgid + " " + start.orElse(0) + "\n", StandardCharsets.US_ASCII,
            StandardOpenOption.CREATE, StandardOpenOption.APPEND, StandardOpenOption.WRITE);
      } catch (IOException e) {
        throw new java.io.UncheckedIOException("cannot record a process group of " + sandboxId, e);
      }
    }
    String previous = owners.put(pgid, sandboxId);
    if (previous == null || previous.equals(sandboxId)) {
      return null;
    }
    drop(previous, pgid);
    return previous;
  }

  /**
   * Rewrites the sandbox's record without group {@code pgid}. Best effort: it runs while a new execution starts,
   * which must not fail for it, and a leftover line is still skipped once the id's new leader runs.
   */
  private void drop(String sandboxId, long pgid) {
    synchronized (lock(sandboxId)) {
      Path file = dir.resolve(sandboxId);
      try {
        if (!Files.exists(file)) {
          return;
        }
        List<String> kept = Files.readAllLines(file, StandardCharsets.US_ASCII).stream()
            .filter(line -> !line.startsWith(pgid + " ")).toList();
        Path tmp = dir.resolve(sandboxId + ".tmp");
        Files.write(tmp, kept, StandardCharsets.US_ASCII);
        Files.move(tmp, file, java.nio.file.StandardCopyOption.REPLACE_EXISTING,
            java.nio.file.StandardCopyOption.ATOMIC_MOVE);
      } catch (IOException e) {
        LOG.warn("Could not drop reused process group {} from the record of {}: {}", pgid, sandboxId, e.toString());
      }
    }
  }

  /**
   * Kills every live process that belongs to a recorded group and started no earlier than that group's
   * leader, then forgets the record. When there were any, {@code groups} (the live runtime's, a subset of
   * the recorded ones) are also killed as groups, which catches a child forked after the scan. One scan of
   * {@code /proc} when nothing is left running, the common case. Returns how many processes were signalled.
   */
  int killAll(String sandboxId, java.util.Collection<Long> groups) {
    List<Long> pids = members(sandboxId);
    if (!pids.isEmpty()) {
      ProcessGroups.killProcesses(pids);
      ProcessGroups.kill(groups);
    }
    forget(sandboxId);
    return pids.size();
  }

  /**
   * The live (not zombie) processes that belong to a recorded group of the sandbox and started no earlier
   * than that group's leader; a group whose leader pid is now a process that started at another time than
   * the recorded leader has ended and had its id reused, and is skipped.
   */
  List<Long> members(String sandboxId) {
    Map<Long, Long> groups = read(sandboxId);
    if (groups.isEmpty()) {
      return List.of();
    }
    List<ProcStats.Stat> candidates = new ArrayList<>();
    java.util.Set<Long> reused = new java.util.HashSet<>();
    ProcStats.forEach(p -> {
      Long leaderStart = groups.get(p.pgrp());
      if (leaderStart != null && p.state() != 'Z' && p.startTime() >= leaderStart) {
        candidates.add(p);
      }
      Long recorded = groups.get(p.pid());
      if (recorded != null && recorded != 0 && p.startTime() != recorded) {
        reused.add(p.pid());
      }
    });
    return candidates.stream().filter(p -> !reused.contains(p.pgrp())).map(ProcStats.Stat::pid).toList();
  }

  /**
   * The sandbox's recorded groups: id to the latest recorded leader start (a sandbox may have been given the
   * same id again; only its latest group with it can still be alive).
   */
  private Map<Long, Long> read(String sandboxId) {
    Path file = dir.resolve(sandboxId);
    Map<Long, Long> groups = new HashMap<>();
    try {
      if (!Files.exists(file)) {
        return groups;
      }
      for (String line : Files.readAllLines(file, StandardCharsets.US_ASCII)) {
        String[] parts = line.trim().split(" ");
        if (parts.length == 2) {
          groups.merge(Long.parseLong(parts[0]), Long.parseLong(parts[1]), Math::max);
        }
      }
    } catch (IOException | NumberFormatException e) {
      return new HashMap<>();
    }
    return groups;
  }

  void forget(String sandboxId) {
    synchronized (lock(sandboxId)) {
      try {
        Files.deleteIfExists(dir.resolve(sandboxId));
      } catch (IOException ignored) {
        // a leftover record only costs a /proc scan at the next destroy
      }
    }
    owners.values().removeIf(sandboxId::equals);
    locks.remove(sandboxId);
  }

  /** Sandbox ids that have a record (sandboxes whose processes may still run). */
  List<String> sandboxes() {
    List<String> out = new ArrayList<>();
    if (!Files.isDirectory(dir)) {
      return out;
    }
    try (DirectoryStream<Path> entries = Files.newDirectoryStream(dir)) {
      entries.forEach(p -> {
        String name = p.getFileName().toString();
        if (!name.endsWith(".tmp")) { // a rewrite that did not finish
          out.add(name);
        }
      });
    } catch (IOException ignored) {
      // nothing listed
    }
    return out;
  }

  private static OptionalLong startTime(long pid) {
    ProcStats.Stat stat = ProcStats.of(pid);
    return stat == null ? OptionalLong.empty() : OptionalLong.of(stat.startTime());
  }
}
