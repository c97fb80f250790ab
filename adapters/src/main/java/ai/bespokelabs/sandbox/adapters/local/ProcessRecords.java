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

/**
 * A durable record of the process groups each local sandbox started ({@code <root>/.groups/<sandbox id>}, one
 * {@code pgid start-time} line per execution), so that after the gateway was killed and restarted, destroying
 * the sandbox still finds and kills everything it left running. The start time (from {@code /proc}) guards
 * against a process group id that was reused by an unrelated process.
 */
final class ProcessRecords {
  private final Path dir;

  ProcessRecords(Path root) {
    this.dir = root.resolve(".groups");
  }

  /** Appends the group of a just-started execution. */
  void record(String sandboxId, long pgid) {
    OptionalLong start = startTime(pgid);
    try {
      Files.createDirectories(dir);
      Files.writeString(dir.resolve(sandboxId), pgid + " " + start.orElse(0) + "\n", StandardCharsets.US_ASCII,
          StandardOpenOption.CREATE, StandardOpenOption.APPEND, StandardOpenOption.WRITE);
    } catch (IOException e) {
      throw new java.io.UncheckedIOException("cannot record a process group of " + sandboxId, e);
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
   * than that group's leader.
   */
  List<Long> members(String sandboxId) {
    Path file = dir.resolve(sandboxId);
    Map<Long, Long> groups = new HashMap<>();
    try {
      if (!Files.exists(file)) {
        return List.of();
      }
      for (String line : Files.readAllLines(file, StandardCharsets.US_ASCII)) {
        String[] parts = line.trim().split(" ");
        if (parts.length == 2) {
          groups.merge(Long.parseLong(parts[0]), Long.parseLong(parts[1]), Math::min);
        }
      }
    } catch (IOException | NumberFormatException e) {
      return List.of();
    }
    List<Long> pids = new ArrayList<>();
    ProcStats.forEach(p -> {
      Long leaderStart = groups.get(p.pgrp());
      if (p.state() != 'Z' && leaderStart != null && p.startTime() >= leaderStart) {
        pids.add(p.pid());
      }
    });
    return pids;
  }

  void forget(String sandboxId) {
    try {
      Files.deleteIfExists(dir.resolve(sandboxId));
    } catch (IOException ignored) {
      // a leftover record only costs a /proc scan at the next destroy
    }
  }

  /** Sandbox ids that have a record (sandboxes whose processes may still run). */
  List<String> sandboxes() {
    List<String> out = new ArrayList<>();
    if (!Files.isDirectory(dir)) {
      return out;
    }
    try (DirectoryStream<Path> entries = Files.newDirectoryStream(dir)) {
      entries.forEach(p -> out.add(p.getFileName().toString()));
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
