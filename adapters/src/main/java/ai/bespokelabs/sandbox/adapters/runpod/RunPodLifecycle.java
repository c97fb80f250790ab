package ai.bespokelabs.sandbox.adapters.runpod;

import static ai.bespokelabs.sandbox.adapters.runpod.RunPodProvider.BACKEND;

import ai.bespokelabs.sandbox.adapters.spi.Lifecycle;
import ai.bespokelabs.sandbox.core.bus.Messages.CreateSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.DestroySandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.SandboxDestroyed;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import ai.bespokelabs.sandbox.core.model.SandboxConfig;
import io.vertx.core.Future;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.math.BigDecimal;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Creating and terminating RunPod pods.
 *
 * <p>create: {@code POST /pods} with the image ({@code image} or {@code RUNPOD_IMAGE}), one exact GPU type id
 * ({@code gpu} as {@code <type id>} or {@code <type id>:<count>}, else {@code RUNPOD_GPU_TYPE}), port
 * {@code 22/tcp}, the env vars plus {@code PUBLIC_KEY} (the gateway's SSH public key, which RunPod's images put
 * in {@code authorized_keys}) and our marks in the name; then polls {@code GET /pods/{id}} until the pod runs
 * with its SSH port mapped, within the create timeout. RunPod cannot cut a pod off the internet, so
 * {@code allow_internet: false} is refused (422) before any call; it has no snapshots. An answer lost after the
 * request was sent is resolved by the list (the pod named with this create's token), never by a second create;
 * a 5xx answer terminates whatever carries the token.
 */
final class RunPodLifecycle implements Lifecycle {
  private static final Pattern IMAGE = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._/:@-]{0,254}");
  private static final Pattern GPU = Pattern.compile("([A-Za-z0-9][A-Za-z0-9 ._-]{0,99}?)(?::([1-8]))?");

  private final RunPodClient client;
  private final RunPodPods pods;
  private final RunPodSsh ssh;

  RunPodLifecycle(RunPodClient client, RunPodPods pods, RunPodSsh ssh) {
    this.client = client;
    this.pods = pods;
    this.ssh = ssh;
  }

  @Override
  public Future<String> create(CreateSandbox request) {
    JsonObject body;
    try {
      body = createBody(request, ssh.publicKey(), client.settings());
    } catch (RuntimeException e) {
      return Future.failedFuture(e);
    }
    long deadline = System.nanoTime() + client.settings().createTimeout().toNanos();
    return client.call("create", true, HttpMethod.POST, client.api("/pods"), body).transform(ar -> {
      if (ar.failed()) {
        ProviderException e = RunPodErrors.transportError("create", ar.cause(), true);
        return e.error().outcome() == ProviderError.Outcome.UNKNOWN ? maybeCreated(request, e.error())
            : Future.failedFuture(e);
      }
      RunPodClient.Resp r = ar.result();
      if (!r.ok()) {
        ProviderException e = client.httpError("create", r.status(), r.headers());
        if (r.status() < 500) {
          return Future.failedFuture(e);
        }
        return cleanupByToken(request.createToken()).compose(cleanup -> Future.failedFuture(
            new ProviderException(e.error().withContext("cleanup_status", cleanup))));
      }
      String id;
      try {
        id = client.json("create", r, true).getString("id");
      } catch (ProviderException | ClassCastException e) {
        id = null;
      }
      return id == null ? maybeCreated(request, RunPodErrors.badResponse("create", true).error())
          : Future.succeededFuture(id);
    }).compose(id -> awaitSsh(id, deadline, 100).map(id));
  }

  /** RunPod's live price of the new pod (the seed bills a pod at it too), read from the pod itself. */
  @Override
  public Future<BigDecimal> quotedHourlyRate(CreateSandbox request, String providerResourceId) {
    return pods.get(providerResourceId, "create").map(RunPodInventory::hourlyRate);
  }

  static JsonObject createBody(CreateSandbox request, String publicKey, RunPodSettings settings) {
    SandboxConfig c = request.config();
    if (Boolean.FALSE.equals(c.allowInternet())) {
      throw new ApiException(422, "runpod cannot isolate a pod from the internet: allow_internet false is not "
          + "supported on this backend");
    }
    if (c.snapshotId() != null) {
      throw new ApiException(422, "runpod has no snapshots: snapshot_id is not supported on this backend");
    }
    String image = c.image() != null ? c.image() : settings.image();
    if (!IMAGE.matcher(image).matches()) {
      throw new ApiException(422, "image is not a valid image reference");
    }
    String gpu = c.gpu() == null || c.gpu().isBlank() ? settings.gpuType() : c.gpu().trim();
    JsonObject body = new JsonObject()
        .put("name", new RunPodMarks(request.sandboxId(), request.organizationId(), request.createToken()).name())
        .put("computeType", "GPU").put("ports", new JsonArray().add("22/tcp"));
    body.put("imageName", image);
    Matcher m = GPU.matcher(gpu);
    if (!m.matches()) {
      throw new ApiException(422, "gpu must be an exact RunPod GPU type id, optionally with :<count> (1-8)");
    }
    body.put("gpuTypeIds", new JsonArray().add(m.group(1).trim()));
    body.put("gpuCount", m.group(2) == null ? 1 : Integer.parseInt(m.group(2)));
    if (c.diskMb() != null) {
      body.put("containerDiskInGb", Math.max(1, (c.diskMb() + 1023) / 1024));
    }
    JsonObject env = new JsonObject();
    for (Map.Entry<String, String> e : c.envVars() == null ? Map.<String, String>of().entrySet()
        : c.envVars().entrySet()) {
      env.put(e.getKey(), e.getValue());
    }
    env.put("PUBLIC_KEY", publicKey);
    return body.put("env", env);
  }

  /** A create whose answer was lost: the pod named with this create's token, if the list shows one. */
  private Future<String> maybeCreated(CreateSandbox request, ProviderError error) {
    return pods.list("create", m -> m.createToken().equals(request.createToken())).transform(ar -> {
      if (ar.succeeded() && !ar.result().isEmpty()) {
        return Future.succeededFuture(ar.result().get(0).getString("id"));
      }
      return Future.failedFuture(new ProviderException(new ProviderError(error.code(), BACKEND, "create", true,
          ProviderError.Outcome.UNKNOWN, error.context()).withContext("cleanup_status",
          ar.succeeded() ? "not_found" : "unknown")));
    });
  }

  /** Polls the new pod until its SSH port is mapped; on termination or the deadline it is terminated. */
  private Future<Void> awaitSsh(String id, long deadline, long pause) {
    return client.call("create", false, HttpMethod.GET, pods.url(id), null).transform(ar -> {
      String status = "unknown";
      if (ar.succeeded()) {
        RunPodClient.Resp r = ar.result();
        if (r.status() == 404) {
          return Future.failedFuture(new ProviderException(ProviderError.of(ErrorCode.CREATION_FAILED, BACKEND,
              "create", true, ProviderError.Outcome.FAILED).withContext("provider_resource_id", id)));
        }
        if (!r.ok() && r.status() != 429 && r.status() < 500) {
          return withCleanup(client.httpError("create", r.status(), r.headers()).error(), id);
        }
        if (r.ok()) {
          try {
            JsonObject pod = client.json("create", r, false);
            status = pod.getString("desiredStatus", "unknown");
            if (RunPodPods.sshEndpoint(pod) != null) {
              return Future.succeededFuture();
            }
          } catch (ProviderException | ClassCastException e) {
            // an unreadable poll changes nothing: poll again until the deadline
          }
        }
      }
      if ("TERMINATED".equals(status) || "EXITED".equals(status)) {
        return withCleanup(ProviderError.of(ErrorCode.CREATION_FAILED, BACKEND, "create", false,
            ProviderError.Outcome.FAILED), id);
      }
      if (System.nanoTime() > deadline) {
        return withCleanup(ProviderError.of(ErrorCode.TIMEOUT, BACKEND, "create", true,
            ProviderError.Outcome.FAILED), id);
      }
      return client.delay(pause).compose(v -> awaitSsh(id, deadline, Math.min(2_000, pause * 3 / 2)));
    });
  }

  private <T> Future<T> withCleanup(ProviderError error, String id) {
    return deleteQuietly(id).compose(cleanup -> Future.failedFuture(new ProviderException(new ProviderError(
        error.code(), error.backend(), error.op(), error.retryable(),
        "unknown".equals(cleanup) ? ProviderError.Outcome.UNKNOWN : error.outcome(), error.context())
        .withContext("cleanup_status", cleanup).withContext("provider_resource_id", id))));
  }

  /** Terminates whatever carries {@code token}: {@code deleted}, {@code not_found} or {@code unknown}. */
  private Future<String> cleanupByToken(String token) {
    return pods.list("create", m -> m.createToken().equals(token)).transform(ar -> {
      if (ar.failed()) {
        return Future.succeededFuture("unknown");
      }
      if (ar.result().isEmpty()) {
        return Future.succeededFuture("not_found");
      }
      return deleteAll(ar.result(), 0, true);
    });
  }

  private Future<String> deleteAll(List<JsonObject> found, int i, boolean all) {
    if (i == found.size()) {
      return Future.succeededFuture(all ? "deleted" : "unknown");
    }
    return deleteQuietly(found.get(i).getString("id"))
        .compose(cleanup -> deleteAll(found, i + 1, all && !"unknown".equals(cleanup)));
  }

  private Future<String> deleteQuietly(String id) {
    return pods.delete(id, "create").transform(ar -> Future.succeededFuture(ar.failed() ? "unknown"
        : ar.result() ? "not_found" : "deleted"));
  }

  /** Terminates the pod by resource id; without one, whatever carries the sandbox's id in its name. */
  @Override
  public Future<SandboxDestroyed> destroy(DestroySandbox request) {
    if (request.providerResourceId() != null) {
      String id = request.providerResourceId();
      return ssh.forget(id).compose(v -> pods.delete(id, "destroy")).map(SandboxDestroyed::new);
    }
    return pods.list("destroy", m -> m.sandboxId().equals(request.sandboxId())).compose(found -> {
      Future<Boolean> gone = Future.succeededFuture(true);
      for (JsonObject p : found) {
        gone = gone.compose(g -> pods.delete(p.getString("id"), "destroy").map(d -> g & d));
      }
      return gone.map(SandboxDestroyed::new);
    });
  }
}
