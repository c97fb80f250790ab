package ai.bespokelabs.sandbox.adapters.sim;

import ai.bespokelabs.sandbox.adapters.local.HostMetrics;
import java.nio.file.Path;
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
  private static final long DISK_WALK_BUDGET_MS = 2_000;

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
        long t = HostMetrics.cpuTicks(p.pid());
        if (t >= 0 && ticks.putIfAbsent(p.pid(), t) == null) {
          memory += HostMetrics.rssBytes(p.pid());
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
    return new Usage(used / TICKS_PER_SECOND / wall, memory,
        (long) HostMetrics.directoryBytes(dir, DISK_WALK_BUDGET_MS).orElse(0));
  }
}
