package ai.bespokelabs.sandbox.adapters.ray;

import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import io.vertx.core.Future;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The sandboxes on the cluster. Ray has no object for a sandbox, so each has an <em>anchor</em>: one job
 * submitted at create ({@link #anchorId}, entrypoint {@code true}, no entrypoint resources, so it ends at
 * once and holds nothing) whose record carries what the sandbox's jobs need: the organization, the create
 * token and the resources in its metadata, the env values in its {@code runtime_env}. Ray keeps a job's
 * record until it is deleted, so any node (after a restart, or another node of the gateway) reads the anchor
 * back ({@code GET /api/jobs/{anchor}}) and caches it; destroy deletes it with the sandbox's other jobs, and
 * reconciliation lists it, so a sandbox the gateway no longer has is found even when none of its jobs run.
 */
final class RaySandboxes {
  static final String META_MANAGED = "bespokelabs.ai/managed";
  static final String META_SANDBOX = "bespokelabs.ai/sandbox-id";
  static final String META_ORGANIZATION = "bespokelabs.ai/organization-id";
  static final String META_CREATE_TOKEN = "bespokelabs.ai/create-token";
  static final String META_EXECUTION = "bespokelabs.ai/execution-id";
  /** On the anchor only: its role, and the sandbox's entrypoint resources (metadata values are strings). */
  static final String META_ROLE = "bespokelabs.ai/role";
  static final String ROLE_SANDBOX = "sandbox";
  static final String META_CPUS = "bespokelabs.ai/cpus";
  static final String META_MEMORY = "bespokelabs.ai/memory-bytes";
  static final String META_GPUS = "bespokelabs.ai/gpus";
  static final String ANCHOR_ENTRYPOINT = "true";

  /** What a sandbox gives each of its jobs. */
  record Sandbox(String organizationId, String createToken, Map<String, String> env, Double cpus, Long memoryBytes,
      Integer gpus) {}

  private final RayClient client;
  private final RayJobs jobs;
  private final Map<String, Sandbox> cache = new ConcurrentHashMap<>();

  RaySandboxes(RayClient client, RayJobs jobs) {
    this.client = client;
    this.jobs = jobs;
  }

  /** The anchor's submission id: one per sandbox, so a lost submit is found again by it. */
  static String anchorId(String sandboxId) {
    return "bsk-sandbox-" + sandboxId.replaceAll("[^A-Za-z0-9_-]", "_");
  }

  /** The anchor's submit request. */
  static JsonObject anchor(String sandboxId, Sandbox s) {
    JsonObject metadata = new JsonObject().put(META_MANAGED, "true").put(META_SANDBOX, sandboxId)
        .put(META_ROLE, ROLE_SANDBOX);
    putIf(metadata, META_ORGANIZATION, s.organizationId());
    putIf(metadata, META_CREATE_TOKEN, s.createToken());
    putIf(metadata, META_CPUS, s.cpus());
    putIf(metadata, META_MEMORY, s.memoryBytes());
    putIf(metadata, META_GPUS, s.gpus());
    return new JsonObject().put("entrypoint", ANCHOR_ENTRYPOINT).put("submission_id", anchorId(sandboxId))
        .put("runtime_env", new JsonObject().put("env_vars", new JsonObject(new TreeMap<String, Object>(s.env()))))
        .put("metadata", metadata);
  }

  private static void putIf(JsonObject o, String key, Object value) {
    if (value != null) {
      o.put(key, String.valueOf(value));
    }
  }

  /**
   * Submits the sandbox's anchor. A submit whose answer was lost is resolved by looking the anchor up by its
   * submission id, never by a second submit: there, it is the sandbox (created); not there, the create failed
   * ({@code cleanup_status not_found}); the lookup failing too leaves it {@code unknown} (an anchor that was
   * created after all is an orphan for reconciliation).
   */
  Future<Void> create(String sandboxId, Sandbox s) {
    String anchorId = anchorId(sandboxId);
    return client.expect("create", true, HttpMethod.POST, RayJobs.JOBS, anchor(sandboxId, s))
        .<Void>mapEmpty()
        .recover(t -> t instanceof ProviderException p && p.error().outcome() == ProviderError.Outcome.UNKNOWN
            ? jobs.details(anchorId, "create").transform(ar -> {
              if (ar.succeeded() && ar.result() != null && sandboxId.equals(sandboxOf(ar.result()))) {
                return Future.<Void>succeededFuture();
              }
              String cleanup = ar.failed() ? "unknown" : "not_found";
              return Future.failedFuture(new ProviderException(p.error().withContext("cleanup_status", cleanup), t));
            })
            : Future.failedFuture(t))
        .onSuccess(v -> cache.put(sandboxId, s));
  }

  /** The sandbox: cached, or read back from its anchor; {@code not_found} when it has none. */
  Future<Sandbox> get(String sandboxId, String op) {
    Sandbox known = cache.get(sandboxId);
    if (known != null) {
      return Future.succeededFuture(known);
    }
    return jobs.details(anchorId(sandboxId), op).map(j -> {
      if (j == null || !sandboxId.equals(sandboxOf(j)) || !isAnchor(j)) {
        throw new ProviderException(ProviderError.of(ErrorCode.NOT_FOUND, RayProvider.BACKEND, op, false,
            ProviderError.Outcome.FAILED));
      }
      Sandbox s = parse(j);
      cache.put(sandboxId, s);
      return s;
    });
  }

  /** The sandbox an anchor's record describes. */
  static Sandbox parse(JsonObject anchor) {
    JsonObject meta = anchor.getJsonObject("metadata");
    JsonObject runtimeEnv = anchor.getValue("runtime_env") instanceof JsonObject r ? r : new JsonObject();
    Map<String, String> env = new HashMap<>();
    if (runtimeEnv.getValue("env_vars") instanceof JsonObject vars) {
      vars.forEach(e -> {
        if (e.getValue() instanceof String v) {
          env.put(e.getKey(), v);
        }
      });
    }
    Long memory = number(meta, META_MEMORY, Long::valueOf);
    Integer gpus = number(meta, META_GPUS, Integer::valueOf);
    return new Sandbox(string(meta, META_ORGANIZATION), string(meta, META_CREATE_TOKEN), Map.copyOf(env),
        number(meta, META_CPUS, Double::valueOf), memory, gpus);
  }

  private static String string(JsonObject meta, String key) {
    return meta.getValue(key) instanceof String s ? s : null;
  }

  private static <T> T number(JsonObject meta, String key, java.util.function.Function<String, T> parse) {
    String s = string(meta, key);
    try {
      return s == null ? null : parse.apply(s);
    } catch (NumberFormatException e) {
      return null;
    }
  }

  void forget(String sandboxId) {
    cache.remove(sandboxId);
  }

  /** The sandbox id a job's metadata names when the job is ours, else null. */
  static String sandboxOf(JsonObject job) {
    JsonObject meta = job.getValue("metadata") instanceof JsonObject m ? m : null;
    if (meta == null || !"true".equals(meta.getValue(META_MANAGED))) {
      return null;
    }
    return meta.getValue(META_SANDBOX) instanceof String s ? s : null;
  }

  /** Whether a job of ours is a sandbox's anchor. */
  static boolean isAnchor(JsonObject job) {
    return job.getValue("metadata") instanceof JsonObject m && ROLE_SANDBOX.equals(m.getValue(META_ROLE));
  }

  /** Whether a job's status is final (Ray's terminal states). */
  static boolean terminal(String status) {
    return "SUCCEEDED".equals(status) || "FAILED".equals(status) || "STOPPED".equals(status);
  }
}
