package ai.bespokelabs.sandbox.adapters.sim;

import java.io.IOException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.Collection;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;

/**
 * What a simulated sandbox really uses, for the simulators' metrics: its processes (the given ones and all
 * their descendants) read from {@code /proc}, and the bytes of the regular files under its directory. Each
 * {@link #sample} reports the CPU time used since the previous one, as a provider's periodic collector
 * does. Blocking: call it off the event loop. On a host without {@code /proc} processes count as idle.
 */
public final class UsageSampler {
  /** USER_HZ, which Linux fixes at 100 for user space. */
  private static final double TICKS_PER_SECOND = 100.0;

  /** One sample: CPU seconds per second since the previous sample (1.0 = one busy CPU), bytes. */
  public record Usage(double cpus, long memoryBytes, long diskBytes) {}

  private Map<Long, Long> lastTicks = new HashMap<>();
  private long lastNanos = System.nanoTime();

  /** Samples the process trees rooted at {@code roots} and the files under {@code dir}. */
  public synchronized Usage sample(Collection<Long> roots, Path dir) {
    Map<Long, Long> ticks = new HashMap<>();
    long memory = 0;
    for (long root : roots) {
      Optional<ProcessHandle> h = ProcessHandle.of(root);
      if (h.isEmpty()) {
        continue;
      }
      for (ProcessHandle p : (Iterable<ProcessHandle>) () -> java.util.stream.Stream.concat(
          java.util.stream.Stream.of(h.get()), h.get().descendants()).iterator()) {
        long t = cpuTicks(p.pid());
        if (t >= 0 && ticks.putIfAbsent(p.pid(), t) == null) {
          memory += rssBytes(p.pid());
        }
      }
    }
    long now = System.nanoTime();
    long used = 0;
    for (Map.Entry<Long, Long> e : ticks.entrySet()) {
      used += Math.max(0, e.getValue() - lastTicks.getOrDefault(e.getKey(), 0L));
    }
    double wall = Math.max(1e-3, (now - lastNanos) / 1e9);
    lastTicks = ticks;
    lastNanos = now;
    return new Usage(used / TICKS_PER_SECOND / wall, memory, directoryBytes(dir));
  }

  private static long cpuTicks(long pid) {
    try {
      String s = Files.readString(Path.of("/proc", Long.toString(pid), "stat"));
      String[] f = s.substring(s.lastIndexOf(')') + 2).split(" ");
      return Long.parseLong(f[11]) + Long.parseLong(f[12]);
    } catch (IOException | RuntimeException e) {
      return -1;
    }
  }

  private static long rssBytes(long pid) {
    try (var lines = Files.lines(Path.of("/proc", Long.toString(pid), "status"))) {
      return lines.filter(l -> l.startsWith("VmRSS:")).findFirst()
          .map(l -> Long.parseLong(l.substring(6).trim().split("\\s+")[0]) * 1024).orElse(0L);
    } catch (IOException | RuntimeException e) {
      return 0;
    }
  }

  private static long directoryBytes(Path dir) {
    long[] total = {0};
    try {
      Files.walkFileTree(dir, new SimpleFileVisitor<>() {
        @Override
        public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) {
          if (attrs.isRegularFile()) {
            total[0] += attrs.size();
          }
          return FileVisitResult.CONTINUE;
        }

        @Override
        public FileVisitResult visitFileFailed(Path file, IOException e) {
          return FileVisitResult.CONTINUE;
        }
      });
    } catch (IOException e) {
      // a sandbox deleted meanwhile
    }
    return total[0];
  }
}
