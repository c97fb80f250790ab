package ai.bespokelabs.sandbox.adapters.daytona;

import static ai.bespokelabs.sandbox.adapters.daytona.DaytonaProvider.BACKEND;
import static ai.bespokelabs.sandbox.adapters.daytona.DaytonaProvider.LABEL_CREATE_TOKEN;
import static ai.bespokelabs.sandbox.adapters.daytona.DaytonaProvider.LABEL_MANAGED;
import static ai.bespokelabs.sandbox.adapters.daytona.DaytonaProvider.LABEL_ORGANIZATION;
import static ai.bespokelabs.sandbox.adapters.daytona.DaytonaProvider.LABEL_SANDBOX;

import ai.bespokelabs.sandbox.adapters.spi.Lifecycle;
import ai.bespokelabs.sandbox.core.bus.Messages.CreateSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.DestroySandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.SandboxDestroyed;
import ai.bespokelabs.sandbox.core.bus.Messages.SetTimeout;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import ai.bespokelabs.sandbox.core.model.SandboxConfig;
import io.vertx.core.Future;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * Creating, destroying, adopting and moving the lifetime of Daytona sandboxes.
 *
 * <p>create: {@code POST /sandbox} from a snapshot, or from an image through a one-line Dockerfile
 * ({@code FROM <image>}, as the SDKs do), with cpu/memory/disk rounded up to whole cores and GB, our labels
 * (organization, sandbox id, create token), the target region, and {@code autoStopInterval} plus
 * {@code autoDeleteInterval=0} only when a timeout is given; then polls until {@code started}. A create whose
 * answer is lost is cleaned up by a label search on its create token. Destroy works from the provider
 * resource id alone, so it survives a gateway restart.
 */
final class DaytonaLifecycle implements Lifecycle {
  private static final Pattern IMAGE = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._/:@-]{0,254}");
  private static final Pattern GPU_COUNT = Pattern.compile("[1-9][0-9]?");
  private static final Set<String> GPU_TYPES = Set.of("H100", "RTX-PRO-6000");

  private final DaytonaClient client;
  private final DaytonaSettings settings;
  private final DaytonaSandboxes sandboxes;

  DaytonaLifecycle(DaytonaClient client, DaytonaSettings settings, DaytonaSandboxes sandboxes) {
    this.client = client;
    this.settings = settings;
    this.sandboxes = sandboxes;
  }

  // ---------------------------------------------------------------------------------------------- create

  @Override
  public Future<String> create(CreateSandbox request) {
    JsonObject body;
    try {
      body = createBody(request);
    } catch (RuntimeException e) {
      return Future.failedFuture(e);
    }
    return client.call("create", true, HttpMethod.POST, settings.apiUrl() + "/sandbox", body.toBuffer(),
            "application/json", client.requestTimeoutMs())
        .recover(t -> t instanceof ProviderException e ? lostCreate(request, e) : Future.failedFuture(t))
        .compose(r -> created(request, r))
        .compose(id -> awaitStarted(id, System.nanoTime() + settings.createTimeout().toNanos(), 100).map(id));
  }

  /** A create whose answer was lost: what carries its token is removed when the outcome is unknown. */
  private <T> Future<T> lostCreate(CreateSandbox request, ProviderException e) {
    return e.error().outcome() == ProviderError.Outcome.UNKNOWN ? ambiguous(e.error(), request, e)
        : Future.failedFuture(e);
  }

  /** The new sandbox's id from a successful create answer, or null. */
  private String createdId(DaytonaClient.Resp r) {
    try {
      String id = client.json("create", r, true).getString("id");
      return id == null || id.isBlank() ? null : id;
    } catch (ProviderException | ClassCastException e) {
      return null;
    }
  }

  /** The answer to the create request: the new sandbox's id, else the contract error (cleaned up). */
  private Future<String> created(CreateSandbox request, DaytonaClient.Resp r) {
    if (!r.ok()) {
      ProviderException e = client.httpError("create", r.status(), r.headers());
      if (r.status() < 500) {
        return Future.failedFuture(e);
      }
      // a failing provider may still have created it: remove what carries this create's token
      return cleanupByToken(request.createToken(), 1).compose(cleanup -> Future.failedFuture(cleanup.equals("deleted")
          ? new ProviderException(e.error().withContext("cleanup_status", cleanup)) : e));
    }
    String id = createdId(r);
    return id != null ? Future.succeededFuture(id) : ambiguous(client.badResponse("create", true).error(), request, null);
  }

  JsonObject createBody(CreateSandbox request) {
    SandboxConfig c = request.config();
    JsonObject labels = new JsonObject().put(LABEL_MANAGED, "true").put(LABEL_SANDBOX, request.sandboxId())
        .put(LABEL_ORGANIZATION, request.organizationId()).put(LABEL_CREATE_TOKEN, request.createToken());
    JsonObject body = new JsonObject().put("labels", labels);
    if (c.envVars() != null && !c.envVars().isEmpty()) {
      body.put("env", new JsonObject(Map.copyOf(c.envVars())));
    }
    if (c.cpu() != null) {
      body.put("cpu", (int) Math.max(1, Math.ceil(c.cpu())));
    }
    if (c.memoryMb() != null) {
      body.put("memory", Math.max(1, (c.memoryMb() + 1023) / 1024));
    }
    if (c.diskMb() != null) {
      body.put("disk", Math.max(1, (c.diskMb() + 1023) / 1024));
    }
    if (c.gpu() != null && !c.gpu().isBlank()) {
      String gpu = c.gpu().trim();
      if (GPU_COUNT.matcher(gpu).matches()) {
        body.put("gpu", Integer.parseInt(gpu));
      } else if (GPU_TYPES.contains(gpu.toUpperCase(Locale.ROOT))) {
        body.put("gpu", 1).put("gpuType", new JsonArray().add(gpu.toUpperCase(Locale.ROOT)));
      } else {
        throw new ApiException(422, "daytona gpu must be a count or one of H100, RTX-PRO-6000");
      }
    }
    if (settings.target() != null) {
      body.put("target", settings.target());
    }
    if (c.image() != null && c.snapshotId() != null) {
      throw new ApiException(422, "give either image or snapshot_id, not both");
    }
    if (c.image() != null) {
      if (!IMAGE.matcher(c.image()).matches()) {
        throw new ApiException(422, "image is not a valid image reference");
      }
      body.put("buildInfo", new JsonObject().put("dockerfileContent", "FROM " + c.image() + "\n"));
    } else if (c.snapshotId() != null) {
      body.put("snapshot", c.snapshotId());
    } else if (settings.snapshot() != null) {
      body.put("snapshot", settings.snapshot());
    }
    if (Boolean.FALSE.equals(c.allowInternet())) {
      body.put("networkBlockAll", true);
    }
    if (c.timeoutSecs() != null && c.timeoutSecs() > 0) {
      // Daytona counts whole idle minutes; the gateway's own supervisor enforces the exact lifetime and this
      // is the backstop should the gateway be gone: stop when idle that long, then delete at once
      body.put("autoStopInterval", autoStopMinutes(c.timeoutSecs()));
      body.put("autoDeleteInterval", 0);
    }
    return body;
  }

  /** A lifetime as Daytona's auto-stop interval: whole minutes rounded up, never 0 (which would disable it). */
  static int autoStopMinutes(long timeoutSecs) {
    return (int) Math.min(Integer.MAX_VALUE, Math.max(1, (timeoutSecs + 59) / 60));
  }

  /** Polls the new sandbox until it started; on failure or deadline it is deleted and the error reported. */
  private Future<Void> awaitStarted(String id, long deadline, long pause) {
    return client.call("create", false, HttpMethod.GET, sandboxes.url(id), null, null, client.requestTimeoutMs())
        .transform(ar -> {
          String state = "unknown";
          if (ar.succeeded()) {
            DaytonaClient.Resp r = ar.result();
            if (r.status() == 404) {
              return Future.failedFuture(new ProviderException(ProviderError.of(ErrorCode.CREATION_FAILED, BACKEND,
                  "create", true, ProviderError.Outcome.FAILED).withContext("provider_resource_id", id)));
            }
            if (!r.ok() && r.status() != 429 && r.status() < 500) {
              return withCleanup(client.httpError("create", r.status(), r.headers()).error(), id);
            }
            if (r.ok()) {
              try {
                state = client.json("create", r, false).getString("state", "unknown");
              } catch (ProviderException | ClassCastException e) {
                // an unreadable poll changes nothing: poll again until the deadline
              }
            }
          }
          // a lost poll changes nothing either
          if ("started".equals(state)) {
            return Future.succeededFuture();
          }
          if (DaytonaSandboxes.FAILED.contains(state) || DaytonaSandboxes.GONE.contains(state)) {
            return withCleanup(ProviderError.of(ErrorCode.CREATION_FAILED, BACKEND, "create", false,
                ProviderError.Outcome.FAILED), id);
          }
          if (System.nanoTime() > deadline) {
            return withCleanup(ProviderError.of(ErrorCode.TIMEOUT, BACKEND, "create", true,
                ProviderError.Outcome.FAILED), id);
          }
          return client.delay(pause).compose(v -> awaitStarted(id, deadline, Math.min(1_000, pause * 3 / 2)));
        });
  }

  /** Fails with {@code error} after deleting the sandbox that could not be used; unknown if it may remain. */
  private <T> Future<T> withCleanup(ProviderError error, String id) {
    return deleteQuietly(id).compose(cleanup -> Future.failedFuture(new ProviderException(new ProviderError(
        error.code(), error.backend(), error.op(), error.retryable(),
        "unknown".equals(cleanup) ? ProviderError.Outcome.UNKNOWN : error.outcome(), error.context())
        .withContext("cleanup_status", cleanup).withContext("provider_resource_id", id))));
  }

  /**
   * Fails for a create that may have happened without our knowing its id: outcome {@code unknown}, and
   * whatever carries its create token is deleted, reported as {@code cleanup_status}.
   */
  private <T> Future<T> ambiguous(ProviderError error, CreateSandbox request, Throwable cause) {
    return cleanupByToken(request.createToken(), 3).compose(cleanup -> Future.failedFuture(new ProviderException(
        new ProviderError(error.code(), BACKEND, "create", false, ProviderError.Outcome.UNKNOWN, error.context())
            .withContext("cleanup_status", cleanup), cause)));
  }

  /**
   * Deletes every sandbox labelled with {@code token}: {@code deleted} when one or more were,
   * {@code not_found} when none appeared in {@code attempts} searches (the list is eventually consistent),
   * {@code unknown} when a search or deletion failed.
   */
  Future<String> cleanupByToken(String token, int attempts) {
    return sandboxes.listByLabels(new JsonObject().put(LABEL_CREATE_TOKEN, token), "create").transform(ar -> {
      if (ar.failed()) {
        return Future.succeededFuture("unknown");
      }
      if (!ar.result().isEmpty()) {
        return deleteAll(ar.result(), 0, true);
      }
      if (attempts > 1) {
        return client.delay(250).compose(v -> cleanupByToken(token, attempts - 1));
      }
      return Future.succeededFuture("not_found");
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
    return sandboxes.delete(id, "create").transform(ar -> Future.succeededFuture(ar.failed() ? "unknown"
        : ar.result() ? "not_found" : "deleted"));
  }

  // ---------------------------------------------------------------------------------------------- destroy

  /**
   * Deletes the sandbox by resource id; without one (a create that never answered), whatever carries the
   * sandbox's id label.
   */
  @Override
  public Future<SandboxDestroyed> destroy(DestroySandbox request) {
    if (request.providerResourceId() != null) {
      return sandboxes.delete(request.providerResourceId(), "destroy").map(SandboxDestroyed::new);
    }
    return sandboxes.listByLabels(new JsonObject().put(LABEL_SANDBOX, request.sandboxId()), "destroy")
        .compose(found -> {
          Future<Boolean> gone = Future.succeededFuture(true);
          for (JsonObject s : found) {
            gone = gone.compose(g -> sandboxes.delete(s.getString("id"), "destroy").map(d -> g & d));
          }
          return gone.map(SandboxDestroyed::new);
        });
  }

  /**
   * Moves Daytona's backstop along with the gateway's new deadline, as create sets it: the auto-stop interval
   * becomes the new lifetime in whole minutes ({@code POST /sandbox/{id}/autostop/{minutes}}), and a sandbox
   * created without a timeout, whose answer shows it is not deleted on stop, gets
   * {@code POST /sandbox/{id}/autodelete/0} as well. Any failure is the provider error of op {@code timeout};
   * the gateway keeps its stored deadline, which its supervisor enforces regardless.
   */
  @Override
  public Future<Void> extendTimeout(SetTimeout request) {
    String id = request.providerResourceId();
    if (id == null || id.isBlank()) {
      return Future.failedFuture(DaytonaSandboxes.notFound("timeout"));
    }
    return client.expect("timeout", true, HttpMethod.POST,
        sandboxes.url(id) + "/autostop/" + autoStopMinutes(request.timeoutSecs()), null).compose(r -> {
          Integer autoDelete;
          try {
            autoDelete = client.json("timeout", r, true).getInteger("autoDeleteInterval");
          } catch (ProviderException | ClassCastException e) {
            autoDelete = null;
          }
          if (autoDelete == null || autoDelete != 0) {
            return client.expect("timeout", true, HttpMethod.POST, sandboxes.url(id) + "/autodelete/0", null)
                .mapEmpty();
          }
          return Future.succeededFuture();
        });
  }

  // ------------------------------------------------------------------------------------------------ adopt

  /**
   * Checks with {@code GET /sandbox/{id}} that the sandbox exists and carries this sandbox's id and
   * organization labels ({@code not_found} otherwise, and nothing is started for a sandbox that is not
   * ours), then makes sure it runs: one Daytona stopped or archived (its idle auto-stop) is started again
   * with {@code POST /sandbox/{id}/start}, as an execution would, and awaited until {@code started} within
   * the create timeout. A sandbox being destroyed is {@code not_found}, one in error {@code command_failed}.
   */
  @Override
  public Future<String> adopt(CreateSandbox request, String resourceId) {
    if (resourceId == null || resourceId.isBlank()) {
      return Future.failedFuture(DaytonaSandboxes.notFound("adopt"));
    }
    return client.expect("adopt", false, HttpMethod.GET, sandboxes.url(resourceId), null).compose(r -> {
      JsonObject sbx = client.json("adopt", r, false);
      JsonObject labels = sbx.getValue("labels") instanceof JsonObject l ? l : new JsonObject();
      if (!request.sandboxId().equals(labels.getValue(LABEL_SANDBOX))
          || !request.organizationId().equals(labels.getValue(LABEL_ORGANIZATION))) {
        throw DaytonaSandboxes.notFound("adopt");
      }
      if ("started".equals(sbx.getValue("state"))) {
        return Future.succeededFuture(resourceId);
      }
      return sandboxes.toolbox(resourceId, "adopt").map(resourceId);
    });
  }
}
