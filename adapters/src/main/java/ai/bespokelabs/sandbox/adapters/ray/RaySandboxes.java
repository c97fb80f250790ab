package ai.bespokelabs.sandbox.adapters.ray;

import io.vertx.core.json.JsonObject;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The sandboxes this node created on the cluster: Ray has no object for a sandbox, so what a job needs from
 * its sandbox (organization, create token, env values, resources) is held here, from create to destroy. Env
 * values are never stored elsewhere, so after a restart a sandbox's jobs run with their exec env only.
 */
final class RaySandboxes {
  static final String META_MANAGED = "bespokelabs.ai/managed";
  static final String META_SANDBOX = "bespokelabs.ai/sandbox-id";
  static final String META_ORGANIZATION = "bespokelabs.ai/organization-id";
  static final String META_CREATE_TOKEN = "bespokelabs.ai/create-token";
  static final String META_EXECUTION = "bespokelabs.ai/execution-id";

  /** What a sandbox gives each of its jobs. */
  record Sandbox(String organizationId, String createToken, Map<String, String> env, Double cpus, Long memoryBytes,
      Integer gpus) {}

  private final Map<String, Sandbox> sandboxes = new ConcurrentHashMap<>();

  void put(String sandboxId, Sandbox sandbox) {
    sandboxes.put(sandboxId, sandbox);
  }

  /** The sandbox, or one with nothing of its own when this node does not know it (created before a restart). */
  Sandbox get(String sandboxId) {
    return sandboxes.getOrDefault(sandboxId, new Sandbox(null, null, Map.of(), null, null, null));
  }

  void remove(String sandboxId) {
    sandboxes.remove(sandboxId);
  }

  Set<String> ids() {
    return Set.copyOf(sandboxes.keySet());
  }

  /** The sandbox id a job's metadata names when the job is ours, else null. */
  static String sandboxOf(JsonObject job) {
    JsonObject meta = job.getValue("metadata") instanceof JsonObject m ? m : null;
    if (meta == null || !"true".equals(meta.getValue(META_MANAGED))) {
      return null;
    }
    return meta.getValue(META_SANDBOX) instanceof String s ? s : null;
  }

  /** Whether a job's status is final (Ray's terminal states). */
  static boolean terminal(String status) {
    return "SUCCEEDED".equals(status) || "FAILED".equals(status) || "STOPPED".equals(status);
  }
}
