package ai.bespokelabs.sandbox.adapters.runpod;

import ai.bespokelabs.sandbox.adapters.spi.Inventory;
import ai.bespokelabs.sandbox.core.bus.Messages.Resource;
import io.vertx.core.Future;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.List;

/**
 * Reconciliation and health: the pods whose name carries our marks ({@link RunPodMarks}; RunPod's list filters by
 * no label), with their provider cost so far ({@code costPerHr} times the time since {@code lastStartedAt}); one
 * authenticated {@code GET /pods?desiredStatus=RUNNING&computeType=GPU} as the health check; the gateway's SSH
 * public key as its details.
 */
final class RunPodInventory implements Inventory {
  private final RunPodClient client;
  private final RunPodPods pods;
  private final RunPodSsh ssh;
  private final Clock clock;

  RunPodInventory(RunPodClient client, RunPodPods pods, RunPodSsh ssh, Clock clock) {
    this.client = client;
    this.pods = pods;
    this.ssh = ssh;
    this.clock = clock;
  }

  /** The gateway's SSH public key (one OpenSSH line) and its SHA256 fingerprint, to register with RunPod. */
  @Override
  public Future<JsonObject> details() {
    return Future.succeededFuture(new JsonObject().put("ssh_public_key", ssh.publicKey())
        .put("ssh_key_fingerprint", ssh.fingerprint()));
  }

  @Override
  public Future<Void> checkHealth() {
    return client.expect("health", false, HttpMethod.GET, client.api("/pods?desiredStatus=RUNNING&computeType=GPU"),
        null).mapEmpty();
  }

  @Override
  public Future<List<Resource>> list() {
    return pods.list("list", m -> true).map(found -> {
      List<Resource> out = new ArrayList<>();
      for (JsonObject p : found) {
        RunPodMarks marks = RunPodMarks.parse(p.getString("name"));
        out.add(new Resource(p.getString("id"), marks.sandboxId(), status(p), cost(p)));
      }
      return out;
    });
  }

  static String status(JsonObject pod) {
    String desired = pod.getString("desiredStatus");
    if ("RUNNING".equals(desired)) {
      return RunPodPods.sshEndpoint(pod) == null ? "provisioning" : "running";
    }
    if ("EXITED".equals(desired)) {
      return "stopping";
    }
    return "TERMINATED".equals(desired) ? "terminated" : "provisioning";
  }

  /** The pod's price per hour in USD as RunPod states it (its adjusted price when it has one); null when absent. */
  static BigDecimal hourlyRate(JsonObject pod) {
    Object perHour = pod.getValue("adjustedCostPerHr") instanceof Number n ? n : pod.getValue("costPerHr");
    return perHour instanceof Number rate ? BigDecimal.valueOf(rate.doubleValue()) : null;
  }

  /** What RunPod charged so far for the running pod, from its own hourly cost; null when it does not say. */
  BigDecimal cost(JsonObject pod) {
    BigDecimal rate = hourlyRate(pod);
    String started = pod.getString("lastStartedAt");
    if (rate == null || started == null) {
      return null;
    }
    try {
      long secs = Math.max(0, Duration.between(Instant.parse(started), clock.instant()).toSeconds());
      return rate.multiply(BigDecimal.valueOf(secs))
          .divide(BigDecimal.valueOf(3600), 6, RoundingMode.HALF_UP);
    } catch (DateTimeParseException e) {
      return null;
    }
  }
}
