package ai.bespokelabs.sandbox.adapters.codecapsules;

import ai.bespokelabs.sandbox.adapters.ProviderMarks;
import static ai.bespokelabs.sandbox.adapters.codecapsules.CodeCapsulesClient.json;

import ai.bespokelabs.sandbox.adapters.spi.Inventory;
import ai.bespokelabs.sandbox.adapters.spi.Lifecycle;
import ai.bespokelabs.sandbox.core.bus.Messages.CreateSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.DestroySandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.Resource;
import ai.bespokelabs.sandbox.core.bus.Messages.SandboxDestroyed;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError;
import ai.bespokelabs.sandbox.core.error.ProviderError.Outcome;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import ai.bespokelabs.sandbox.core.model.SandboxConfig;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Creating and deleting CodeCapsules sandboxes, reconciliation and the health check. CodeCapsules has no list
 * operation, so reconciliation looks up the sandboxes the gateway knows ({@link #list(List)}): vanished ones
 * are found, orphans are not; a create whose answer was lost cannot be found by its create token either, so
 * it is reported with outcome unknown and {@code cleanup_status unknown} (the sandbox, if any, ends at its
 * ttl).
 */
final class CodeCapsulesLifecycle implements Lifecycle, Inventory {
  private static final Logger LOG = LoggerFactory.getLogger(CodeCapsulesLifecycle.class);
  /** Metadata keys stamped on every sandbox. */
  static final String META_SANDBOX = ProviderMarks.SANDBOX_ID;
  static final String META_ORG = ProviderMarks.ORGANIZATION_ID;
  static final String META_TOKEN = ProviderMarks.CREATE_TOKEN;
  /** How many sandboxes reconciliation looks up at once. */
  static final int LOOKUPS = 4;
  /** How often a sandbox still starting is looked at again. */
  static final long POLL_MS = 250;

  private final CodeCapsulesClient client;
  private final CodeCapsulesEnv envs;

  CodeCapsulesLifecycle(CodeCapsulesClient client, CodeCapsulesEnv envs) {
    this.client = client;
    this.envs = envs;
  }

  /**
   * {@code POST /sandboxes}; settings outside the documented limits, or with no CodeCapsules equivalent, are
   * 422 before any call. A sandbox still starting is polled until it runs, within the request timeout; its env
   * vars (the create call takes none) are then written into it and passed to each execution.
   */
  @Override
  public Future<String> create(CreateSandbox request) {
    JsonObject body;
    try {
      body = CodeCapsulesWire.createBody(flavor(request.config()), memory(request.config()), cpu(request.config()),
          ttlMinutes(request.config()), marks(request));
    } catch (ApiException e) {
      return Future.failedFuture(e);
    }
    return client.call(HttpMethod.POST, CodeCapsulesWire.SANDBOXES, body, "create", 201, 200)
        .recover(t -> Future.failedFuture(lost(request, t)))
        .compose(r -> {
          JsonObject created = json(r, "create");
          String id = CodeCapsulesWire.sandboxId(created);
          if (id == null) {
            return Future.failedFuture(lost(request, CodeCapsulesClient.of(ErrorCode.CREATION_FAILED, "create", false,
                Outcome.UNKNOWN)));
          }
          return running(id, CodeCapsulesWire.status(created), System.nanoTime()
              + client.settings().requestTimeout().toNanos()).compose(ok -> writeEnv(id, request)).map(id);
        });
  }

  /**
   * Keeps the create's env vars in the sandbox ({@link CodeCapsulesEnv}); a sandbox without them is deleted.
   * Deleted, nothing of the create remains: its outcome is {@code failed}, and a transient failure (no answer,
   * 429, 5xx) may be retried.
   */
  private Future<Void> writeEnv(String id, CreateSandbox request) {
    SandboxConfig c = request.config();
    return envs.write(id, c == null ? null : c.envVars()).recover(t -> delete(id, "create").transform(ar -> {
      ProviderError e = t instanceof ProviderException p ? p.error()
          : ProviderError.of(ErrorCode.CREATION_FAILED, CodeCapsulesClient.BACKEND, "create", false, Outcome.UNKNOWN);
      ProviderError out = ar.succeeded()
          ? new ProviderError(e.code(), e.backend(), e.op(), transientFailure(e), Outcome.FAILED, e.context())
              .withContext("cleanup_status", "deleted")
          : e.withContext("cleanup_status", "unknown");
      return Future.failedFuture(new ProviderException(out, t));
    }));
  }

  /**
   * A failure that may pass: no answer or a timeout, or a 429 or 5xx answer (its own {@code retryable} is forced
   * off for a create whose outcome was unknown, so it is read from the code and status).
   */
  private static boolean transientFailure(ProviderError e) {
    return e.code() == ErrorCode.TIMEOUT || e.code() == ErrorCode.CONNECTION
        || e.context().get("provider_status") instanceof Long status && (status == 429 || status >= 500);
  }

  private static Map<String, String> marks(CreateSandbox request) {
    Map<String, String> m = new LinkedHashMap<>();
    m.put(META_SANDBOX, request.sandboxId());
    m.put(META_ORG, request.organizationId());
    m.put(META_TOKEN, request.createToken());
    return m;
  }

  private String flavor(SandboxConfig c) {
    if (c == null) {
      return client.settings().flavor();
    }
    if (c.gpu() != null) {
      throw ApiException.invalid("gpu is not supported by the codecapsules backend");
    }
    if (c.snapshotId() != null) {
      throw ApiException.invalid("snapshot_id is not supported by the codecapsules backend");
    }
    if (c.workdir() != null || c.gitRepo() != null) {
      throw ApiException.invalid("workdir and git_repo are not supported by the codecapsules backend");
    }
    if (Boolean.FALSE.equals(c.allowInternet())) {
      throw ApiException.invalid("allow_internet false is not supported by the codecapsules backend");
    }
    String flavor = c.template() != null ? c.template() : c.image() != null ? c.image() : client.settings().flavor();
    if (!CodeCapsulesWire.FLAVORS.contains(flavor)) {
      throw ApiException.invalid("codecapsules flavor (template or image) must be one of "
          + new java.util.TreeSet<>(CodeCapsulesWire.FLAVORS));
    }
    return flavor;
  }

  private static Integer memory(SandboxConfig c) {
    Integer mb = c == null ? null : c.memoryMb();
    if (mb != null && (mb < 1 || mb > CodeCapsulesWire.MAX_MEMORY_MB)) {
      throw ApiException.invalid("memory_mb must be between 1 and " + CodeCapsulesWire.MAX_MEMORY_MB
          + " on the codecapsules backend");
    }
    return mb;
  }

  private static Integer cpu(SandboxConfig c) {
    Double cpu = c == null ? null : c.cpu();
    if (cpu == null) {
      return null;
    }
    if (cpu != Math.rint(cpu) || cpu < 1 || cpu > CodeCapsulesWire.MAX_CPU) {
      throw ApiException.invalid("cpu must be a whole number between 1 and " + CodeCapsulesWire.MAX_CPU
          + " on the codecapsules backend");
    }
    return cpu.intValue();
  }

  /** The ttl in minutes: {@code timeout_secs} rounded up, else the configured default. */
  private int ttlMinutes(SandboxConfig c) {
    Integer secs = c == null ? null : c.timeoutSecs();
    if (secs == null) {
      return client.settings().ttlMinutes();
    }
    long minutes = Math.max(1, (secs + 59L) / 60);
    if (minutes > CodeCapsulesWire.MAX_TTL_MINUTES) {
      throw ApiException.invalid("timeout_secs must be at most " + CodeCapsulesWire.MAX_TTL_MINUTES * 60
          + " on the codecapsules backend");
    }
    return (int) minutes;
  }

  /** Waits until the sandbox runs; one that errs, or is not running by {@code deadline}, is deleted and reported. */
  private Future<Void> running(String id, String status, long deadline) {
    if ("running".equals(status)) {
      return Future.succeededFuture();
    }
    if (status == null || CodeCapsulesWire.ENDED.contains(status) || System.nanoTime() > deadline) {
      ProviderError failed = ProviderError.of(ErrorCode.CREATION_FAILED, CodeCapsulesClient.BACKEND, "create", false,
          Outcome.FAILED);
      return delete(id, "create").transform(ar -> Future.failedFuture(new ProviderException(
          failed.withContext("cleanup_status", ar.succeeded() ? "deleted" : "unknown"))));
    }
    Promise<Void> waited = Promise.promise();
    client.vertx().setTimer(POLL_MS, t -> waited.complete());
    return waited.future()
        .compose(v -> client.call(HttpMethod.GET, CodeCapsulesWire.sandbox(id), null, "create", 200))
        .compose(r -> running(id, CodeCapsulesWire.status(json(r, "create")), deadline));
  }

  /** A create whose outcome is unknown cannot be cleaned up by its token (no list): said so, logged once. */
  private ProviderException lost(CreateSandbox request, Throwable t) {
    if (t instanceof ProviderException p && p.error().outcome() == Outcome.UNKNOWN) {
      LOG.warn("codecapsules create of sandbox {} had no usable answer ({}); it cannot be looked up by create token",
          request.sandboxId(), p.error().code().wire());
      return new ProviderException(p.error().withContext("cleanup_status", "unknown"), t.getCause());
    }
    return t instanceof ProviderException p ? p : CodeCapsulesClient.transport(t, "create");
  }

  /** {@code DELETE /sandboxes/{id}}; a sandbox already gone is fine. Without a resource id nothing can be found. */
  @Override
  public Future<SandboxDestroyed> destroy(DestroySandbox request) {
    String id = request.providerResourceId();
    if (id == null || id.isBlank()) {
      LOG.warn("codecapsules sandbox {} has no resource id; without a list operation nothing can be deleted",
          request.sandboxId());
      return Future.succeededFuture(new SandboxDestroyed(true));
    }
    return delete(id, "destroy").map(deleted -> new SandboxDestroyed(!deleted));
  }

  /** True when deleted, false when it was already gone. */
  private Future<Boolean> delete(String id, String op) {
    return client.call(HttpMethod.DELETE, CodeCapsulesWire.sandbox(id), null, op, 204, 200, 404).map(r -> {
      envs.forget(id);
      return r.statusCode() != 404;
    });
  }

  /** Without the gateway's resource ids nothing can be found: CodeCapsules cannot list sandboxes. */
  @Override
  public Future<List<Resource>> list() {
    return Future.failedFuture(CodeCapsulesClient.of(ErrorCode.FEATURE_NOT_SUPPORTED, "list", false, Outcome.FAILED));
  }

  /**
   * CodeCapsules cannot list sandboxes, so the gateway's live ones ({@code known}) are looked up one by one
   * ({@code GET /sandboxes/{id}}, {@link #LOOKUPS} at a time): each found is listed with its status, one
   * answered 404 is left out (reconciliation then finds it missing). Any other failure fails the whole
   * listing (a partial outage that changes nothing). Orphans, sandboxes the gateway does not know, stay unseen.
   */
  @Override
  public Future<List<Resource>> list(List<String> known) {
    List<Resource> found = new ArrayList<>(); // the lookups all complete on this context
    Iterator<String> next = List.copyOf(new LinkedHashSet<>(known)).iterator();
    List<Future<Void>> workers = new ArrayList<>();
    for (int i = 0; i < LOOKUPS; i++) {
      workers.add(lookUp(next, found));
    }
    return Future.all(workers).map(v -> List.copyOf(found));
  }

  /** Looks up the ids {@code next} still holds, one after the other. */
  private Future<Void> lookUp(Iterator<String> next, List<Resource> found) {
    if (!next.hasNext()) {
      return Future.succeededFuture();
    }
    String id = next.next();
    return client.call(HttpMethod.GET, CodeCapsulesWire.sandbox(id), null, "list", 200, 404).compose(r -> {
      if (r.statusCode() == 200) {
        JsonObject s = json(r, "list");
        if (!(CodeCapsulesWire.metadata(s).getValue(META_SANDBOX) instanceof String sandboxId)) {
          // without our mark the sandbox cannot be told apart from an orphan: nothing is judged
          return Future.failedFuture(CodeCapsulesClient.of(ErrorCode.COMMAND_FAILED, "list", false, Outcome.FAILED));
        }
        found.add(new Resource(id, sandboxId, status(CodeCapsulesWire.status(s)), null));
      }
      return lookUp(next, found);
    });
  }

  /** CodeCapsules' status as reconciliation's: starting, running, stopping, stopped, error. */
  static String status(String codecapsules) {
    return switch (codecapsules == null ? "" : codecapsules) {
      case "starting" -> "provisioning";
      case "running" -> "running";
      case "stopping" -> "stopping";
      case "stopped" -> "terminated";
      default -> "failed";
    };
  }

  /** One authenticated lookup of a sandbox that cannot exist: 404 means the key and the API work. */
  @Override
  public Future<Void> checkHealth() {
    return client.call(HttpMethod.GET, CodeCapsulesWire.sandbox(CodeCapsulesWire.HEALTH_PROBE_ID), null, "health", 404,
        200)
        .mapEmpty();
  }
}
