package ai.bespokelabs.sandbox.adapters.tensorlake;

import static ai.bespokelabs.sandbox.adapters.tensorlake.TensorlakeProvider.BACKEND;

import ai.bespokelabs.sandbox.adapters.spi.Lifecycle;
import ai.bespokelabs.sandbox.adapters.spi.SnapshotIds;
import ai.bespokelabs.sandbox.core.bus.Messages.CreateSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.DestroySandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.SandboxDestroyed;
import ai.bespokelabs.sandbox.core.bus.Messages.SnapshotSandbox;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import ai.bespokelabs.sandbox.core.model.SandboxConfig;
import io.vertx.core.Future;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import java.util.List;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * Creating, destroying, adopting and snapshotting Tensorlake sandboxes.
 *
 * <p>create: {@code POST /sandboxes} with resources (cpus, memory_mb, disk_mb), the image or snapshot, the
 * network setting, the provider's lifetime ({@code timeout_secs}) and our marks in the name; then polls
 * {@code GET /sandboxes/{id}} until {@code running} ({@link #nextPause}). A 504, or an answer lost after the
 * request was sent, may still be creating: the list is polled for the name carrying this create's token within
 * the create timeout, and what is found is used — never a second create. Other 5xx answers delete what carries
 * the token. Tensorlake has no sandbox-level environment: env vars go to every process started in it.
 *
 * <p>Tensorlake has no call that moves a sandbox's lifetime ({@code PATCH /sandboxes/{id}} takes a name, ports,
 * a network policy and resources only), so {@code extendTimeout} is not offered.
 */
final class TensorlakeLifecycle implements Lifecycle {
  private static final Pattern IMAGE = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._/:@-]{0,254}");
  private static final Pattern SNAPSHOT = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,127}");
  /** Tensorlake snapshots carry no labels: the ids handed out carry their organization. */
  private final SnapshotIds snapshotIds;
  private static final Set<String> SNAPSHOT_READY = Set.of("completed", "ready", "succeeded");
  private static final Set<String> SNAPSHOT_FAILED = Set.of("failed", "error", "deleted");
  /** Resources when the request names none (the SDK's defaults). */
  private static final double DEFAULT_CPUS = 1.0;
  private static final int DEFAULT_MEMORY_MB = 1024;
  static final long FIRST_PAUSE_MS = 2;
  static final long MAX_PAUSE_MS = 1_000;

  private final TensorlakeClient client;
  private final TensorlakeSandboxes sandboxes;
  private final TensorlakeEnv env;

  TensorlakeLifecycle(TensorlakeClient client, TensorlakeSandboxes sandboxes, TensorlakeEnv env) {
    this.snapshotIds = new SnapshotIds("tensorlake", SNAPSHOT, client.settings().apiKey());
    this.client = client;
    this.sandboxes = sandboxes;
    this.env = env;
  }

  private long createDeadline() {
    return System.nanoTime() + client.settings().createTimeout().toNanos();
  }

  @Override
  public Future<String> create(CreateSandbox request) {
    JsonObject body;
    try {
      body = createBody(request);
    } catch (RuntimeException e) {
      return Future.failedFuture(e);
    }
    long deadline = createDeadline();
    return client.call("create", true, HttpMethod.POST, client.api("/sandboxes"), null, body.toBuffer(),
            "application/json")
        .transform(ar -> {
          if (ar.failed()) {
            ProviderException e = ar.cause() instanceof ProviderException p ? p
                : client.transportError("create", ar.cause(), true);
            return e.error().outcome() == ProviderError.Outcome.UNKNOWN ? maybeCreating(request, e.error(), deadline)
                : Future.failedFuture(e);
          }
          TensorlakeClient.Resp r = ar.result();
          if (r.status() == 504) {
            return maybeCreating(request, client.httpError("create", 504, r.headers()).error(), deadline);
          }
          if (!r.ok()) {
            ProviderException e = client.httpError("create", r.status(), r.headers());
            if (r.status() == 404 && request.config().snapshotId() != null) {
              return Future.failedFuture(new ApiException(404, "snapshot not found"));
            }
            if (r.status() < 500) {
              return Future.failedFuture(e);
            }
            return cleanupByToken(request.createToken()).compose(cleanup -> Future.failedFuture(
                new ProviderException(e.error().withContext("cleanup_status", cleanup))));
          }
          JsonObject answer;
          try {
            answer = client.json("create", r, true);
          } catch (ProviderException e) {
            return maybeCreating(request, e.error(), deadline);
          }
          String id = TensorlakeSandboxes.id(answer);
          return id == null ? maybeCreating(request, client.badResponse("create", true).error(), deadline)
              : Future.succeededFuture(id);
        })
        .compose(id -> awaitRunning(id, deadline, 0).compose(v -> writeEnv(id, request)).map(id));
  }

  /**
   * The pause before the next readiness poll after {@code pause}: the first poll is made at once, then
   * {@value #FIRST_PAUSE_MS} ms doubling up to {@value #MAX_PAUSE_MS} ms, so a sandbox that is ready quickly
   * is seen quickly and a slow one costs one request a second.
   */
  static long nextPause(long pause) {
    return pause <= 0 ? FIRST_PAUSE_MS : Math.min(MAX_PAUSE_MS, pause * 2);
  }

  /** Keeps the create's env vars in the sandbox ({@link TensorlakeEnv}); a sandbox without them is deleted. */
  private Future<Void> writeEnv(String id, CreateSandbox request) {
    return sandboxes.daemon(id, "create").compose(d -> env.write(d, request.config().envVars()))
        .recover(t -> withCleanup(t instanceof ProviderException p ? p.error() : client.transportError("create", t,
            true).error(), id));
  }

  JsonObject createBody(CreateSandbox request) {
    SandboxConfig c = request.config();
    JsonObject resources = new JsonObject().put("cpus", c.cpu() != null ? c.cpu() : DEFAULT_CPUS)
        .put("memory_mb", c.memoryMb() != null ? c.memoryMb() : DEFAULT_MEMORY_MB);
    if (c.diskMb() != null) {
      resources.put("disk_mb", c.diskMb());
    }
    if (c.gpu() != null && !c.gpu().isBlank()) {
      throw new ApiException(422, "tensorlake sandboxes take no gpu");
    }
    JsonObject body = new JsonObject().put("resources", resources)
        .put("name", new TensorlakeMarks(request.sandboxId(), request.organizationId(), request.createToken()).name());
    if (c.image() != null && c.snapshotId() != null) {
      throw new ApiException(422, "give either image or snapshot_id, not both");
    }
    if (c.image() != null) {
      if (!IMAGE.matcher(c.image()).matches()) {
        throw new ApiException(422, "image is not a valid image reference");
      }
      body.put("image", c.image());
    } else if (c.snapshotId() != null) {
      body.put("snapshot_id", snapshotIds.resolve(c.snapshotId(), request.organizationId()));
    }
    if (c.timeoutSecs() != null && c.timeoutSecs() > 0) {
      body.put("timeout_secs", c.timeoutSecs());
    }
    if (c.allowInternet() != null) {
      body.put("network", new JsonObject().put("allow_internet_access", c.allowInternet()));
    }
    return body;
  }

  /**
   * A create that may have happened (a 504, a lost answer): the list is polled for the sandbox named with
   * this create's token until the create deadline. Found: it is the created sandbox. Not found: the create
   * failed with outcome {@code unknown} and {@code cleanup_status} {@code not_found}.
   */
  private Future<String> maybeCreating(CreateSandbox request, ProviderError error, long deadline) {
    return sandboxes.list("create", m -> m.createToken().equals(request.createToken())).transform(ar -> {
      if (ar.succeeded() && !ar.result().isEmpty()) {
        JsonObject found = ar.result().get(0);
        return Future.succeededFuture(TensorlakeSandboxes.id(found));
      }
      if (System.nanoTime() > deadline) {
        return Future.failedFuture(new ProviderException(new ProviderError(error.code(), BACKEND, "create", true,
            ProviderError.Outcome.UNKNOWN, error.context()).withContext("cleanup_status",
            ar.succeeded() ? "not_found" : "unknown")));
      }
      return client.delay(250).compose(v -> maybeCreating(request, error, deadline));
    });
  }

  /** Polls the new sandbox until it runs; on termination or the deadline it is deleted and the error reported. */
  private Future<Void> awaitRunning(String id, long deadline, long pause) {
    return client.call("create", false, HttpMethod.GET, sandboxes.url(id), null, null, null).transform(ar -> {
      String status = "unknown";
      if (ar.succeeded()) {
        TensorlakeClient.Resp r = ar.result();
        if (r.status() == 404) {
          return Future.failedFuture(new ProviderException(ProviderError.of(ErrorCode.CREATION_FAILED, BACKEND,
              "create", true, ProviderError.Outcome.FAILED).withContext("provider_resource_id", id)));
        }
        if (!r.ok() && r.status() != 429 && r.status() < 500) {
          return withCleanup(client.httpError("create", r.status(), r.headers()).error(), id);
        }
        if (r.ok()) {
          try {
            JsonObject s = client.json("create", r, false);
            status = s.getString("status", "unknown");
            if ("running".equals(status)) {
              sandboxes.remember(id, s);
              return Future.succeededFuture();
            }
          } catch (ProviderException | ClassCastException e) {
            // an unreadable poll changes nothing: poll again until the deadline
          }
        }
      }
      if (TensorlakeSandboxes.GONE.contains(status)) {
        return withCleanup(ProviderError.of(ErrorCode.CREATION_FAILED, BACKEND, "create", false,
            ProviderError.Outcome.FAILED), id);
      }
      if (System.nanoTime() > deadline) {
        return withCleanup(ProviderError.of(ErrorCode.TIMEOUT, BACKEND, "create", true,
            ProviderError.Outcome.FAILED), id);
      }
      long next = nextPause(pause);
      return client.delay(next).compose(v -> awaitRunning(id, deadline, next));
    });
  }

  private <T> Future<T> withCleanup(ProviderError error, String id) {
    return deleteQuietly(id).compose(cleanup -> Future.failedFuture(new ProviderException(new ProviderError(
        error.code(), error.backend(), error.op(), error.retryable(),
        "unknown".equals(cleanup) ? ProviderError.Outcome.UNKNOWN : error.outcome(), error.context())
        .withContext("cleanup_status", cleanup).withContext("provider_resource_id", id))));
  }

  /** Deletes whatever carries {@code token}: {@code deleted}, {@code not_found} or {@code unknown}. */
  Future<String> cleanupByToken(String token) {
    return sandboxes.list("create", m -> m.createToken().equals(token)).transform(ar -> {
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
    return deleteQuietly(TensorlakeSandboxes.id(found.get(i)))
        .compose(cleanup -> deleteAll(found, i + 1, all && !"unknown".equals(cleanup)));
  }

  private Future<String> deleteQuietly(String id) {
    return sandboxes.delete(id, "create").transform(ar -> Future.succeededFuture(ar.failed() ? "unknown"
        : ar.result() ? "not_found" : "deleted"));
  }

  /**
   * Attaches to a sandbox after a restart: {@code GET /sandboxes/{id}} must carry this sandbox's and its
   * organization's marks in its name ({@code not_found} otherwise: nothing is done to a sandbox that is not
   * ours), and not be terminated ({@code not_found}). A running one is attached as it is; a suspended one is
   * resumed once with {@code POST /sandboxes/{id}/resume}; until it runs it is polled as at create, within the
   * create timeout ({@code timeout}). Nothing is deleted on failure: the sandbox stays the gateway's.
   */
  @Override
  public Future<String> adopt(CreateSandbox request, String resourceId) {
    if (resourceId == null || resourceId.isBlank()) {
      return Future.failedFuture(client.notFound("adopt"));
    }
    long deadline = createDeadline();
    return client.expect("adopt", false, HttpMethod.GET, sandboxes.url(resourceId), null, null).compose(r -> {
      JsonObject s = client.json("adopt", r, false);
      TensorlakeMarks marks = TensorlakeMarks.parse(s.getValue("name") instanceof String n ? n : null);
      if (marks == null || !marks.sandboxId().equals(request.sandboxId())
          || !marks.organizationId().equals(request.organizationId())) {
        throw client.notFound("adopt");
      }
      return attach(resourceId, s, deadline, 0, false);
    }).map(resourceId);
  }

  private Future<Void> attach(String id, JsonObject s, long deadline, long pause, boolean resumed) {
    String status = s.getValue("status") instanceof String st ? st : "unknown";
    if ("running".equals(status)) {
      sandboxes.remember(id, s);
      return Future.succeededFuture();
    }
    if (TensorlakeSandboxes.GONE.contains(status)) {
      return Future.failedFuture(client.notFound("adopt"));
    }
    if (System.nanoTime() > deadline) {
      return Future.failedFuture(new ProviderException(ProviderError.of(ErrorCode.TIMEOUT, BACKEND, "adopt", true,
          ProviderError.Outcome.FAILED).withContext("provider_resource_id", id)));
    }
    boolean resume = !resumed && TensorlakeSandboxes.SUSPENDED.equals(status);
    Future<Void> sent = resume ? client.expect("adopt", true, HttpMethod.POST, sandboxes.url(id) + "/resume", null,
        null).mapEmpty() : Future.succeededFuture();
    long next = nextPause(pause);
    return sent.compose(v -> client.delay(next))
        .compose(v -> client.expect("adopt", false, HttpMethod.GET, sandboxes.url(id), null, null))
        .compose(r -> attach(id, client.json("adopt", r, false), deadline, next, resumed || resume));
  }

  /** Deletes the sandbox by resource id; without one, whatever carries the sandbox's id in its name. */
  @Override
  public Future<SandboxDestroyed> destroy(DestroySandbox request) {
    if (request.providerResourceId() != null) {
      env.forget(request.providerResourceId());
      return sandboxes.delete(request.providerResourceId(), "destroy").map(SandboxDestroyed::new);
    }
    return sandboxes.list("destroy", m -> m.sandboxId().equals(request.sandboxId())).compose(found -> {
      Future<Boolean> gone = Future.succeededFuture(true);
      for (JsonObject s : found) {
        gone = gone.compose(g -> sandboxes.delete(TensorlakeSandboxes.id(s), "destroy").map(d -> g & d));
      }
      return gone.map(SandboxDestroyed::new);
    });
  }

  /**
   * {@code POST /sandboxes/{id}/snapshot {snapshot_type: filesystem}}, then {@code GET /snapshots/{id}}
   * polled until the snapshot is ready, within the create timeout. The id handed out (with the
   * organization, {@link SnapshotIds}) is what create takes as {@code snapshot_id}.
   */
  @Override
  public Future<String> snapshot(SnapshotSandbox request) {
    String id = request.providerResourceId();
    if (id == null || id.isBlank()) {
      return Future.failedFuture(client.notFound("snapshot"));
    }
    return client.expect("snapshot", true, HttpMethod.POST, sandboxes.url(id) + "/snapshot", null,
        new JsonObject().put("snapshot_type", "filesystem")).compose(r -> {
          String snapshotId = client.json("snapshot", r, true).getString("snapshot_id");
          if (snapshotId == null || snapshotId.isBlank()) {
            throw client.badResponse("snapshot", true);
          }
          return awaitSnapshot(snapshotId, createDeadline(), 100).map(snapshotIds.handOut(request.organizationId(), snapshotId));
        });
  }

  private Future<Void> awaitSnapshot(String snapshotId, long deadline, long pause) {
    return client.call("snapshot", false, HttpMethod.GET, client.api("/snapshots/" + TensorlakeClient.encode(
        snapshotId)), null, null, null).transform(ar -> {
          if (ar.succeeded()) {
            TensorlakeClient.Resp r = ar.result();
            if (!r.ok() && r.status() != 429 && r.status() < 500) {
              return Future.failedFuture(client.httpError("snapshot", r.status(), r.headers()));
            }
            if (r.ok()) {
              String status = client.json("snapshot", r, false).getString("status", "unknown");
              if (SNAPSHOT_READY.contains(status)) {
                return Future.succeededFuture();
              }
              if (SNAPSHOT_FAILED.contains(status)) {
                return Future.failedFuture(new ProviderException(ProviderError.of(ErrorCode.COMMAND_FAILED, BACKEND,
                    "snapshot", false, ProviderError.Outcome.FAILED)));
              }
            }
          }
          if (System.nanoTime() > deadline) {
            return Future.failedFuture(new ProviderException(ProviderError.of(ErrorCode.TIMEOUT, BACKEND,
                "snapshot", true, ProviderError.Outcome.UNKNOWN)));
          }
          return client.delay(pause).compose(v -> awaitSnapshot(snapshotId, deadline, Math.min(1_000, pause * 3 / 2)));
        });
  }
}
