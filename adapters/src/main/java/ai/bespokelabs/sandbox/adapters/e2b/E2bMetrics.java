package ai.bespokelabs.sandbox.adapters.e2b;

import static ai.bespokelabs.sandbox.adapters.e2b.E2bClient.expect;
import static ai.bespokelabs.sandbox.adapters.e2b.E2bClient.json;
import static ai.bespokelabs.sandbox.adapters.e2b.E2bClient.segment;
import static ai.bespokelabs.sandbox.adapters.e2b.E2bClient.send;

import ai.bespokelabs.sandbox.adapters.spi.Metrics;
import ai.bespokelabs.sandbox.core.bus.Messages.MetricsRequest;
import ai.bespokelabs.sandbox.core.bus.Messages.SandboxMetrics;
import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError.Outcome;
import io.vertx.core.Future;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.time.Clock;

/**
 * The newest sample of the last two minutes from {@code GET /sandboxes/{id}/metrics}: CPU is E2B's
 * percentage of the sandbox's CPUs times their count (so percent of one CPU), memory and disk are used
 * and total bytes as E2B measures them inside the sandbox. E2B does not count processes. A sandbox with
 * no sample yet (just created) reports its template's memory and disk from {@code GET /sandboxes/{id}},
 * with usage unknown.
 */
final class E2bMetrics implements Metrics {
  /** How far back a metrics sample may lie: E2B collects one every few seconds. */
  static final long METRICS_WINDOW_SECS = 120;

  private final E2bClient client;
  private final Clock clock;

  E2bMetrics(E2bClient client, Clock clock) {
    this.client = client;
    this.clock = clock;
  }

  @Override
  public Future<SandboxMetrics> sample(MetricsRequest request) {
    String id = request.providerResourceId();
    if (id == null || id.isBlank()) {
      return Future.failedFuture(E2bErrors.of(ErrorCode.NOT_FOUND, "metrics", false, Outcome.FAILED));
    }
    long start = Math.max(0, clock.instant().getEpochSecond() - METRICS_WINDOW_SECS);
    return send(client.api(HttpMethod.GET, "/sandboxes/" + segment(id) + "/metrics")
        .addQueryParam("start", String.valueOf(start)).send(), "metrics").compose(r -> {
          expect(r, "metrics", 200);
          JsonArray samples;
          try {
            samples = r.bodyAsJsonArray();
          } catch (DecodeException | ClassCastException e) {
            samples = null;
          }
          if (samples == null) {
            throw E2bErrors.of(ErrorCode.COMMAND_FAILED, "metrics", false, Outcome.FAILED);
          }
          JsonObject latest = null;
          for (Object o : samples) {
            if (o instanceof JsonObject j && (latest == null || timestamp(j) >= timestamp(latest))) {
              latest = j;
            }
          }
          return latest == null ? limits(id) : Future.succeededFuture(of(latest));
        });
  }

  private static SandboxMetrics of(JsonObject latest) {
    Double pct = number(latest, "cpuUsedPct");
    Double cpus = number(latest, "cpuCount");
    Double cpu = pct == null || cpus == null ? null : Math.round(pct * cpus * 10) / 10.0;
    return new SandboxMetrics(cpu, mb(number(latest, "memUsed")), mb(number(latest, "memTotal")),
        mb(number(latest, "diskUsed")), mb(number(latest, "diskTotal")), null);
  }

  /** No sample yet: the template's memory and disk, usage unknown. */
  private Future<SandboxMetrics> limits(String id) {
    return send(client.api(HttpMethod.GET, "/sandboxes/" + segment(id)).send(), "metrics").map(d -> {
      JsonObject detail = json(expect(d, "metrics", 200), "metrics");
      return new SandboxMetrics(null, null, number(detail, "memoryMB"), null, number(detail, "diskSizeMB"), null);
    });
  }

  private static long timestamp(JsonObject sample) {
    return sample.getValue("timestampUnix") instanceof Number n ? n.longValue() : Long.MIN_VALUE;
  }

  /** A non-negative number field, or null. */
  private static Double number(JsonObject j, String key) {
    return j.getValue(key) instanceof Number n && n.doubleValue() >= 0 ? n.doubleValue() : null;
  }

  /** Bytes as mebibytes, to two decimals. */
  private static Double mb(Double bytes) {
    return bytes == null ? null : Math.round(bytes / (1 << 20) * 100) / 100.0;
  }
}
