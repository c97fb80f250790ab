package ai.bespokelabs.sandbox.adapters.local;

import ai.bespokelabs.sandbox.adapters.ExecHandle;
import ai.bespokelabs.sandbox.adapters.ExecSink;
import ai.bespokelabs.sandbox.adapters.SandboxProvider;
import ai.bespokelabs.sandbox.core.bus.Messages.CreateSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.DestroySandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecResult;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.SandboxDestroyed;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import java.io.IOException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@code local} backend: a sandbox is a host directory and its executions are plain host processes
 * (no isolation beyond a clean environment and a working directory inside the sandbox). Runtimes live in
 * this node's memory, so after a control-plane restart a sandbox can still be destroyed from its provider
 * resource id (its directory) but no longer executed in.
 */
public final class LocalProvider implements SandboxProvider {
  public static final String BACKEND = "local";

  private static final Logger LOG = LoggerFactory.getLogger(LocalProvider.class);
  private static final Pattern SANDBOX_ID = Pattern.compile("[A-Za-z0-9_-]{1,128}");
  private static final int DELETE_ATTEMPTS = 3;

  private final Path root;
  private final Clock clock;
  private final String backend;
  private final HostWrapper wrapper;
  private final ProcessRunner runner;
  private final ProcessRecords records;
  private final ConcurrentMap<String, SandboxRuntime> runtimes = new ConcurrentHashMap<>();

  /**
   * @param root the directory holding owned sandbox directories (created on first use)
   * @param clock the clock stamping sandbox creation
   */
  public LocalProvider(Path root, Clock clock) {
    this(BACKEND, root, clock, HostWrapper.NONE);
  }

  /** A host-process backend named {@code backend} whose programs run through {@code wrapper}. */
  public LocalProvider(String backend, Path root, Clock clock, HostWrapper wrapper) {
    this.backend = backend;
    this.wrapper = wrapper;
    this.runner = new ProcessRunner(backend, wrapper.diesWithStartingThread());
    this.root = root.toAbsolutePath().normalize();
    this.records = new ProcessRecords(this.root);
    this.clock = clock;
  }

  @Override
  public String backend() {
    return backend;
  }

  @Override
  public boolean nodeBound() {
    return true;
  }

  /**
   * Uses {@code config.workdir} as is (never deleted) or creates {@code <root>/<sandboxId>} (owned);
   * repeating a create for the same sandbox returns the same directory.
   *
   * @throws ApiException 422 when the workdir is not an existing absolute directory
   */
  @Override
  public String create(CreateSandbox request) {
    wrapper.check();
    SandboxRuntime runtime = runtimes.computeIfAbsent(request.sandboxId(), id -> newRuntime(id, request));
    wrapper.prepare(runtime.dir, runtime.config);
    return runtime.dir.toString();
  }

  private SandboxRuntime newRuntime(String sandboxId, CreateSandbox request) {
    Map<String, String> env = request.config().envVars() == null ? Map.of() : request.config().envVars();
    String workdir = request.config().workdir();
    if (workdir != null) {
      return new SandboxRuntime(existingWorkdir(workdir), false, env, request.config(), clock.instant());
    }
    if (!SANDBOX_ID.matcher(sandboxId).matches()) {
      throw new IllegalArgumentException("sandbox id is not a safe directory name");
    }
    Path dir = root.resolve(sandboxId);
    try {
      Files.createDirectories(dir);
    } catch (IOException e) {
      throw new ProviderException(
          ProviderError.of(ErrorCode.CREATION_FAILED, backend, "create", false, ProviderError.Outcome.FAILED), e);
    }
    return new SandboxRuntime(dir, true, env, request.config(), clock.instant());
  }

  private static Path existingWorkdir(String workdir) {
    try {
      Path dir = Path.of(workdir);
      if (dir.isAbsolute() && Files.isDirectory(dir)) {
        return dir.normalize();
      }
    } catch (InvalidPathException ignored) {
      // rejected below like any other unusable workdir
    }
    throw new ApiException(422, "workdir must be an existing absolute directory");
  }

  /**
   * Starts the request in its sandbox. The process group stays tracked after the run while it still has
   * members (background processes), so destroy can kill it.
   *
   * @throws ApiException 409 when this node holds no runtime for the sandbox (e.g. after a restart)
   */
  @Override
  public ExecHandle start(ExecSandbox request, ExecSink sink) {
    SandboxRuntime runtime = runtimes.get(request.sandboxId());
    if (runtime == null) {
      throw new ApiException(409, "sandbox runtime is unavailable after a control-plane restart");
    }
    ProcessSpec spec = wrapper.wrap(ProcessSpec.of(runtime.dir, runtime.env, request), runtime.dir, runtime.config);
    java.util.concurrent.atomic.AtomicLong group = new java.util.concurrent.atomic.AtomicLong();
    ExecSink pruning = new ExecSink() {
      @Override
      public void output(Stream stream, byte[] data) throws InterruptedException {
        sink.output(stream, data);
      }

      @Override
      public void exited(int exitCode, boolean timedOut, boolean cancelled, long durationMs) {
        if (wrapper.endsWithProgram() && group.get() > 0) {
          runtime.untrack(group.get());
        } else {
          runtime.prune();
        }
        sink.exited(exitCode, timedOut, cancelled, durationMs);
      }
    };
    return runner.start(spec, request.keepStdin(), pruning, pgid -> {
      group.set(pgid);
      String previous = records.record(request.sandboxId(), pgid);
      SandboxRuntime earlier = previous == null ? null : runtimes.get(previous);
      if (earlier != null) {
        earlier.untrack(pgid); // its group with this id has ended: the id is this execution's now
      }
      if (!runtime.track(pgid)) {
        ProcessGroups.kill(List.of(pgid));
      }
    });
  }

  // ---- metrics ---------------------------------------------------------------------------------------

  /** How far apart the two CPU samples are. */
  static final long CPU_WINDOW_MS = 200;
  /** How long measuring the sandbox directory may take before its size is reported as unknown. */
  static final long DISK_WALK_BUDGET_MS = 2_000;

  /**
   * The processes of the sandbox's recorded process groups (from {@code /proc}: CPU over a 200 ms window,
   * memory as the sum of their RSS) and the size of its directory. The limits are those of the sandbox's
   * config (bwrap enforces {@code memory_mb} as an address-space limit per process; local enforces
   * neither). Hosts without {@code /proc} answer {@code feature_not_supported}.
   */
  @Override
  public ai.bespokelabs.sandbox.core.bus.Messages.SandboxMetrics metrics(
      ai.bespokelabs.sandbox.core.bus.Messages.MetricsRequest request) {
    if (!Files.isDirectory(Path.of("/proc"))) {
      throw unsupported("metrics"); // e.g. safehouse on macOS: no /proc to read processes from
    }
    if (!SANDBOX_ID.matcher(request.sandboxId()).matches()) {
      throw new ApiException(409, "sandbox directory is gone");
    }
    SandboxRuntime runtime = runtimes.get(request.sandboxId());
    Path dir = runtime != null ? runtime.dir : request.providerResourceId() == null ? null
        : Path.of(request.providerResourceId());
    if (dir == null || !Files.isDirectory(dir)) {
      throw new ApiException(409, "sandbox directory is gone");
    }
    HostMetrics.Usage usage;
    try {
      usage = HostMetrics.sample(() -> records.members(request.sandboxId()), CPU_WINDOW_MS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new ProviderException(
          ProviderError.of(ErrorCode.TIMEOUT, backend, "metrics", true, ProviderError.Outcome.FAILED), e);
    }
    var disk = HostMetrics.directoryBytes(dir, DISK_WALK_BUDGET_MS);
    return new ai.bespokelabs.sandbox.core.bus.Messages.SandboxMetrics(usage.cpuPercent(),
        mb(usage.rssBytes()), request.memoryMb() == null ? null : request.memoryMb().doubleValue(),
        disk.isPresent() ? mb(disk.getAsDouble()) : null,
        request.diskMb() == null ? null : request.diskMb().doubleValue(), usage.processes());
  }

  /** Bytes as mebibytes, to two decimals. */
  static double mb(double bytes) {
    return Math.round(bytes / (1 << 20) * 100) / 100.0;
  }

  /**
   * Takes the sandbox's directory back (an owned one directly under the root, or the workdir it was created
   * with), so executions work again after a restart. Env vars are not restored: they were never stored.
   */
  @Override
  public String adopt(CreateSandbox request, String providerResourceId) {
    wrapper.check();
    Path dir = ownedDirectory(providerResourceId);
    boolean owned = dir != null;
    if (!owned && request.config().workdir() != null && providerResourceId != null
        && Path.of(providerResourceId).normalize().equals(Path.of(request.config().workdir()).normalize())
        && Files.isDirectory(Path.of(providerResourceId))) {
      dir = Path.of(providerResourceId).normalize();
    }
    if (dir == null) {
      throw new ProviderException(ProviderError.of(ErrorCode.NOT_FOUND, backend, "adopt", false,
          ProviderError.Outcome.FAILED));
    }
    Path found = dir;
    SandboxRuntime runtime = runtimes.computeIfAbsent(request.sandboxId(),
        id -> new SandboxRuntime(found, owned, Map.of(), request.config(), clock.instant()));
    wrapper.prepare(runtime.dir, runtime.config);
    return runtime.dir.toString();
  }

  // ---- files -----------------------------------------------------------------------------------------

  /** The files of the sandbox's directory: its runtime's, else the directory its resource id names. */
  private HostFiles files(ai.bespokelabs.sandbox.core.bus.Messages.FileOp op) {
    SandboxRuntime runtime = runtimes.get(op.sandboxId());
    Path dir = runtime != null ? runtime.dir : op.providerResourceId() == null ? null
        : Path.of(op.providerResourceId());
    if (dir == null || !Files.isDirectory(dir)) {
      throw new ApiException(409, "sandbox directory is gone");
    }
    return new HostFiles(dir, wrapper.insidePath(), root.resolve(".files-staging"));
  }

  @Override
  public List<ai.bespokelabs.sandbox.adapters.files.FileEntry> listFiles(
      ai.bespokelabs.sandbox.core.bus.Messages.FileOp op) {
    return files(op).list(op.path());
  }

  @Override
  public ai.bespokelabs.sandbox.adapters.files.ReadableFile openRead(ai.bespokelabs.sandbox.core.bus.Messages.FileOp op) {
    return files(op).openRead(op.path());
  }

  @Override
  public ai.bespokelabs.sandbox.adapters.files.WritableFile openWrite(
      ai.bespokelabs.sandbox.core.bus.Messages.FileOp op) {
    return files(op).openWrite(op.path(), op.executable());
  }

  @Override
  public ai.bespokelabs.sandbox.adapters.files.ReadableFile openArchiveRead(
      ai.bespokelabs.sandbox.core.bus.Messages.FileOp op) {
    return files(op).archiveRead(op.path());
  }

  @Override
  public ai.bespokelabs.sandbox.adapters.files.WritableFile openArchiveWrite(
      ai.bespokelabs.sandbox.core.bus.Messages.FileOp op) {
    return files(op).archiveWrite(op.path());
  }

  @Override
  public void deleteFile(ai.bespokelabs.sandbox.core.bus.Messages.FileOp op) {
    files(op).delete(op.path(), op.recursive());
  }

  /**
   * The sandbox directories under the root or given as workdirs, and sandboxes with recorded processes but
   * no directory any more; every one is {@code running} (a local sandbox exists as long as its directory or
   * its processes do).
   */
  @Override
  public List<ai.bespokelabs.sandbox.core.bus.Messages.Resource> list() {
    java.util.Map<String, ai.bespokelabs.sandbox.core.bus.Messages.Resource> out = new java.util.TreeMap<>();
    if (Files.isDirectory(root)) {
      try (var dirs = Files.newDirectoryStream(root, p -> Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS))) {
        for (Path d : dirs) {
          String id = d.getFileName().toString();
          if (SANDBOX_ID.matcher(id).matches()) {
            out.put(id, new ai.bespokelabs.sandbox.core.bus.Messages.Resource(d.toString(), id, "running", null));
          }
        }
      } catch (IOException e) {
        throw new IllegalStateException("the sandboxes directory cannot be listed", e);
      }
    }
    for (String id : records.sandboxes()) {
      out.putIfAbsent(id, new ai.bespokelabs.sandbox.core.bus.Messages.Resource(root.resolve(id).toString(), id,
          "running", null));
    }
    runtimes.forEach((id, rt) -> {
      if (Files.isDirectory(rt.dir)) {
        out.putIfAbsent(id, new ai.bespokelabs.sandbox.core.bus.Messages.Resource(rt.dir.toString(), id, "running",
            null));
      }
    });
    return java.util.List.copyOf(out.values());
  }

  /** Spawns {@code true} in its own process group, as every execution does, within five seconds. */
  @Override
  public void checkHealth() {
    ai.bespokelabs.sandbox.adapters.CapturingSink sink = new ai.bespokelabs.sandbox.adapters.CapturingSink(1024);
    wrapper.check();
    ProcessSpec spec = wrapper.wrap(
        new ProcessSpec(List.of("true"), root, ProcessSpec.environment(root, Map.of(), Map.of()), 5, 1024), root, null);
    try {
      Files.createDirectories(root);
    } catch (IOException e) {
      throw new IllegalStateException("the sandboxes directory cannot be created", e);
    }
    runner.start(spec, false, sink, pgid -> { });
    ExecResult r = sink.await();
    if (r.exitCode() != 0) {
      throw new IllegalStateException("a test process exited with " + r.exitCode());
    }
  }

  /**
   * Kills every process the sandbox's executions started and deletes its directory when owned. Works from
   * the durable process records too, so after the gateway was killed and restarted nothing the sandbox
   * started survives its destroy; without a runtime only a directory directly under the root is deleted.
   */
  @Override
  public SandboxDestroyed destroy(DestroySandbox request) {
    SandboxRuntime runtime = runtimes.remove(request.sandboxId());
    List<Long> groups = runtime == null ? List.of() : runtime.close();
    int killed = 0;
    if (runtime != null && groups.isEmpty() && wrapper.endsWithProgram()) {
      // every execution has ended, and with it everything it started: nothing to look for in /proc
      records.forget(request.sandboxId());
    } else if (SANDBOX_ID.matcher(request.sandboxId()).matches()) {
      killed = records.killAll(request.sandboxId(), groups);
    } else {
      ProcessGroups.kill(groups);
    }
    if (runtime != null) {
      if (runtime.owned) {
        deleteTree(runtime.dir);
      }
      LOG.debug("destroyed local sandbox {} after {}", request.sandboxId(),
          Duration.between(runtime.createdAt, clock.instant()));
      return new SandboxDestroyed(false);
    }
    Path dir = ownedDirectory(request.providerResourceId());
    if (dir == null) {
      return new SandboxDestroyed(killed == 0);
    }
    deleteTree(dir);
    return new SandboxDestroyed(false);
  }

  /**
   * Kills every process group of every sandbox and forgets the runtimes: once this node's provider is
   * gone its sandboxes can only be destroyed, so nothing they started may outlive it. Directories stay
   * for destroy to remove.
   */
  @Override
  public void close() {
    runtimes.keySet().forEach(id -> {
      SandboxRuntime runtime = runtimes.remove(id);
      if (runtime != null) {
        ProcessGroups.kill(runtime.close());
      }
    });
  }

  /** The resource id as a directory directly under the root, or null when it is not one. */
  private Path ownedDirectory(String resourceId) {
    if (resourceId == null) {
      return null;
    }
    try {
      Path dir = Path.of(resourceId).toAbsolutePath().normalize();
      boolean under = root.equals(dir.getParent()) && Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS);
      return under ? dir : null;
    } catch (InvalidPathException e) {
      return null;
    }
  }

  /** Deletes {@code dir} and everything in it (symlinks are removed, never followed). */
  private void deleteTree(Path dir) {
    for (int attempt = 1; ; attempt++) {
      try {
        HostFiles.deleteTree(dir);
        return;
      } catch (NoSuchFileException e) {
        return;
      } catch (DirectoryNotEmptyException e) {
        if (attempt == DELETE_ATTEMPTS) {
          throw destroyFailed(e);
        }
        // a process killed a moment ago may still have been writing: walk again
      } catch (IOException e) {
        throw destroyFailed(e);
      }
    }
  }

  private ProviderException destroyFailed(IOException cause) {
    return new ProviderException(
        ProviderError.of(ErrorCode.COMMAND_FAILED, backend, "destroy", true, ProviderError.Outcome.UNKNOWN), cause);
  }
}
