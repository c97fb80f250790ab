package ai.bespokelabs.sandbox.adapters.local;

import java.io.IOException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.Collection;
import java.util.HashMap;
import java.util.Map;
import java.util.OptionalDouble;

/**
 * Resource use of host processes and directories, read from {@code /proc} and the file system. Blocking:
 * called on the adapter's virtual threads only.
 */
public final class HostMetrics {
  /** The kernel reports CPU times in USER_HZ ticks, which it fixes at 100 per second for user space. */
  private static final double TICKS_PER_SECOND = 100.0;

  private HostMetrics() {}

  /** CPU (percent of one CPU), resident memory (sum of RSS, bytes) and count of the processes sampled. */
  record Usage(double cpuPercent, long rssBytes, int processes) {}

  /**
   * Samples {@code pids} twice, {@code windowMs} apart: CPU is the utime+stime they used in between over
   * the wall time, memory the RSS of those alive at the end. A process that started in the window counts
   * all its CPU time; one that exited in the window counts none (RSS of shared pages counts once per
   * process).
   */
  static Usage sample(java.util.function.Supplier<Collection<Long>> pids, long windowMs) throws InterruptedException {
    Map<Long, Long> before = new HashMap<>();
    for (long pid : pids.get()) {
      long t = cpuTicks(pid);
      if (t >= 0) {
        before.put(pid, t);
      }
    }
    long start = System.nanoTime();
    Thread.sleep(windowMs);
    Collection<Long> now = pids.get();
    long wallNanos = System.nanoTime() - start;
    long ticks = 0;
    long rss = 0;
    int alive = 0;
    for (long pid : now) {
      long t = cpuTicks(pid);
      if (t < 0) {
        continue; // exited meanwhile
      }
      ticks += Math.max(0, t - before.getOrDefault(pid, 0L));
      rss += rssBytes(pid);
      alive++;
    }
    double cpu = ticks / TICKS_PER_SECOND / (wallNanos / 1e9) * 100.0;
    return new Usage(Math.round(cpu * 10) / 10.0, rss, alive);
  }

  /** utime + stime of a process in ticks, or -1 when it is gone. */
  public static long cpuTicks(long pid) {
    try {
      String s = Files.readString(Path.of("/proc", Long.toString(pid), "stat"));
      // after "pid (comm) ": state is field 3, utime 14 and stime 15
      String[] f = s.substring(s.lastIndexOf(')') + 2).split(" ");
      return Long.parseLong(f[11]) + Long.parseLong(f[12]);
    } catch (IOException | RuntimeException e) {
      return -1;
    }
  }

  /** The resident set size ({@code VmRSS}) of a process in bytes; 0 when gone or a kernel thread. */
  public static long rssBytes(long pid) {
    try (var lines = Files.lines(Path.of("/proc", Long.toString(pid), "status"))) {
      return lines.filter(l -> l.startsWith("VmRSS:")).findFirst()
          .map(l -> Long.parseLong(l.substring(6).trim().split("\\s+")[0]) * 1024).orElse(0L);
    } catch (IOException | RuntimeException e) {
      return 0;
    }
  }

  /**
   * The total size of the regular files under {@code dir} (symlinks are not followed), or empty when the
   * walk did not finish within {@code budgetMs} or the directory is gone.
   */
  public static OptionalDouble directoryBytes(Path dir, long budgetMs) {
    long deadline = System.nanoTime() + budgetMs * 1_000_000;
    long[] total = {0};
    boolean[] late = {false};
    try {
      Files.walkFileTree(dir, new SimpleFileVisitor<>() {
        @Override
        public FileVisitResult preVisitDirectory(Path d, BasicFileAttributes attrs) {
          if (System.nanoTime() > deadline) {
            late[0] = true;
            return FileVisitResult.TERMINATE;
          }
          return FileVisitResult.CONTINUE;
        }

        @Override
        public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) {
          if (attrs.isRegularFile()) {
            total[0] += attrs.size();
          }
          return FileVisitResult.CONTINUE;
        }

        @Override
        public FileVisitResult visitFileFailed(Path file, IOException e) {
          return FileVisitResult.CONTINUE; // vanished or unreadable: not counted
        }
      });
    } catch (IOException e) {
      return OptionalDouble.empty();
    }
    return late[0] ? OptionalDouble.empty() : OptionalDouble.of(total[0]);
  }
}
