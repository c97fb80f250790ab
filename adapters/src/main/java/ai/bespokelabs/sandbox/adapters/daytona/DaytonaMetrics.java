package ai.bespokelabs.sandbox.adapters.daytona;

import ai.bespokelabs.sandbox.adapters.spi.Metrics;
import ai.bespokelabs.sandbox.core.bus.Messages.MetricsRequest;
import ai.bespokelabs.sandbox.core.bus.Messages.SandboxMetrics;
import ai.bespokelabs.sandbox.core.error.ApiException;
import io.vertx.core.Future;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeParseException;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Live resource use of a Daytona sandbox: its resources from {@code GET /sandbox/{id}} and the newest data
 * points of its telemetry.
 */
final class DaytonaMetrics implements Metrics {
  /** How far back telemetry is read for the newest data points. */
  static final Duration TELEMETRY_WINDOW = Duration.ofMinutes(5);
  static final String CPU_UTILIZATION = "daytona.sandbox.cpu.utilization";
  static final String CPU_LIMIT = "daytona.sandbox.cpu.limit";
  static final String MEMORY_USAGE = "daytona.sandbox.memory.usage";
  static final String MEMORY_LIMIT = "daytona.sandbox.memory.limit";
  static final String DISK_USAGE = "daytona.sandbox.filesystem.usage";
  static final String DISK_TOTAL = "daytona.sandbox.filesystem.total";
  private static final List<String> METRIC_NAMES = List.of(CPU_UTILIZATION, CPU_LIMIT, MEMORY_USAGE, MEMORY_LIMIT,
      DISK_USAGE, DISK_TOTAL);

  private final DaytonaClient client;
  private final DaytonaSandboxes sandboxes;
  private final Clock clock;

  DaytonaMetrics(DaytonaClient client, DaytonaSandboxes sandboxes, Clock clock) {
    this.client = client;
    this.sandboxes = sandboxes;
    this.clock = clock;
  }

  /**
   * The sandbox's resources from {@code GET /sandbox/{id}} (409 unless {@code started}: a stopped sandbox uses
   * nothing and is not started just to be measured) and the newest data points of the last five minutes of
   * its telemetry, {@code GET /sandbox/{id}/telemetry/metrics}. The spec leaves metric names open; these are
   * the names Daytona's sandboxes export and its SDKs read: CPU utilization as a percentage of the sandbox's
   * CPU limit (times the limit: percent of one CPU), memory and filesystem usage and limits in bytes.
   * Telemetry is an organization feature Daytona may not have enabled: when it answers 403 or 404, or has no
   * data points yet, usage is unknown (null) and the limits are the sandbox's cpu, memory and disk. Daytona
   * does not count processes.
   */
  @Override
  public Future<SandboxMetrics> sample(MetricsRequest request) {
    String id = request.providerResourceId();
    if (id == null || id.isBlank()) {
      return Future.failedFuture(DaytonaSandboxes.notFound("metrics"));
    }
    return client.expect("metrics", false, HttpMethod.GET, sandboxes.url(id), null).compose(r -> {
      JsonObject sbx = client.json("metrics", r, false);
      Object state = sbx.getValue("state");
      if (DaytonaSandboxes.GONE.contains(state)) {
        throw DaytonaSandboxes.notFound("metrics");
      }
      if (!"started".equals(state)) {
        throw ApiException.conflict("sandbox is not running at Daytona");
      }
      Double cores = number(sbx.getValue("cpu"));
      Double memoryGb = number(sbx.getValue("memory"));
      Double diskGb = number(sbx.getValue("disk"));
      return telemetry(id).map(latest -> {
        Double cpuLimit = latest.getOrDefault(CPU_LIMIT, cores);
        Double utilization = latest.get(CPU_UTILIZATION);
        Double cpu = utilization == null || cpuLimit == null ? null
            : Math.round(utilization * cpuLimit * 10) / 10.0;
        Double memoryLimit = latest.containsKey(MEMORY_LIMIT) ? mb(latest.get(MEMORY_LIMIT))
            : memoryGb == null ? null : memoryGb * 1024;
        Double diskLimit = latest.containsKey(DISK_TOTAL) ? mb(latest.get(DISK_TOTAL))
            : diskGb == null ? null : diskGb * 1024;
        return new SandboxMetrics(cpu, mb(latest.get(MEMORY_USAGE)), memoryLimit, mb(latest.get(DISK_USAGE)),
            diskLimit, null);
      });
    });
  }

  /** The newest value of each metric in the telemetry window; empty when Daytona keeps no telemetry for it. */
  private Future<Map<String, Double>> telemetry(String id) {
    Instant to = clock.instant();
    StringBuilder url = new StringBuilder(sandboxes.url(id)).append("/telemetry/metrics?from=")
        .append(DaytonaSandboxes.encode(to.minus(TELEMETRY_WINDOW).toString())).append("&to=")
        .append(DaytonaSandboxes.encode(to.toString()));
    METRIC_NAMES.forEach(n -> url.append("&metricNames=").append(DaytonaSandboxes.encode(n)));
    return client.call("metrics", false, HttpMethod.GET, url.toString(), null, null, client.requestTimeoutMs())
        .map(r -> {
          if (r.status() == 403 || r.status() == 404) {
            return Map.of();
          }
          if (!r.ok()) {
            throw client.httpError("metrics", r.status(), r.headers());
          }
          if (!(client.json("metrics", r, false).getValue("series") instanceof JsonArray series)) {
            throw client.badResponse("metrics", false);
          }
          return newest(series);
        });
  }

  private static Map<String, Double> newest(JsonArray series) {
    Map<String, Double> values = new HashMap<>();
    for (Object o : series) {
      if (!(o instanceof JsonObject s) || !(s.getValue("metricName") instanceof String name)
          || !METRIC_NAMES.contains(name) || !(s.getValue("dataPoints") instanceof JsonArray points)) {
        continue;
      }
      Instant newest = null;
      for (Object p : points) {
        if (p instanceof JsonObject point && point.getValue("timestamp") instanceof String ts
            && number(point.getValue("value")) instanceof Double value) {
          Instant at = instant(ts);
          if (at != null && (newest == null || !at.isBefore(newest))) {
            newest = at;
            values.put(name, value);
          }
        }
      }
    }
    return values;
  }

  /** An ISO 8601 time, with {@code T} or a space between date and time and UTC when it names no offset; else null. */
  static Instant instant(String ts) {
    String t = ts.trim();
    if (t.length() > 10 && t.charAt(10) == ' ') {
      t = t.substring(0, 10) + 'T' + t.substring(11);
    }
    try {
      return OffsetDateTime.parse(t).toInstant();
    } catch (DateTimeParseException withoutOffset) {
      try {
        return LocalDateTime.parse(t).toInstant(ZoneOffset.UTC);
      } catch (DateTimeParseException unreadable) {
        return null;
      }
    }
  }

  /** A finite, non-negative number, or null. */
  private static Double number(Object v) {
    return v instanceof Number n && Double.isFinite(n.doubleValue()) && n.doubleValue() >= 0 ? n.doubleValue() : null;
  }

  /** Bytes as mebibytes, to two decimals. */
  private static Double mb(Double bytes) {
    return bytes == null ? null : Math.round(bytes / (1 << 20) * 100) / 100.0;
  }
}
