package ai.bespokelabs.sandbox.adapters.docker;

import ai.bespokelabs.sandbox.adapters.spi.Metrics;
import ai.bespokelabs.sandbox.core.bus.Messages.MetricsRequest;
import ai.bespokelabs.sandbox.core.bus.Messages.SandboxMetrics;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.error.ErrorCode;
import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * Live resource use of a container, from the engine's statistics ({@code GET /containers/{id}/stats?stream=false}):
 * CPU from the cpu/precpu deltas (engines that answer without a previous sample, like Podman, are sampled
 * twice 200 ms apart), memory used without the inactive page cache, and the writable layer's size as disk use
 * ({@code SizeRw} of {@code GET /containers/{id}/json?size=true}). The memory limit is the container's; the
 * disk limit is the config's {@code disk_mb} (not enforced by this backend).
 */
final class DockerMetrics implements Metrics {
  private static final Duration CALL = Duration.ofSeconds(30);

  private final DockerEngine engine;

  DockerMetrics(DockerEngine engine) {
    this.engine = engine;
  }

  @Override
  public Future<SandboxMetrics> sample(MetricsRequest request) {
    if (!engine.host().present()) {
      return Future.failedFuture(engine.notInstalled("metrics"));
    }
    String container = DockerEngine.q(request.providerResourceId());
    return engine.get("metrics", "/containers/" + container + "/json?size=true", CALL).compose(inspected -> {
      if (!inspected.ok()) {
        return Future.failedFuture(engine.statusFailure("metrics", inspected, ErrorCode.COMMAND_FAILED));
      }
      JsonObject info = inspected.json();
      if (!info.getJsonObject("State", new JsonObject()).getBoolean("Running", false)) {
        return Future.failedFuture(ApiException.conflict("sandbox container is not running"));
      }
      return stats(container).compose(first -> {
        Double cpu = cpuPercent(first.getJsonObject("precpu_stats"), first.getJsonObject("cpu_stats"), null);
        if (cpu != null) {
          return Future.succeededFuture(sample(request, info, first, cpu));
        }
        long start = System.nanoTime();
        return engine.vertx().timer(200, TimeUnit.MILLISECONDS).compose(v -> stats(container)).map(last -> {
          long elapsed = System.nanoTime() - start;
          Double again = cpuPercent(first.getJsonObject("cpu_stats"), last.getJsonObject("cpu_stats"),
              readNanos(first, last).orElse(elapsed));
          return sample(request, info, last, again);
        });
      });
    });
  }

  private static SandboxMetrics sample(MetricsRequest request, JsonObject info, JsonObject last, Double cpu) {
    JsonObject memory = last.getJsonObject("memory_stats", new JsonObject());
    Double used = null;
    if (memory.getLong("usage") != null) {
      JsonObject detail = memory.getJsonObject("stats", new JsonObject());
      long cache = detail.getLong("inactive_file", detail.getLong("total_inactive_file", 0L));
      used = mb(Math.max(0, memory.getLong("usage") - cache));
    }
    long memoryLimit = info.getJsonObject("HostConfig", new JsonObject()).getLong("Memory", 0L);
    Long sizeRw = info.getLong("SizeRw");
    Long pids = last.getJsonObject("pids_stats", new JsonObject()).getLong("current");
    return new SandboxMetrics(cpu, used, memoryLimit > 0 ? mb(memoryLimit) : null,
        sizeRw == null || sizeRw < 0 ? null : mb(sizeRw),
        request.diskMb() == null ? null : request.diskMb().doubleValue(), pids == null ? null : pids.intValue());
  }

  private Future<JsonObject> stats(String container) {
    return engine.get("metrics", "/containers/" + container + "/stats?stream=false", CALL).compose(r -> {
      if (r.status() == 409) {
        return Future.failedFuture(ApiException.conflict("sandbox container is not running"));
      }
      if (!r.ok()) {
        return Future.failedFuture(engine.statusFailure("metrics", r, ErrorCode.COMMAND_FAILED));
      }
      return Future.succeededFuture(r.json());
    });
  }

  /**
   * CPU use between two {@code cpu_stats} as percent of one CPU: over {@code wallNanos} when given, else
   * over the host's CPU time between them as the Docker CLI computes it. Null when either sample is empty.
   */
  static Double cpuPercent(JsonObject before, JsonObject after, Long wallNanos) {
    if (before == null || after == null) {
      return null;
    }
    long used0 = before.getJsonObject("cpu_usage", new JsonObject()).getLong("total_usage", 0L);
    long used1 = after.getJsonObject("cpu_usage", new JsonObject()).getLong("total_usage", 0L);
    if (used1 < used0 || (wallNanos == null && used0 <= 0)) {
      return null; // no previous sample (Podman's precpu_stats is empty), or a counter reset
    }
    double percent;
    if (wallNanos != null) {
      if (wallNanos <= 0) {
        return null;
      }
      percent = (used1 - used0) * 100.0 / wallNanos;
    } else {
      long system = after.getLong("system_cpu_usage", 0L) - before.getLong("system_cpu_usage", 0L);
      long cpus = after.getLong("online_cpus", 0L);
      if (before.getLong("system_cpu_usage", 0L) <= 0 || system <= 0 || cpus <= 0) {
        return null;
      }
      percent = (double) (used1 - used0) / system * cpus * 100.0;
    }
    return Math.round(percent * 10) / 10.0;
  }

  /** The time between the two samples' {@code read} stamps, when both parse. */
  private static Optional<Long> readNanos(JsonObject first, JsonObject last) {
    try {
      Instant a = Instant.parse(first.getString("read"));
      Instant b = Instant.parse(last.getString("read"));
      long n = Duration.between(a, b).toNanos();
      return n > 0 ? Optional.of(n) : Optional.empty();
    } catch (RuntimeException e) {
      return Optional.empty();
    }
  }

  private static double mb(long bytes) {
    return Math.round(bytes / 1048576.0 * 100) / 100.0;
  }
}
