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
 * recorded that id before ({@link #record} returns it, and appends a {@code pgid -} line to its file that
 * drops the id; the kernel hands out a pid only while no group has that id), and a group whose leader pid now
 * belongs to a process started at another time than the recorded leader is skipped.
 *
 * <p>Files are only appended to on the execution path. A file is rewritten with one line per recorded id once
 * it has twice as many lines as that (and at least {@link #COMPACT_AT}), so a sandbox running millions of
 * programs keeps a record of at most a few lines per group id, and the rewrite costs O(1) per execution
 * amortized. A line that cannot be read (a write cut short by a crash) is skipped, never the whole record.
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
  /** Per sandbox: lines in its file, and how many it may reach before it is rewritten (under its lock). */
  private final Map<String, int[]> sizes = new ConcurrentHashMap<>();
  /** Fewest lines at which a file is rewritten. */
  static final int COMPACT_AT = 1024;
  private static final String DROPPED = "-";

  ProcessRecords(Path root) {
    this.dir = root.resolve(".groups");
    for (String sandboxId : sandboxes()) {
      int[] lines = new int[1];
      Map<Long, Long> groups = read(sandboxId, lines);
      groups.keySet().forEach(pgid -> owners.put(pgid, sandboxId));
      sizes.put(sandboxId, new int[] {lines[0], limit(groups.size())});
    }
  }

  private static int limit(int groups) {
    return Math.max(COMPACT_AT, 2 * groups);
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
    try {
      append(sandboxId, pgid + " " + start.orElse(0), true);
    } catch (IOException e) {
      throw new java.io.UncheckedIOException("cannot record a process group of " + sandboxId, e);
    }
    String previous = owners.put(pgid, sandboxId);
    if (previous == null || previous.equals(sandboxId)) {
      return null;
    }
    // best effort: a new execution must not fail for it, and a leftover line is still skipped once the id's
    // new leader runs
    try {
      append(previous, pgid + " " + DROPPED, false);
    } catch (java.nio.file.NoSuchFileException gone) {
      // destroyed meanwhile: nothing to drop from
    } catch (IOException e) {
      LOG.warn("Could not drop reused process group {} from the record of {}: {}", pgid, previous, e.toString());
    }
    return previous;
  }

  /**
   * Appends one line to the sandbox's record ({@code create}: starting it if there is none), and rewrites the
   * record once it has grown enough.
   */
  private void append(String sandboxId, String line, boolean create) throws IOException {
    synchronized (lock(sandboxId)) {
      Path file = dir.resolve(sandboxId);
      if (create) {
        Files.createDirectories(dir);
        Files.writeString(file, line + "\n", StandardCharsets.US_ASCII, StandardOpenOption.CREATE,
            StandardOpenOption.APPEND, StandardOpenOption.WRITE);
      } else {
        Files.writeString(file, line + "\n", StandardCharsets.US_ASCII, StandardOpenOption.APPEND,
            StandardOpenOption.WRITE);
      }
      int[] size = sizes.computeIfAbsent(sandboxId, k -> new int[] {0, COMPACT_AT});
      if (++size[0] > size[1]) {
        compact(sandboxId, file, size);
      }
    }
  }

  /** Rewrites a record as one line per recorded group (its latest leader start), dropped ids left out. */
  private void compact(String sandboxId, Path file, int[] size) {
    Map<Long, Long> groups = read(sandboxId, new int[1]);
    List<String> lines = new ArrayList<>(groups.size());
    groups.forEach((pgid, start) -> lines.add(pgid + " " + start));
    Path tmp = dir.resolve(sandboxId + ".tmp");
    try {
      Files.write(tmp, lines, StandardCharsets.US_ASCII);
      Files.move(tmp, file, java.nio.file.StandardCopyOption.REPLACE_EXISTING,
          java.nio.file.StandardCopyOption.ATOMIC_MOVE);
      size[0] = lines.size();
    } catch (IOException e) {
      LOG.warn("Could not rewrite the process-group record of {}: {}", sandboxId, e.toString());
    }
    size[1] = Math.max(limit(groups.size()), size[0] + COMPACT_AT);
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
    Map<Long, Long> groups = read(sandboxId, new int[1]);
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
   * same id again; only its latest group with it can still be alive), without the ids dropped since. Counts
   * the file's lines into {@code lines[0]}.
   */
  private Map<Long, Long> read(String sandboxId, int[] lines) {
    Path file = dir.resolve(sandboxId);
    Map<Long, Long> groups = new HashMap<>();
    List<String> all;
    try {
      if (!Files.exists(file)) {
        return groups;
      }
      all = Files.readAllLines(file, StandardCharsets.US_ASCII);
    } catch (IOException e) {
      LOG.warn("Could not read the process-group record of {}: {}", sandboxId, e.toString());
      return groups;
    }
    lines[0] = all.size();
    for (String line : all) {
      String[] parts = line.trim().split(" ");
      if (parts.length != 2) {
        continue;
      }
      try {
        long pgid = Long.parseLong(parts[0]);
        if (DROPPED.equals(parts[1])) {
          groups.remove(pgid);
        } else {
          groups.merge(pgid, Long.parseLong(parts[1]), Math::max);
        }
      } catch (NumberFormatException e) {
        // a line cut short: the others still count
      }
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
    sizes.remove(sandboxId);
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
