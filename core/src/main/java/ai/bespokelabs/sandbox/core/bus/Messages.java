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
    RecordCodec.register(bus, ExecStarted.class, ExecStarted::toJson, ExecStarted::fromJson);
    RecordCodec.register(bus, StreamEvent.class, StreamEvent::toJson, StreamEvent::fromJson);
    RecordCodec.register(bus, AttachExec.class, AttachExec::toJson, AttachExec::fromJson);
    RecordCodec.register(bus, DetachExec.class, DetachExec::toJson, DetachExec::fromJson);
    RecordCodec.register(bus, StdinExec.class, StdinExec::toJson, StdinExec::fromJson);
    RecordCodec.register(bus, SignalExec.class, SignalExec::toJson, SignalExec::fromJson);
    RecordCodec.register(bus, ExecFinished.class, ExecFinished::toJson, ExecFinished::fromJson);
    RecordCodec.register(bus, ResourceList.class, ResourceList::toJson, ResourceList::fromJson);
    RecordCodec.register(bus, SnapshotSandbox.class, SnapshotSandbox::toJson, SnapshotSandbox::fromJson);
    RecordCodec.register(bus, SnapshotTaken.class, SnapshotTaken::toJson, SnapshotTaken::fromJson);
    RecordCodec.register(bus, SetTimeout.class, SetTimeout::toJson, SetTimeout::fromJson);
    RecordCodec.register(bus, FileOp.class, FileOp::toJson, FileOp::fromJson);
    RecordCodec.register(bus, FileReply.class, FileReply::toJson, FileReply::fromJson);
    RecordCodec.register(bus, MetricsRequest.class, MetricsRequest::toJson, MetricsRequest::fromJson);
    RecordCodec.register(bus, SandboxMetrics.class, SandboxMetrics::toJson, SandboxMetrics::fromJson);
  }

  /**
   * What a provider lists: its resources that carry our marks. {@code sandboxId} is the sandbox the resource
   * belongs to (from its labels or name), {@code status} one of provisioning, running, stopping,
   * terminated, failed; {@code providerCostUsd} the provider's own total when it reports one.
   */
  public record Resource(String resourceId, String sandboxId, String status, java.math.BigDecimal providerCostUsd) {}

  /** The answer to a list request. */
  public record ResourceList(List<Resource> resources) {
    public ResourceList {
      resources = List.copyOf(resources);
    }

    JsonObject toJson() {
      JsonArray a = new JsonArray();
      resources.forEach(r -> a.add(new JsonObject().put("resource_id", r.resourceId()).put("sandbox_id", r.sandboxId())
          .put("status", r.status()).put("provider_cost_usd",
              r.providerCostUsd() == null ? null : r.providerCostUsd().toPlainString())));
      return new JsonObject().put("resources", a);
    }

    static ResourceList fromJson(JsonObject j) {
      List<Resource> out = new java.util.ArrayList<>();
      j.getJsonArray("resources").forEach(o -> {
        JsonObject r = (JsonObject) o;
        String cost = r.getString("provider_cost_usd");
        out.add(new Resource(r.getString("resource_id"), r.getString("sandbox_id"), r.getString("status"),
            cost == null ? null : new java.math.BigDecimal(cost)));
      });
      return new ResourceList(out);
    }
  }

  /** Create one sandbox. {@code createToken} is stamped on the provider resource. */
  public record CreateSandbox(String sandboxId, String organizationId, String backend, String createToken,
      SandboxConfig config, ai.bespokelabs.sandbox.core.model.Workspace workspace) {
    public CreateSandbox {
      workspace = workspace == null ? ai.bespokelabs.sandbox.core.model.Workspace.EMPTY : workspace;
    }

    /** A create with nothing to put in the sandbox. */
    public CreateSandbox(String sandboxId, String organizationId, String backend, String createToken,
        SandboxConfig config) {
      this(sandboxId, organizationId, backend, createToken, config, null);
    }

    JsonObject toJson() {
      return new JsonObject().put("sandbox_id", sandboxId).put("organization_id", organizationId)
          .put("backend", backend).put("create_token", createToken).put("config", config.toWireJson())
          .put("workspace", workspace.toJson());
    }

    static CreateSandbox fromJson(JsonObject j) {
      return new CreateSandbox(j.getString("sandbox_id"), j.getString("organization_id"), j.getString("backend"),
          j.getString("create_token"), SandboxConfig.fromWireJson(j.getJsonObject("config")),
          ai.bespokelabs.sandbox.core.model.Workspace.fromJson(j.getJsonObject("workspace")));
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
   * {@code keepStdin} keeps the program's stdin open for writes. With a {@code recorderAddress} the
   * request is answered as soon as the program started ({@link ExecStarted}) and the final result goes to
   * the recorder; without one the answer is the {@link ExecResult}. A {@code subscriberAddress} is
   * attached before the program starts, so it receives every byte.
   */
  public record ExecSandbox(String sandboxId, String executionId, String providerResourceId, String code,
      String language, String command, List<String> args, Map<String, String> env, String cwd,
      int timeoutSecs, int outputLimitBytes, boolean keepStdin, String recorderAddress,
      String subscriberAddress) {
    public ExecSandbox {
      args = args == null ? null : List.copyOf(args);
      env = env == null ? Map.of() : Map.copyOf(env);
    }

    /** The blocking form: answered with the {@link ExecResult} once the program exits. */
    public ExecSandbox(String sandboxId, String executionId, String providerResourceId, String code,
        String language, String command, List<String> args, Map<String, String> env, String cwd,
        int timeoutSecs, int outputLimitBytes) {
      this(sandboxId, executionId, providerResourceId, code, language, command, args, env, cwd, timeoutSecs,
          outputLimitBytes, false, null, null);
    }

    JsonObject toJson() {
      return new JsonObject().put("sandbox_id", sandboxId).put("execution_id", executionId)
          .put("provider_resource_id", providerResourceId).put("code", code).put("language", language)
          .put("command", command).put("args", args == null ? null : new JsonArray(args))
          .put("env", new JsonObject(Map.copyOf(env))).put("cwd", cwd).put("timeout_secs", timeoutSecs)
          .put("output_limit_bytes", outputLimitBytes).put("keep_stdin", keepStdin)
          .put("recorder_address", recorderAddress).put("subscriber_address", subscriberAddress);
    }

    @SuppressWarnings("unchecked")
    static ExecSandbox fromJson(JsonObject j) {
      JsonArray args = j.getJsonArray("args");
      Map<String, String> env = (Map<String, String>) (Map<?, ?>) j.getJsonObject("env", new JsonObject()).getMap();
      return new ExecSandbox(j.getString("sandbox_id"), j.getString("execution_id"),
          j.getString("provider_resource_id"), j.getString("code"), j.getString("language"),
          j.getString("command"), args == null ? null : args.stream().map(String::valueOf).toList(), env,
          j.getString("cwd"), j.getInteger("timeout_secs"), j.getInteger("output_limit_bytes"),
          j.getBoolean("keep_stdin", false), j.getString("recorder_address"), j.getString("subscriber_address"));
    }
  }

  /**
   * The outcome of one execution; output is capped at the request's limit with truncation flags.
   * {@code cancelled}: ended by a signal sent through the API; {@code lastSeq}: the last output sequence
   * number streamed.
   */
  public record ExecResult(int exitCode, String stdout, String stderr, boolean stdoutTruncated,
      boolean stderrTruncated, boolean timedOut, long durationMs, boolean cancelled, long lastSeq) {

    public ExecResult(int exitCode, String stdout, String stderr, boolean stdoutTruncated, boolean stderrTruncated,
        boolean timedOut, long durationMs) {
      this(exitCode, stdout, stderr, stdoutTruncated, stderrTruncated, timedOut, durationMs, false, 0);
    }

    /** {@code timed_out}, {@code cancelled} or {@code completed}. */
    public String status() {
      return timedOut ? "timed_out" : cancelled ? "cancelled" : "completed";
    }

    public JsonObject toJson() {
      return new JsonObject().put("exit_code", exitCode).put("stdout", stdout).put("stderr", stderr)
          .put("stdout_truncated", stdoutTruncated).put("stderr_truncated", stderrTruncated)
          .put("timed_out", timedOut).put("duration_ms", durationMs).put("cancelled", cancelled)
          .put("last_seq", lastSeq);
    }

    public static ExecResult fromJson(JsonObject j) {
      return new ExecResult(j.getInteger("exit_code"), j.getString("stdout"), j.getString("stderr"),
          j.getBoolean("stdout_truncated"), j.getBoolean("stderr_truncated"), j.getBoolean("timed_out"),
          j.getLong("duration_ms"), j.getBoolean("cancelled", false), j.getLong("last_seq", 0L));
    }
  }

  /** An asynchronous execution started on {@code nodeId}. */
  public record ExecStarted(String executionId, String nodeId) {
    JsonObject toJson() {
      return new JsonObject().put("execution_id", executionId).put("node_id", nodeId);
    }

    static ExecStarted fromJson(JsonObject j) {
      return new ExecStarted(j.getString("execution_id"), j.getString("node_id"));
    }
  }

  /**
   * One event of an execution's stream, sent to a subscriber as a request whose reply is the credit for
   * the next one. Types: {@code output} ({@code stream}, {@code data}), {@code notice} and {@code gap}
   * ({@code info}), {@code exit} ({@code info} = the result), {@code evicted} (the subscriber was too slow
   * to answer and was dropped; it may resume). {@code body} is the output's JSON string when the adapter
   * encoded it for text clients (else null; the HTTP side encodes it then).
   */
  public record StreamEvent(String type, long seq, String stream, byte[] data, JsonObject info, OutputJson.Body body) {
    public static final String OUTPUT = "output";
    public static final String NOTICE = "notice";
    public static final String GAP = "gap";
    public static final String EXIT = "exit";
    public static final String EVICTED = "evicted";

    /** An event whose output (if any) has no precomputed JSON body. */
    public StreamEvent(String type, long seq, String stream, byte[] data, JsonObject info) {
      this(type, seq, stream, data, info, null);
    }

    /** The body is not sent between nodes: the receiving node computes it when a client needs it. */
    JsonObject toJson() {
      return new JsonObject().put("type", type).put("seq", seq).put("stream", stream).put("data", data)
          .put("info", info);
    }

    static StreamEvent fromJson(JsonObject j) {
      return new StreamEvent(j.getString("type"), j.getLong("seq"), j.getString("stream"), j.getBinary("data"),
          j.getJsonObject("info"));
    }
  }

  /** Attach a subscriber to a running (or recently finished) execution, from the event after {@code after}. */
  public record AttachExec(String executionId, String subscriberAddress, long after) {
    JsonObject toJson() {
      return new JsonObject().put("execution_id", executionId).put("subscriber_address", subscriberAddress)
          .put("after", after);
    }

    static AttachExec fromJson(JsonObject j) {
      return new AttachExec(j.getString("execution_id"), j.getString("subscriber_address"), j.getLong("after"));
    }
  }

  /** The subscriber went away. */
  public record DetachExec(String executionId, String subscriberAddress) {
    JsonObject toJson() {
      return new JsonObject().put("execution_id", executionId).put("subscriber_address", subscriberAddress);
    }

    static DetachExec fromJson(JsonObject j) {
      return new DetachExec(j.getString("execution_id"), j.getString("subscriber_address"));
    }
  }

  /** Bytes for the program's stdin; {@code eof} closes it after writing them. */
  public record StdinExec(String executionId, byte[] data, boolean eof) {
    JsonObject toJson() {
      return new JsonObject().put("execution_id", executionId).put("data", data).put("eof", eof);
    }

    static StdinExec fromJson(JsonObject j) {
      return new StdinExec(j.getString("execution_id"), j.getBinary("data"), j.getBoolean("eof", false));
    }
  }

  /** Send {@code TERM}, {@code KILL} or {@code INT} to the execution's whole process group. */
  public record SignalExec(String executionId, String signal) {
    JsonObject toJson() {
      return new JsonObject().put("execution_id", executionId).put("signal", signal);
    }

    static SignalExec fromJson(JsonObject j) {
      return new SignalExec(j.getString("execution_id"), j.getString("signal"));
    }
  }

  /** The final result of an asynchronous execution, for the recorder that stores it. */
  public record ExecFinished(String executionId, ExecResult result) {
    JsonObject toJson() {
      return new JsonObject().put("execution_id", executionId).put("result", result.toJson());
    }

    static ExecFinished fromJson(JsonObject j) {
      return new ExecFinished(j.getString("execution_id"), ExecResult.fromJson(j.getJsonObject("result")));
    }
  }

  /**
   * Destroy one sandbox, working from the stored provider resource id. {@code reason} is the termination
   * reason when one is known ({@code operator}, {@code ttl_expired}, {@code shutdown}), else null: providers
   * end a command still running when the sandbox's time ran out ({@link #TTL_EXPIRED}) as a timeout.
   */
  public record DestroySandbox(String sandboxId, String providerResourceId, String reason) {
    /** The termination reason of a sandbox that reached its deadline. */
    public static final String TTL_EXPIRED = "ttl_expired";

    public DestroySandbox(String sandboxId, String providerResourceId) {
      this(sandboxId, providerResourceId, null);
    }

    /** Whether the sandbox ends because its time ran out. */
    public boolean expired() {
      return TTL_EXPIRED.equals(reason);
    }

    JsonObject toJson() {
      return new JsonObject().put("sandbox_id", sandboxId).put("provider_resource_id", providerResourceId)
          .put("reason", reason);
    }

    static DestroySandbox fromJson(JsonObject j) {
      return new DestroySandbox(j.getString("sandbox_id"), j.getString("provider_resource_id"),
          j.getString("reason"));
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

  /** Take a snapshot of a sandbox's file system, from which new sandboxes can be created. */
  public record SnapshotSandbox(String sandboxId, String organizationId, String providerResourceId) {
    JsonObject toJson() {
      return new JsonObject().put("sandbox_id", sandboxId).put("organization_id", organizationId)
          .put("provider_resource_id", providerResourceId);
    }

    static SnapshotSandbox fromJson(JsonObject j) {
      return new SnapshotSandbox(j.getString("sandbox_id"), j.getString("organization_id"),
          j.getString("provider_resource_id"));
    }
  }

  /** A snapshot was taken; create with {@code snapshot_id} to start from it. */
  public record SnapshotTaken(String snapshotId) {
    JsonObject toJson() {
      return new JsonObject().put("snapshot_id", snapshotId);
    }

    static SnapshotTaken fromJson(JsonObject j) {
      return new SnapshotTaken(j.getString("snapshot_id"));
    }
  }

  /**
   * The sandbox's deadline was set to {@code timeoutSecs} from now; a backend with its own lifetime for the
   * sandbox moves it along (the supervisor enforces the gateway's deadline on every backend).
   */
  public record SetTimeout(String sandboxId, String providerResourceId, int timeoutSecs) {
    JsonObject toJson() {
      return new JsonObject().put("sandbox_id", sandboxId).put("provider_resource_id", providerResourceId)
          .put("timeout_secs", timeoutSecs);
    }

    static SetTimeout fromJson(JsonObject j) {
      return new SetTimeout(j.getString("sandbox_id"), j.getString("provider_resource_id"),
          j.getInteger("timeout_secs"));
    }
  }

  /**
   * One step of a file operation inside a sandbox. {@code op} is {@code list}, {@code delete},
   * {@code open_read} / {@code read} / {@code close} (a download pulled chunk by chunk from a session) or
   * {@code open_write} / {@code write} / {@code commit} / {@code abort} (an upload pushed chunk by chunk).
   */
  public record FileOp(String op, String sandboxId, String providerResourceId, String path, String session,
      byte[] data, boolean executable, boolean recursive) {
    JsonObject toJson() {
      return new JsonObject().put("op", op).put("sandbox_id", sandboxId).put("provider_resource_id", providerResourceId)
          .put("path", path).put("session", session).put("data", data).put("executable", executable)
          .put("recursive", recursive);
    }

    static FileOp fromJson(JsonObject j) {
      return new FileOp(j.getString("op"), j.getString("sandbox_id"), j.getString("provider_resource_id"),
          j.getString("path"), j.getString("session"), j.getBinary("data"), j.getBoolean("executable", false),
          j.getBoolean("recursive", false));
    }
  }

  /** The answer to a {@link FileOp}: metadata, and the bytes of a {@code read} (empty at the end). */
  public record FileReply(JsonObject meta, byte[] data) {
    JsonObject toJson() {
      return new JsonObject().put("meta", meta).put("data", data);
    }

    static FileReply fromJson(JsonObject j) {
      return new FileReply(j.getJsonObject("meta"), j.getBinary("data"));
    }
  }

  /**
   * Sample a running sandbox's resource use. {@code memoryMb} and {@code diskMb} are the limits its config
   * asked for (null when unset), reported as the limits where the backend has no better source.
   */
  public record MetricsRequest(String sandboxId, String providerResourceId, Integer memoryMb, Integer diskMb) {
    JsonObject toJson() {
      return new JsonObject().put("sandbox_id", sandboxId).put("provider_resource_id", providerResourceId)
          .put("memory_mb", memoryMb).put("disk_mb", diskMb);
    }

    static MetricsRequest fromJson(JsonObject j) {
      return new MetricsRequest(j.getString("sandbox_id"), j.getString("provider_resource_id"),
          j.getInteger("memory_mb"), j.getInteger("disk_mb"));
    }
  }

  /**
   * One live sample of a sandbox's resource use; any field is null when the backend cannot tell.
   * {@code cpuPercent} is of one CPU (a program keeping two CPUs busy shows about 200).
   */
  public record SandboxMetrics(Double cpuPercent, Double memoryUsedMb, Double memoryLimitMb, Double diskUsedMb,
      Double diskLimitMb, Integer processes) {
    JsonObject toJson() {
      return new JsonObject().put("cpu_percent", cpuPercent).put("memory_used_mb", memoryUsedMb)
          .put("memory_limit_mb", memoryLimitMb).put("disk_used_mb", diskUsedMb).put("disk_limit_mb", diskLimitMb)
          .put("processes", processes);
    }

    static SandboxMetrics fromJson(JsonObject j) {
      return new SandboxMetrics(j.getDouble("cpu_percent"), j.getDouble("memory_used_mb"),
          j.getDouble("memory_limit_mb"), j.getDouble("disk_used_mb"), j.getDouble("disk_limit_mb"),
          j.getInteger("processes"));
    }
  }
}
