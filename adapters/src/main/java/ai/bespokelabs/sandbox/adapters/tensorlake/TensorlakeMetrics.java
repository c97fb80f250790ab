package ai.bespokelabs.sandbox.adapters.tensorlake;

import ai.bespokelabs.sandbox.adapters.spi.Metrics;
import ai.bespokelabs.sandbox.core.bus.Messages.MetricsRequest;
import ai.bespokelabs.sandbox.core.bus.Messages.SandboxMetrics;
import ai.bespokelabs.sandbox.core.error.ApiException;
import io.vertx.core.Future;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;

/**
 * What Tensorlake tells about a running sandbox: its resources from {@code GET /sandboxes/{id}}
 * ({@code memory_mb} and {@code ephemeral_disk_mb} as the limits) and the daemon's count of the processes it
 * runs from {@code GET /api/v1/info} ({@code running_processes}). Tensorlake reports no CPU, memory or disk use:
 * those are null.
 */
final class TensorlakeMetrics implements Metrics {
  private final TensorlakeClient client;
  private final TensorlakeSandboxes sandboxes;

  TensorlakeMetrics(TensorlakeClient client, TensorlakeSandboxes sandboxes) {
    this.client = client;
    this.sandboxes = sandboxes;
  }

  /** 409 unless the sandbox runs at Tensorlake (a suspended one is not resumed just to be measured). */
  @Override
  public Future<SandboxMetrics> sample(MetricsRequest request) {
    String id = request.providerResourceId();
    if (id == null || id.isBlank()) {
      return Future.failedFuture(client.notFound("metrics"));
    }
    return client.expect("metrics", false, HttpMethod.GET, sandboxes.url(id), null, null).compose(r -> {
      JsonObject s = client.json("metrics", r, false);
      String status = s.getValue("status") instanceof String st ? st : "unknown";
      if (TensorlakeSandboxes.GONE.contains(status)) {
        throw client.notFound("metrics");
      }
      if (!"running".equals(status)) {
        throw ApiException.conflict("sandbox is not running at Tensorlake");
      }
      JsonObject resources = s.getValue("resources") instanceof JsonObject o ? o : new JsonObject();
      Double memoryLimit = positive(resources.getValue("memory_mb"));
      Double diskLimit = positive(resources.getValue("ephemeral_disk_mb"));
      TensorlakeClient.Daemon d = sandboxes.remember(id, s);
      return client.expect("metrics", false, HttpMethod.GET, d.base() + "/api/v1/info", d, null).map(i -> {
        Object running = client.json("metrics", i, false).getValue("running_processes");
        Integer processes = running instanceof Number n && n.longValue() >= 0 ? n.intValue() : null;
        return new SandboxMetrics(null, null, memoryLimit, null, diskLimit, processes);
      });
    });
  }

  /** A positive number as a double; null for anything else (Tensorlake reports 0 for a disk it does not size). */
  private static Double positive(Object v) {
    return v instanceof Number n && n.doubleValue() > 0 ? n.doubleValue() : null;
  }
}
