package ai.bespokelabs.sandbox.adapters.docker;

import ai.bespokelabs.sandbox.adapters.host.ExecHandle;
import ai.bespokelabs.sandbox.adapters.host.ExecSink;
import ai.bespokelabs.sandbox.adapters.host.BlockingProvider;
import ai.bespokelabs.sandbox.adapters.exec.CommandLine;
import ai.bespokelabs.sandbox.adapters.exec.Utf8;
import ai.bespokelabs.sandbox.core.bus.Messages.CreateSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.DestroySandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.Resource;
import ai.bespokelabs.sandbox.core.bus.Messages.SandboxDestroyed;
import ai.bespokelabs.sandbox.core.config.ProviderSettings;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import ai.bespokelabs.sandbox.core.model.SandboxConfig;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@code docker} backend: each sandbox is a container of the Docker Engine named by {@code DOCKER_HOST}
 * (any engine speaking its API, e.g. Podman's compatible service), kept alive by a small shell loop that
 * also reaps orphans;
 * every execution is an engine exec whose multiplexed output is demultiplexed into our stdout and stderr.
 *
 * <p>Containers carry labels with the organization, sandbox id and create token, so reconciliation lists
 * ours and an ambiguous create is cleaned up by label. Each exec runs under a one-line {@code sh} wrapper
 * that reports the program's process id on stderr (stripped from the output) and then {@code exec}s the
 * program, which is a process-group leader in its container: signals and timeouts kill that group through
 * a second exec, since the Engine API has no way to signal an exec.
 */
public final class DockerProvider implements BlockingProvider {
  public static final String BACKEND = "docker";
  public static final String DEFAULT_IMAGE = "python:3.12-slim";
  static final String LABEL = "ai.bespokelabs.sandbox.";
  static final String MANAGED = LABEL + "managed";
  static final String ORGANIZATION = LABEL + "organization";
  static final String SANDBOX = LABEL + "sandbox";
  static final String CREATE_TOKEN = LABEL + "create-token";
  static final String WORKDIR = "/workspace";

  private static final Logger LOG = LoggerFactory.getLogger(DockerProvider.class);
  private static final Duration CALL = Duration.ofSeconds(30);
  private static final Duration PULL = Duration.ofMinutes(10);
  private static final Pattern PID_LINE = Pattern.compile("^bsx:(\\d{1,10})\n");
  /**
   * The container's first process: stays up, reaps orphaned processes (a shell's {@code wait} collects any
   * child, and orphans are re-parented to it) and exits at once on TERM.
   */
  private static final String KEEPALIVE = "trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done";
  private static final String WRAPPER = "printf 'bsx:%d\\n' $$ >&2; exec \"$@\"";

  private final DockerEngine engine;
  private final DockerFiles files;
  private final String defaultImage;
  /** The executions still running, by container: a destroy for an expired sandbox ends them as timed out. */
  private final java.util.concurrent.ConcurrentMap<String, java.util.Set<Execution>> running =
      new java.util.concurrent.ConcurrentHashMap<>();
  private final ScheduledExecutorService timers = Executors.newSingleThreadScheduledExecutor(
      Thread.ofPlatform().daemon().name("docker-exec-timeouts").factory());

  public DockerProvider(Vertx vertx, ProviderSettings settings) {
    this.engine = new DockerEngine(vertx, DockerHost.parse(settings.get("DOCKER_HOST", DockerHost.DEFAULT)), BACKEND);
    this.defaultImage = settings.get("BESPOKE_DOCKER_IMAGE", DEFAULT_IMAGE);
    this.files = new DockerFiles(this, engine);
  }

  @Override
  public String backend() {
    return BACKEND;
  }

  @Override
  public java.util.Set<ai.bespokelabs.sandbox.adapters.spi.Capability> capabilities() {
    return java.util.EnumSet.of(ai.bespokelabs.sandbox.adapters.spi.Capability.FILES, ai.bespokelabs.sandbox.adapters.spi.Capability.METRICS, ai.bespokelabs.sandbox.adapters.spi.Capability.ADOPT, ai.bespokelabs.sandbox.adapters.spi.Capability.SNAPSHOT);
  }

  @Override
  public boolean nativeArchives() {
    return true;
  }

  /** Containers live on the engine this node is configured with. */
  @Override
  public boolean nodeBound() {
    return true;
  }

  /** Whether the engine's socket exists (a create answers {@code backend_not_installed} otherwise). */
  @Override
  public boolean installed() {
    try {
      engine.requirePresent("create");
      return true;
    } catch (ProviderException e) {
      return false;
    }
  }

  // ---- create ----------------------------------------------------------------------------------------

  /**
   * Creates and starts the container {@code bsx-<sandbox id>}; repeating a create for the same sandbox
   * returns the same container. The image is pulled when the engine does not have it.
   */
  @Override
  public String create(CreateSandbox request) {
    engine.requirePresent("create");
    SandboxConfig config = request.config();
    String image = config.snapshotId() != null ? snapshotImage(config.snapshotId(), request.organizationId())
        : config.image() != null ? config.image() : defaultImage;
    String name = "bsx-" + request.sandboxId();
    String id;
    try {
      id = createContainer(name, image, request, true);
      DockerEngine.Response started = engine.post("create", "/containers/" + id + "/start", null, CALL);
      if (!started.ok() && started.status() != 304) {
        LOG.debug("docker start failed: {}", DockerEngine.message(started));
        throw cleanedUp(engine.statusFailure("create", started, ErrorCode.CREATION_FAILED), request);
      }
      return id;
    } catch (ProviderException e) {
      if (e.error().outcome() == ProviderError.Outcome.UNKNOWN && e.error().context().get("cleanup_status") == null) {
        throw cleanedUp(e, request);
      }
      throw e;
    }
  }

  private String createContainer(String name, String image, CreateSandbox request, boolean mayPull) {
    SandboxConfig config = request.config();
    JsonObject labels = new JsonObject().put(MANAGED, "true").put(ORGANIZATION, request.organizationId())
        .put(SANDBOX, request.sandboxId()).put(CREATE_TOKEN, request.createToken());
    JsonObject host = new JsonObject().put("PidsLimit", 1024);
    if (!Boolean.TRUE.equals(config.allowInternet()) && config.allowInternet() != null) {
      host.put("NetworkMode", "none");
    }
    if (config.memoryMb() != null) {
      host.put("Memory", config.memoryMb() * 1024L * 1024L);
    }
    if (config.cpu() != null) {
      host.put("NanoCpus", Math.round(config.cpu() * 1e9));
    }
    JsonArray env = new JsonArray();
    (config.envVars() == null ? Map.<String, String>of() : config.envVars()).forEach((k, v) -> env.add(k + "=" + v));
    JsonObject body = new JsonObject().put("Image", image)
        .put("Entrypoint", new JsonArray().add("sh").add("-c").add(KEEPALIVE)).put("Cmd", new JsonArray())
        .put("WorkingDir", WORKDIR).put("Env", env).put("Labels", labels).put("HostConfig", host)
        .put("AttachStdin", false).put("AttachStdout", false).put("AttachStderr", false).put("Tty", false);
    DockerEngine.Response r = engine.post("create", "/containers/create?name=" + DockerEngine.q(name), body, CALL);
    if (r.status() == 201) {
      return r.json().getString("Id");
    }
    if (r.status() == 404 && mayPull && config.snapshotId() == null) {
      pull(image);
      return createContainer(name, image, request, false);
    }
    // a name conflict (409 from Docker, 500 from some compatible engines): a repeated create of this sandbox
    DockerEngine.Response existing = engine.get("create", "/containers/" + DockerEngine.q(name) + "/json", CALL);
    if (existing.ok() && request.sandboxId().equals(existing.json().getJsonObject("Config", new JsonObject())
        .getJsonObject("Labels", new JsonObject()).getString(SANDBOX))) {
      return existing.json().getString("Id");
    }
    LOG.debug("docker create failed: {}", DockerEngine.message(r));
    throw engine.statusFailure("create", r, ErrorCode.CREATION_FAILED);
  }

  private void pull(String image) {
    String ref = image;
    String tag = "latest";
    int slash = image.lastIndexOf('/');
    int colon = image.lastIndexOf(':');
    if (colon > slash && !image.contains("@")) {
      ref = image.substring(0, colon);
      tag = image.substring(colon + 1);
    }
    DockerEngine.Response r = engine.post("create", "/images/create?fromImage=" + DockerEngine.q(ref) + "&tag="
        + DockerEngine.q(tag), null, PULL);
    // the engine streams progress and reports a failed pull inside a 200 body
    if (!r.ok() || r.body().toString(StandardCharsets.UTF_8).contains("\"error\"")) {
      throw new ProviderException(ProviderError.of(ErrorCode.CREATION_FAILED, BACKEND, "create", false,
          ProviderError.Outcome.FAILED).withContext("cleanup_status", "not_found"));
    }
  }

  /**
   * After a failed or ambiguous create, removes whatever carries this create's token and reports what it
   * found: {@code deleted}, {@code not_found} or {@code unknown} (the engine could not be asked).
   */
  private ProviderException cleanedUp(ProviderException failure, CreateSandbox request) {
    String cleanup;
    try {
      List<String> ids = containers(CREATE_TOKEN + "=" + request.createToken()).stream()
          .map(c -> c.getString("Id")).toList();
      for (String id : ids) {
        remove(id);
      }
      cleanup = ids.isEmpty() ? "not_found" : "deleted";
    } catch (RuntimeException e) {
      cleanup = "unknown";
    }
    return new ProviderException(failure.error().withContext("cleanup_status", cleanup), failure);
  }

  // ---- exec ------------------------------------------------------------------------------------------

  @Override
  public ExecHandle start(ExecSandbox request, ExecSink sink) {
    String container = request.providerResourceId();
    List<String> argv = new ArrayList<>(List.of("sh", "-c", WRAPPER, "sh"));
    argv.addAll(CommandLine.of(request.code(), request.language(), request.command(), request.args()));
    JsonArray env = new JsonArray();
    request.env().forEach((k, v) -> env.add(k + "=" + v));
    JsonObject body = new JsonObject().put("AttachStdin", request.keepStdin()).put("AttachStdout", true)
        .put("AttachStderr", true).put("Tty", false).put("Cmd", new JsonArray(argv)).put("Env", env)
        .put("WorkingDir", workingDir(request.cwd()));
    DockerEngine.Response created = engine.post("execute", "/containers/" + container + "/exec", body, CALL);
    if (created.status() == 409) {
      throw ApiException.conflict("sandbox container is not running");
    }
    if (created.status() != 201) {
      throw engine.statusFailure("execute", created, ErrorCode.EXECUTION_FAILED);
    }
    String execId = created.json().getString("Id");
    int[] status = new int[1];
    HijackedStream stream;
    try {
      stream = HijackedStream.start(engine.host(), execId, status);
    } catch (IOException e) {
      throw engine.transportFailure("execute", e);
    }
    if (stream == null) {
      throw engine.statusFailure("execute", new DockerEngine.Response(status[0], io.vertx.core.buffer.Buffer.buffer()),
          ErrorCode.EXECUTION_FAILED);
    }
    if (!request.keepStdin()) {
      stream.closeWrite();
    }
    Execution execution = new Execution(container, execId, stream, sink, request.timeoutSecs());
    running.computeIfAbsent(container, c -> java.util.concurrent.ConcurrentHashMap.newKeySet()).add(execution);
    Thread.ofVirtual().name("docker-exec-" + request.executionId()).start(execution::pump);
    return execution;
  }

  /** The exec's working directory: the sandbox's, or {@code cwd} (relative ones under it). */
  static String workingDir(String cwd) {
    if (cwd == null || cwd.isBlank()) {
      return WORKDIR;
    }
    String path = cwd.startsWith("/") ? cwd : WORKDIR + "/" + cwd;
    return java.nio.file.Path.of(path).normalize().toString();
  }

  /** One running exec: reads its stream on its own thread and controls it through further execs. */
  private final class Execution implements ExecHandle {
    private final String container;
    private final String execId;
    private final HijackedStream stream;
    private final ExecSink sink;
    private final int timeoutSecs;
    private final CompletableFuture<Long> pid = new CompletableFuture<>();
    private final long startedNanos = System.nanoTime();
    private volatile boolean timedOut;
    /** Its sandbox is being destroyed because its time ran out. */
    private volatile boolean sandboxExpired;
    private volatile boolean signalled;
    private byte[] stdoutCarry = new byte[0];
    private byte[] stderrCarry = new byte[0];
    private final ByteArrayOutputStream pidLine = new ByteArrayOutputStream();

    Execution(String container, String execId, HijackedStream stream, ExecSink sink, int timeoutSecs) {
      this.container = container;
      this.execId = execId;
      this.stream = stream;
      this.sink = sink;
      this.timeoutSecs = timeoutSecs;
    }

    void pump() {
      ScheduledFuture<?> timer = timeoutSecs > 0 ? timers.schedule(() -> Thread.ofVirtual().start(() -> {
        timedOut = true;
        kill("KILL");
      }), timeoutSecs, TimeUnit.SECONDS) : null;
      boolean broken = false;
      try {
        byte[][] frame = new byte[1][];
        int type;
        while ((type = stream.readFrame(frame)) >= 0) {
          if (type == 1) {
            stdoutCarry = forward(ai.bespokelabs.sandbox.adapters.spi.OutputSink.Stream.STDOUT, stdoutCarry, frame[0], false);
          } else if (type == 2) {
            byte[] data = pid.isDone() ? frame[0] : takePid(frame[0]);
            stderrCarry = forward(ai.bespokelabs.sandbox.adapters.spi.OutputSink.Stream.STDERR, stderrCarry, data, false);
          }
        }
        forward(ai.bespokelabs.sandbox.adapters.spi.OutputSink.Stream.STDOUT, stdoutCarry, new byte[0], true);
        forward(ai.bespokelabs.sandbox.adapters.spi.OutputSink.Stream.STDERR, stderrCarry, new byte[0], true);
      } catch (IOException e) {
        broken = true;
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        broken = true;
      } finally {
        stream.close();
        if (timer != null) {
          timer.cancel(false);
        }
        pid.complete(-1L);
        running.computeIfPresent(container, (c, set) -> set.remove(this) && set.isEmpty() ? null : set);
      }
      int code = exitCode(broken);
      long ms = (System.nanoTime() - startedNanos) / 1_000_000;
      boolean out = timedOut;
      if (!out && sandboxExpired && code != 0) {
        // its container was removed because the sandbox's time ran out: a timeout, as its own would be
        out = true;
        message(ai.bespokelabs.sandbox.adapters.exec.Timeouts.sandboxMessage(ms));
      } else if (out) {
        message(ai.bespokelabs.sandbox.adapters.exec.Timeouts.message(timeoutSecs));
      }
      sink.exited(out ? ai.bespokelabs.sandbox.adapters.exec.Timeouts.EXIT_CODE : code, out,
          signalled && !out && code != 0, ms);
    }

    /** A last line of stderr, from the gateway. */
    private void message(byte[] line) {
      try {
        sink.output(ai.bespokelabs.sandbox.adapters.spi.OutputSink.Stream.STDERR, line);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }

    /** Strips the wrapper's {@code bsx:<pid>} line from the start of stderr. */
    private byte[] takePid(byte[] data) {
      pidLine.writeBytes(data);
      byte[] all = pidLine.toByteArray();
      int nl = indexOf(all, (byte) '\n');
      if (nl < 0 && all.length < 24) {
        return new byte[0];
      }
      Matcher m = PID_LINE.matcher(new String(all, 0, nl < 0 ? all.length : nl + 1, StandardCharsets.ISO_8859_1));
      if (m.find()) {
        pid.complete(Long.parseLong(m.group(1)));
        return Arrays.copyOfRange(all, nl + 1, all.length);
      }
      pid.complete(-1L);
      return all;
    }

    private byte[] forward(ai.bespokelabs.sandbox.adapters.spi.OutputSink.Stream which, byte[] carry, byte[] data, boolean last)
        throws InterruptedException {
      byte[] all = carry.length == 0 ? data : concat(carry, data);
      int cut = last ? all.length : Utf8.completePrefix(all, all.length);
      if (cut > 0) {
        sink.output(which, cut == all.length ? all : Arrays.copyOf(all, cut));
      }
      return cut == all.length ? new byte[0] : Arrays.copyOfRange(all, cut, all.length);
    }

    /**
     * The exec's exit code from the engine, waiting for it to record the end (an engine under load may
     * close the stream well before it does).
     */
    private int exitCode(boolean broken) {
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(broken ? 2 : 30);
      for (int attempt = 0; System.nanoTime() < deadline; attempt++) {
        try {
          DockerEngine.Response r = engine.get("execute", "/exec/" + execId + "/json", CALL);
          if (!r.ok()) {
            return -1;
          }
          JsonObject j = r.json();
          if (!j.getBoolean("Running", false) && j.getValue("ExitCode") instanceof Number n) {
            return n.intValue();
          }
        } catch (ProviderException e) {
          return -1;
        }
        try {
          Thread.sleep(Math.min(200, 10L * (attempt + 1)));
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return -1;
        }
      }
      return -1;
    }

    @Override
    public void writeStdin(byte[] data) {
      try {
        stream.write(data);
      } catch (IOException e) {
        throw ApiException.conflict("stdin is closed");
      }
    }

    @Override
    public void closeStdin() {
      stream.closeWrite();
    }

    @Override
    public void signal(String signal) {
      signalled = true;
      kill(signal);
    }

    /** Sends {@code signal} to the program's process group from a second exec in the container. */
    private void kill(String signal) {
      long p;
      try {
        p = pid.get(5, TimeUnit.SECONDS);
      } catch (Exception e) {
        p = -1;
      }
      if (p <= 0) {
        return;
      }
      JsonObject body = new JsonObject().put("AttachStdout", false).put("AttachStderr", false)
          .put("Cmd", new JsonArray().add("sh").add("-c").add("kill -s " + signal + " -" + p + " 2>/dev/null || kill -s "
              + signal + " " + p));
      try {
        DockerEngine.Response r = engine.post("signal", "/containers/" + container + "/exec", body, CALL);
        if (r.status() == 201) {
          engine.post("signal", "/exec/" + r.json().getString("Id") + "/start",
              new JsonObject().put("Detach", true).put("Tty", false), CALL);
        }
      } catch (ProviderException e) {
        LOG.debug("signal {} to exec {} failed: {}", signal, execId, e.error().code());
      }
    }
  }

  private static int indexOf(byte[] b, byte x) {
    for (int i = 0; i < b.length; i++) {
      if (b[i] == x) {
        return i;
      }
    }
    return -1;
  }

  private static byte[] concat(byte[] a, byte[] b) {
    byte[] out = Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, out, a.length, b.length);
    return out;
  }

  // ---- destroy, list, health -------------------------------------------------------------------------

  /**
   * Force-removes the container (and its anonymous volumes); a container already gone is fine. When the
   * sandbox's time ran out, the executions still running in it end as timed out.
   */
  @Override
  public SandboxDestroyed destroy(DestroySandbox request) {
    engine.requirePresent("destroy");
    List<String> ids = new ArrayList<>();
    if (request.providerResourceId() != null) {
      ids.add(request.providerResourceId());
    } else {
      containers(SANDBOX + "=" + request.sandboxId()).forEach(c -> ids.add(c.getString("Id")));
    }
    if (request.expired()) {
      ids.forEach(id -> running.getOrDefault(id, java.util.Set.of()).forEach(e -> e.sandboxExpired = true));
    }
    boolean gone = true;
    for (String id : ids) {
      gone &= !remove(id);
    }
    return new SandboxDestroyed(gone);
  }

  /** Removes a container; false when it did not exist. */
  private boolean remove(String id) {
    DockerEngine.Response r = engine.delete("destroy", "/containers/" + DockerEngine.q(id) + "?force=true&v=true", CALL);
    if (r.status() == 404) {
      return false;
    }
    if (!r.ok()) {
      LOG.debug("docker remove failed: {}", DockerEngine.message(r));
      throw engine.statusFailure("destroy", r, ErrorCode.COMMAND_FAILED);
    }
    return true;
  }

  /** Containers (any state) carrying {@code label} ({@code key=value}) besides our managed mark. */
  private List<JsonObject> containers(String label) {
    JsonObject filters = new JsonObject().put("label", new JsonArray().add(MANAGED + "=true").add(label));
    DockerEngine.Response r = engine.get("list", "/containers/json?all=true&filters=" + DockerEngine.q(filters.encode()),
        CALL);
    if (!r.ok()) {
      throw engine.statusFailure("list", r, ErrorCode.COMMAND_FAILED);
    }
    List<JsonObject> out = new ArrayList<>();
    r.array().forEach(o -> {
      if (o instanceof JsonObject j) {
        out.add(j);
      }
    });
    return out;
  }

  /** Our containers on this engine; none when no engine is installed here. */
  @Override
  public List<Resource> list() {
    if (!engine.host().present()) {
      return List.of();
    }
    List<Resource> out = new ArrayList<>();
    for (JsonObject c : containers(MANAGED + "=true")) {
      String sandbox = c.getJsonObject("Labels", new JsonObject()).getString(SANDBOX);
      String state = c.getString("State", "");
      out.add(new Resource(c.getString("Id"), sandbox, "running".equals(state) ? "running" : "stopped", null));
    }
    return out;
  }

  @Override
  public void checkHealth() {
    DockerEngine.Response r = engine.get("health", "/_ping", Duration.ofSeconds(5));
    if (!r.ok()) {
      throw engine.statusFailure("health", r, ErrorCode.CONNECTION);
    }
  }

  /** A running container of this organization's sandbox; anything else is {@code not_found}. */
  @Override
  public String adopt(CreateSandbox request, String providerResourceId) {
    DockerEngine.Response r = engine.get("adopt", "/containers/" + DockerEngine.q(providerResourceId) + "/json", CALL);
    JsonObject labels = r.ok() ? r.json().getJsonObject("Config", new JsonObject())
        .getJsonObject("Labels", new JsonObject()) : null;
    boolean ours = labels != null && request.sandboxId().equals(labels.getString(SANDBOX))
        && request.organizationId().equals(labels.getString(ORGANIZATION));
    if (!ours || !r.json().getJsonObject("State", new JsonObject()).getBoolean("Running", false)) {
      throw engine.failure(ErrorCode.NOT_FOUND, "adopt", false, ProviderError.Outcome.FAILED, null);
    }
    return r.json().getString("Id");
  }

  // ---- files ---------------------------------------------------------------------------------------

  @Override
  public List<ai.bespokelabs.sandbox.adapters.spi.FileEntry> listFiles(
      ai.bespokelabs.sandbox.core.bus.Messages.FileOp op) {
    return files.list(op.sandboxId(), op.providerResourceId(), op.path());
  }

  @Override
  public ai.bespokelabs.sandbox.adapters.files.ReadableFile openRead(ai.bespokelabs.sandbox.core.bus.Messages.FileOp op) {
    return files.openRead(op.providerResourceId(), op.path());
  }

  @Override
  public ai.bespokelabs.sandbox.adapters.files.WritableFile openWrite(
      ai.bespokelabs.sandbox.core.bus.Messages.FileOp op) {
    return files.openWrite(op.sandboxId(), op.providerResourceId(), op.path(), op.executable());
  }

  @Override
  public ai.bespokelabs.sandbox.adapters.files.ReadableFile openArchiveRead(
      ai.bespokelabs.sandbox.core.bus.Messages.FileOp op) {
    return files.openArchiveRead(op.providerResourceId(), op.path());
  }

  @Override
  public ai.bespokelabs.sandbox.adapters.files.WritableFile openArchiveWrite(
      ai.bespokelabs.sandbox.core.bus.Messages.FileOp op) {
    return files.openArchiveWrite(op.sandboxId(), op.providerResourceId(), op.path());
  }

  @Override
  public void deleteFile(ai.bespokelabs.sandbox.core.bus.Messages.FileOp op) {
    files.delete(op.sandboxId(), op.providerResourceId(), op.path(), op.recursive());
  }

  // ---- metrics ---------------------------------------------------------------------------------------

  /**
   * The engine's statistics of the container ({@code GET /containers/{id}/stats?stream=false}): CPU from the
   * cpu/precpu deltas (engines that answer without a previous sample, like Podman, are sampled twice 200 ms
   * apart), memory used without the inactive page cache, and the writable layer's size as disk use
   * ({@code SizeRw} of {@code GET /containers/{id}/json?size=true}). The memory limit is the container's;
   * the disk limit is the config's {@code disk_mb} (not enforced by this backend).
   */
  @Override
  public ai.bespokelabs.sandbox.core.bus.Messages.SandboxMetrics metrics(
      ai.bespokelabs.sandbox.core.bus.Messages.MetricsRequest request) {
    engine.requirePresent("metrics");
    String container = DockerEngine.q(request.providerResourceId());
    DockerEngine.Response inspected = engine.get("metrics", "/containers/" + container + "/json?size=true", CALL);
    if (!inspected.ok()) {
      throw engine.statusFailure("metrics", inspected, ErrorCode.COMMAND_FAILED);
    }
    JsonObject info = inspected.json();
    if (!info.getJsonObject("State", new JsonObject()).getBoolean("Running", false)) {
      throw ApiException.conflict("sandbox container is not running");
    }
    JsonObject first = stats(container);
    Double cpu = cpuPercent(first.getJsonObject("precpu_stats"), first.getJsonObject("cpu_stats"), null);
    JsonObject last = first;
    if (cpu == null) {
      long start = System.nanoTime();
      try {
        Thread.sleep(200);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw engine.failure(ErrorCode.TIMEOUT, "metrics", true, ProviderError.Outcome.FAILED, e);
      }
      last = stats(container);
      long elapsed = System.nanoTime() - start;
      cpu = cpuPercent(first.getJsonObject("cpu_stats"), last.getJsonObject("cpu_stats"),
          readNanos(first, last).orElse(elapsed));
    }
    JsonObject memory = last.getJsonObject("memory_stats", new JsonObject());
    Double used = null;
    if (memory.getLong("usage") != null) {
      JsonObject detail = memory.getJsonObject("stats", new JsonObject());
      long cache = detail.getLong("inactive_file", detail.getLong("total_inactive_file", 0L));
      used = mb(Math.max(0, memory.getLong("usage") - cache));
    }
    long memoryLimit = info.getJsonObject("HostConfig", new JsonObject()).getLong("Memory", 0L);
    Long sizeRw = info.getLong("SizeRw");
    Long pids = last.getJsonObject("pids_stats", new JsonObject()).getLong("current");
    return new ai.bespokelabs.sandbox.core.bus.Messages.SandboxMetrics(cpu, used,
        memoryLimit > 0 ? mb(memoryLimit) : null, sizeRw == null || sizeRw < 0 ? null : mb(sizeRw),
        request.diskMb() == null ? null : request.diskMb().doubleValue(), pids == null ? null : pids.intValue());
  }

  private JsonObject stats(String container) {
    DockerEngine.Response r = engine.get("metrics", "/containers/" + container + "/stats?stream=false", CALL);
    if (r.status() == 409) {
      throw ApiException.conflict("sandbox container is not running");
    }
    if (!r.ok()) {
      throw engine.statusFailure("metrics", r, ErrorCode.COMMAND_FAILED);
    }
    return r.json();
  }

  /**
   * CPU use between two {@code cpu_stats} as percent of one CPU: over {@code wallNanos} when given, else
   * over the host's CPU time between them as the Docker CLI computes it. Null when either sample is empty.
   */
  static Double cpuPercent(JsonObject before, JsonObject after, Long wallNanos) {
    if (before == null || after == null) {
      return null;
    }
    long used0 = before.getJsonObject("cpu_usage", new JsonObject()).getLong("total_usage", 0L);
    long used1 = after.getJsonObject("cpu_usage", new JsonObject()).getLong("total_usage", 0L);
    if (used1 < used0 || (wallNanos == null && used0 <= 0)) {
      return null; // no previous sample (Podman's precpu_stats is empty), or a counter reset
    }
    double percent;
    if (wallNanos != null) {
      if (wallNanos <= 0) {
        return null;
      }
      percent = (used1 - used0) * 100.0 / wallNanos;
    } else {
      long system = after.getLong("system_cpu_usage", 0L) - before.getLong("system_cpu_usage", 0L);
      long cpus = after.getLong("online_cpus", 0L);
      if (before.getLong("system_cpu_usage", 0L) <= 0 || system <= 0 || cpus <= 0) {
        return null;
      }
      percent = (double) (used1 - used0) / system * cpus * 100.0;
    }
    return Math.round(percent * 10) / 10.0;
  }

  /** The time between the two samples' {@code read} stamps, when both parse. */
  private static java.util.Optional<Long> readNanos(JsonObject first, JsonObject last) {
    try {
      java.time.Instant a = java.time.Instant.parse(first.getString("read"));
      java.time.Instant b = java.time.Instant.parse(last.getString("read"));
      long n = java.time.Duration.between(a, b).toNanos();
      return n > 0 ? java.util.Optional.of(n) : java.util.Optional.empty();
    } catch (RuntimeException e) {
      return java.util.Optional.empty();
    }
  }

  private static double mb(long bytes) {
    return Math.round(bytes / 1048576.0 * 100) / 100.0;
  }

  // ---- snapshots -------------------------------------------------------------------------------------

  /**
   * Commits the container to an image (labelled like the container, so with its organization) and answers
   * the image id; creating with it as {@code snapshot_id} starts a new container from it.
   */
  @Override
  public String snapshot(ai.bespokelabs.sandbox.core.bus.Messages.SnapshotSandbox request) {
    engine.requirePresent("snapshot");
    String repo = "bespoke-snapshots/" + request.sandboxId().toLowerCase(java.util.Locale.ROOT);
    DockerEngine.Response r = engine.post("snapshot", "/commit?container=" + DockerEngine.q(request.providerResourceId())
        + "&repo=" + DockerEngine.q(repo) + "&tag=" + System.currentTimeMillis() + "&pause=true", new JsonObject(),
        Duration.ofMinutes(10));
    if (r.status() != 201 && r.status() != 200) {
      LOG.debug("docker commit failed: {}", DockerEngine.message(r));
      throw engine.statusFailure("snapshot", r, ErrorCode.COMMAND_FAILED);
    }
    String id = r.json().getString("Id", r.json().getString("id"));
    if (id == null) {
      throw engine.failure(ErrorCode.COMMAND_FAILED, "snapshot", false, ProviderError.Outcome.UNKNOWN, null);
    }
    return id.startsWith("sha256:") ? id : "sha256:" + id;
  }

  /** The image of a snapshot this organization took; anything else is not found. */
  private String snapshotImage(String snapshotId, String organizationId) {
    DockerEngine.Response r = engine.get("create", "/images/" + DockerEngine.q(snapshotId) + "/json", CALL);
    JsonObject labels = r.ok() ? r.json().getJsonObject("Config", new JsonObject())
        .getJsonObject("Labels", new JsonObject()) : new JsonObject();
    if (labels == null || !organizationId.equals(labels.getString(ORGANIZATION))) {
      throw new ApiException(404, "snapshot not found");
    }
    return snapshotId;
  }

  @Override
  public void close() {
    timers.shutdownNow();
    engine.close();
  }
}
