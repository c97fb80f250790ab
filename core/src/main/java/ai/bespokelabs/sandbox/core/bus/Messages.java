package ai.bespokelabs.sandbox.core.bus;

import ai.bespokelabs.sandbox.core.model.SandboxConfig;
import com.fasterxml.jackson.annotation.JsonIgnore;
import io.vertx.core.eventbus.EventBus;
import io.vertx.core.json.JsonObject;
import java.util.List;
import java.util.Map;

/** The records exchanged between the HTTP verticle and adapter verticles. */
public final class Messages {
  /** Every record sent on its own. */
  static final List<Class<?>> TYPES = List.of(
      CreateSandbox.class,
      SandboxCreated.class,
      ExecSandbox.class,
      ExecResult.class,
      DestroySandbox.class,
      SandboxDestroyed.class,
      ExecStarted.class,
      StreamEvent.class,
      AttachExec.class,
      DetachExec.class,
      StdinExec.class,
      SignalExec.class,
      ExecFinished.class,
      ResourceList.class,
      SnapshotSandbox.class,
      SnapshotTaken.class,
      SetTimeout.class,
      FileOp.class,
      FileReply.class,
      MetricsRequest.class,
      SandboxMetrics.class,
      ListResources.class);

  private Messages() {}

  /** Registers the codec of every message record and of bus failures; call once per Vert.x instance. */
  public static void registerCodecs(EventBus bus) {
    for (Class<?> type : TYPES) {
      RecordCodec.register(bus, type);
    }
    BusFailures.registerCodec(bus);
  }

  /**
   * What a provider lists: its resources that carry our marks. {@code sandboxId} is the sandbox the resource
   * belongs to (from its labels or name), {@code status} one of provisioning, running, stopping,
   * terminated, failed; {@code providerCostUsd} the provider's own total when it reports one.
   */
  public record Resource(String resourceId, String sandboxId, String status, java.math.BigDecimal providerCostUsd) {}

  /**
   * A list request: the resource ids of the sandboxes the gateway holds live on the backend (on the node, for a
   * node-bound one), taken before listing. A backend that cannot list looks these up one by one instead.
   */
  public record ListResources(List<String> knownResourceIds) {
    public ListResources {
      knownResourceIds = List.copyOf(knownResourceIds);
    }
  }

  /** The answer to a list request. */
  public record ResourceList(List<Resource> resources) {
    public ResourceList {
      resources = List.copyOf(resources);
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
  }

  /**
   * A created sandbox: the provider's id for it, the node hosting its runtime, and the provider's own hourly
   * price for it when the provider quoted one (null otherwise: the pricing catalog's rate stands).
   */
  public record SandboxCreated(String providerResourceId, String nodeId, java.math.BigDecimal quotedHourlyRateUsd) {
    public SandboxCreated(String providerResourceId, String nodeId) {
      this(providerResourceId, nodeId, null);
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
  }

  /** An asynchronous execution started on {@code nodeId}. */
  public record ExecStarted(String executionId, String nodeId) {
  }

  /**
   * One event of an execution's stream, sent to a subscriber as a request whose reply is the credit for
   * the next one. Types: {@code output} ({@code stream}, {@code data}), {@code notice} and {@code gap}
   * ({@code info}), {@code exit} ({@code info} = the result), {@code evicted} (the subscriber was too slow
   * to answer and was dropped; it may resume). {@code body} is the output's JSON string when the adapter
   * encoded it for text clients (else null; the HTTP side encodes it then); it is not sent between nodes (the
   * receiving node computes it when a client needs it).
   */
  public record StreamEvent(String type, long seq, String stream, byte[] data, JsonObject info,
      @JsonIgnore OutputJson.Body body) {
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
  }

  /** Attach a subscriber to a running (or recently finished) execution, from the event after {@code after}. */
  public record AttachExec(String executionId, String subscriberAddress, long after) {
  }

  /** The subscriber went away. */
  public record DetachExec(String executionId, String subscriberAddress) {
  }

  /** Bytes for the program's stdin; {@code eof} closes it after writing them. */
  public record StdinExec(String executionId, byte[] data, boolean eof) {
  }

  /** Send {@code TERM}, {@code KILL} or {@code INT} to the execution's whole process group. */
  public record SignalExec(String executionId, String signal) {
  }

  /** The final result of an asynchronous execution, for the recorder that stores it. */
  public record ExecFinished(String executionId, ExecResult result) {
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
  }

  /** Destroy finished; {@code alreadyGone} when the provider had nothing left to remove. */
  public record SandboxDestroyed(boolean alreadyGone) {
  }

  /** Take a snapshot of a sandbox's file system, from which new sandboxes can be created. */
  public record SnapshotSandbox(String sandboxId, String organizationId, String providerResourceId) {
  }

  /** A snapshot was taken; create with {@code snapshot_id} to start from it. */
  public record SnapshotTaken(String snapshotId) {
  }

  /**
   * The sandbox's deadline was set to {@code timeoutSecs} from now; a backend with its own lifetime for the
   * sandbox moves it along (the supervisor enforces the gateway's deadline on every backend).
   */
  public record SetTimeout(String sandboxId, String providerResourceId, int timeoutSecs) {
  }

  /**
   * One step of a file operation inside a sandbox. {@code op} is {@code list}, {@code delete},
   * {@code open_read} / {@code read} / {@code close} (a download pulled chunk by chunk from a session) or
   * {@code open_write} / {@code write} / {@code commit} / {@code abort} (an upload pushed chunk by chunk).
   */
  public record FileOp(String op, String sandboxId, String providerResourceId, String path, String session,
      byte[] data, boolean executable, boolean recursive) {
  }

  /**
   * The answer to a {@link FileOp}; each operation fills its own fields: {@code list} the entries, an open the
   * session (and a download's size, -1 when unknown), a {@code read} the bytes or {@code eof}, a {@code commit}
   * the entry written.
   */
  public record FileReply(java.util.List<ai.bespokelabs.sandbox.core.model.FileEntry> entries, String session,
      long size, boolean eof, byte[] data, ai.bespokelabs.sandbox.core.model.FileEntry entry) {
    private static final FileReply DONE = new FileReply(null, null, -1, false, null, null);

    public static FileReply listing(java.util.List<ai.bespokelabs.sandbox.core.model.FileEntry> entries) {
      return new FileReply(java.util.List.copyOf(entries), null, -1, false, null, null);
    }

    public static FileReply opened(String session, long size) {
      return new FileReply(null, session, size, false, null, null);
    }

    public static FileReply chunk(byte[] data) {
      return new FileReply(null, null, -1, false, data, null);
    }

    public static FileReply end() {
      return new FileReply(null, null, -1, true, new byte[0], null);
    }

    public static FileReply written(ai.bespokelabs.sandbox.core.model.FileEntry entry) {
      return new FileReply(null, null, -1, false, null, entry);
    }

    /** An operation with nothing to answer (delete, write, close, abort). */
    public static FileReply done() {
      return DONE;
    }
  }

  /**
   * Sample a running sandbox's resource use. {@code memoryMb} and {@code diskMb} are the limits its config
   * asked for (null when unset), reported as the limits where the backend has no better source.
   */
  public record MetricsRequest(String sandboxId, String providerResourceId, Integer memoryMb, Integer diskMb) {
  }

  /**
   * One live sample of a sandbox's resource use; any field is null when the backend cannot tell.
   * {@code cpuPercent} is of one CPU (a program keeping two CPUs busy shows about 200).
   */
  public record SandboxMetrics(Double cpuPercent, Double memoryUsedMb, Double memoryLimitMb, Double diskUsedMb,
      Double diskLimitMb, Integer processes) {
  }
}
