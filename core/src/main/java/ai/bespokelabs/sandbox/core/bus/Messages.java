package ai.bespokelabs.sandbox.core.bus;

import ai.bespokelabs.sandbox.core.model.SandboxConfig;
import io.vertx.core.eventbus.EventBus;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.List;
import java.util.Map;

/** The records exchanged between the HTTP verticle and adapter verticles. */
public final class Messages {
  private Messages() {}

  /** Registers a codec for every message record; call once per Vert.x instance. */
  public static void registerCodecs(EventBus bus) {
    RecordCodec.register(bus, CreateSandbox.class, CreateSandbox::toJson, CreateSandbox::fromJson);
    RecordCodec.register(bus, SandboxCreated.class, SandboxCreated::toJson, SandboxCreated::fromJson);
    RecordCodec.register(bus, ExecSandbox.class, ExecSandbox::toJson, ExecSandbox::fromJson);
    RecordCodec.register(bus, ExecResult.class, ExecResult::toJson, ExecResult::fromJson);
    RecordCodec.register(bus, DestroySandbox.class, DestroySandbox::toJson, DestroySandbox::fromJson);
    RecordCodec.register(bus, SandboxDestroyed.class, SandboxDestroyed::toJson, SandboxDestroyed::fromJson);
  }

  /** Create one sandbox. {@code createToken} is stamped on the provider resource. */
  public record CreateSandbox(String sandboxId, String organizationId, String backend, String createToken,
      SandboxConfig config) {
    JsonObject toJson() {
      return new JsonObject().put("sandbox_id", sandboxId).put("organization_id", organizationId)
          .put("backend", backend).put("create_token", createToken).put("config", config.toWireJson());
    }

    static CreateSandbox fromJson(JsonObject j) {
      return new CreateSandbox(j.getString("sandbox_id"), j.getString("organization_id"), j.getString("backend"),
          j.getString("create_token"), SandboxConfig.fromWireJson(j.getJsonObject("config")));
    }
  }

  /** A created sandbox: the provider's id for it and the node hosting its runtime. */
  public record SandboxCreated(String providerResourceId, String nodeId) {
    JsonObject toJson() {
      return new JsonObject().put("provider_resource_id", providerResourceId).put("node_id", nodeId);
    }

    static SandboxCreated fromJson(JsonObject j) {
      return new SandboxCreated(j.getString("provider_resource_id"), j.getString("node_id"));
    }
  }

  /**
   * Run one program. Exactly one of {@code code} (run by the {@code language} interpreter) and
   * {@code command} is set; {@code args == null} means {@code command} is a shell command line.
   */
  public record ExecSandbox(String sandboxId, String executionId, String providerResourceId, String code,
      String language, String command, List<String> args, Map<String, String> env, String cwd,
      int timeoutSecs, int outputLimitBytes) {
    public ExecSandbox {
      args = args == null ? null : List.copyOf(args);
      env = env == null ? Map.of() : Map.copyOf(env);
    }

    JsonObject toJson() {
      return new JsonObject().put("sandbox_id", sandboxId).put("execution_id", executionId)
          .put("provider_resource_id", providerResourceId).put("code", code).put("language", language)
          .put("command", command).put("args", args == null ? null : new JsonArray(args))
          .put("env", new JsonObject(Map.copyOf(env))).put("cwd", cwd).put("timeout_secs", timeoutSecs)
          .put("output_limit_bytes", outputLimitBytes);
    }

    @SuppressWarnings("unchecked")
    static ExecSandbox fromJson(JsonObject j) {
      JsonArray args = j.getJsonArray("args");
      Map<String, String> env = (Map<String, String>) (Map<?, ?>) j.getJsonObject("env", new JsonObject()).getMap();
      return new ExecSandbox(j.getString("sandbox_id"), j.getString("execution_id"),
          j.getString("provider_resource_id"), j.getString("code"), j.getString("language"),
          j.getString("command"), args == null ? null : args.stream().map(String::valueOf).toList(), env,
          j.getString("cwd"), j.getInteger("timeout_secs"), j.getInteger("output_limit_bytes"));
    }
  }

  /** The outcome of one execution; output is capped at the request's limit with truncation flags. */
  public record ExecResult(int exitCode, String stdout, String stderr, boolean stdoutTruncated,
      boolean stderrTruncated, boolean timedOut, long durationMs) {
    JsonObject toJson() {
      return new JsonObject().put("exit_code", exitCode).put("stdout", stdout).put("stderr", stderr)
          .put("stdout_truncated", stdoutTruncated).put("stderr_truncated", stderrTruncated)
          .put("timed_out", timedOut).put("duration_ms", durationMs);
    }

    static ExecResult fromJson(JsonObject j) {
      return new ExecResult(j.getInteger("exit_code"), j.getString("stdout"), j.getString("stderr"),
          j.getBoolean("stdout_truncated"), j.getBoolean("stderr_truncated"), j.getBoolean("timed_out"),
          j.getLong("duration_ms"));
    }
  }

  /** Destroy one sandbox, working from the stored provider resource id. */
  public record DestroySandbox(String sandboxId, String providerResourceId) {
    JsonObject toJson() {
      return new JsonObject().put("sandbox_id", sandboxId).put("provider_resource_id", providerResourceId);
    }

    static DestroySandbox fromJson(JsonObject j) {
      return new DestroySandbox(j.getString("sandbox_id"), j.getString("provider_resource_id"));
    }
  }

  /** Destroy finished; {@code alreadyGone} when the provider had nothing left to remove. */
  public record SandboxDestroyed(boolean alreadyGone) {
    JsonObject toJson() {
      return new JsonObject().put("already_gone", alreadyGone);
    }

    static SandboxDestroyed fromJson(JsonObject j) {
      return new SandboxDestroyed(j.getBoolean("already_gone", false));
    }
  }
}
