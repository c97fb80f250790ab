package ai.bespokelabs.sandbox.adapters.ray;

import ai.bespokelabs.sandbox.adapters.ray.RaySandboxes.Sandbox;
import ai.bespokelabs.sandbox.adapters.spi.Lifecycle;
import ai.bespokelabs.sandbox.core.bus.Messages.CreateSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.DestroySandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.SandboxDestroyed;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.model.SandboxConfig;
import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A Ray sandbox is a working area on the cluster, not a Ray object: create checks the request, then submits
 * the sandbox's anchor job, which keeps what its jobs need on the cluster ({@link RaySandboxes}); destroy
 * stops the sandbox's running jobs and deletes its ended ones, the anchor among them.
 */
final class RayLifecycle implements Lifecycle {
  private static final Logger LOG = LoggerFactory.getLogger(RayLifecycle.class);
  /** How long destroy waits for stopped jobs to reach a terminal state before deleting them. */
  static final long STOP_WAIT_MS = 10_000;

  private final RayClient client;
  private final RayJobs jobs;
  private final RaySandboxes sandboxes;

  RayLifecycle(RayClient client, RayJobs jobs, RaySandboxes sandboxes) {
    this.client = client;
    this.jobs = jobs;
    this.sandboxes = sandboxes;
  }

  @Override
  public Future<String> create(CreateSandbox request) {
    Sandbox sandbox;
    try {
      sandbox = sandbox(request);
    } catch (RuntimeException e) {
      return Future.failedFuture(e);
    }
    return sandboxes.create(request.sandboxId(), sandbox).map(request.sandboxId());
  }

  /** What the sandbox's jobs get; what Ray cannot give a job is refused here, before any call. */
  static Sandbox sandbox(CreateSandbox request) {
    SandboxConfig c = request.config();
    if (c.image() != null || c.snapshotId() != null || c.template() != null) {
      throw ApiException.invalid("image, snapshot_id and template are not supported by the ray backend "
          + "(jobs run in the cluster's own environment)");
    }
    if (Boolean.FALSE.equals(c.allowInternet())) {
      throw ApiException.invalid("allow_internet: false is not supported by the ray backend "
          + "(Ray cannot isolate a job's network)");
    }
    if (c.workdir() != null || c.gitRepo() != null) {
      throw ApiException.invalid("workdir and git_repo are not supported by the ray backend (it has no files API)");
    }
    Integer gpus = null;
    if (c.gpu() != null) {
      try {
        gpus = Integer.parseInt(c.gpu().trim());
      } catch (NumberFormatException e) {
        gpus = -1;
      }
      if (gpus < 0) {
        throw ApiException.invalid("gpu must be a number of GPUs on the ray backend");
      }
    }
    Long memory = c.memoryMb() == null ? null : c.memoryMb() * 1024L * 1024L;
    Map<String, String> env = c.envVars() == null ? Map.of() : c.envVars();
    return new Sandbox(request.organizationId(), request.createToken(), env, c.cpu(), memory, gpus);
  }

  @Override
  public Future<SandboxDestroyed> destroy(DestroySandbox request) {
    String sandboxId = request.sandboxId();
    return jobs.of(sandboxId, "destroy").compose(found -> {
      List<Future<Boolean>> stops = new ArrayList<>();
      List<String> stopped = new ArrayList<>();
      for (JsonObject j : found) {
        if (!RaySandboxes.terminal(j.getString("status"))) {
          stopped.add(j.getString("submission_id"));
          stops.add(jobs.stop(j.getString("submission_id"), "destroy"));
        }
      }
      List<String> all = found.stream().map(j -> j.getString("submission_id")).toList();
      return Future.all(stops)
          .compose(v -> stopped.isEmpty() ? Future.succeededFuture() : settle(stopped, STOP_WAIT_MS))
          .compose(v -> deleteEnded(all))
          .map(v -> {
            sandboxes.forget(sandboxId);
            return new SandboxDestroyed(found.isEmpty());
          });
    });
  }

  /** Waits (polling) until the stopped jobs are terminal, or {@code budgetMs} passed. */
  private Future<Void> settle(List<String> stopped, long budgetMs) {
    List<Future<JsonObject>> looks = stopped.stream().map(id -> jobs.details(id, "destroy")).toList();
    return Future.all(looks).compose(v -> {
      boolean done = looks.stream().map(Future::result)
          .allMatch(j -> j == null || RaySandboxes.terminal(j.getString("status")));
      if (done || budgetMs <= 0) {
        return Future.succeededFuture();
      }
      return client.vertx().timer(200).compose(t -> settle(stopped, budgetMs - 200));
    });
  }

  /**
   * Deletes the sandbox's jobs that ended; one still running (Ray refuses) stays, listed for reconciliation
   * (its sandbox then an orphan, destroyed again).
   */
  private Future<Void> deleteEnded(List<String> ids) {
    List<Future<Void>> deletes = new ArrayList<>();
    for (String id : ids) {
      deletes.add(jobs.delete(id, "destroy").recover(t -> {
        LOG.debug("Ray job {} was not deleted", id);
        return Future.succeededFuture();
      }));
    }
    return Future.all(deletes).mapEmpty();
  }
}
