package ai.bespokelabs.sandbox.adapters.local;

import ai.bespokelabs.sandbox.adapters.files.ReadableFile;
import ai.bespokelabs.sandbox.adapters.files.WritableFile;
import ai.bespokelabs.sandbox.adapters.host.BlockingProvider;
import ai.bespokelabs.sandbox.adapters.host.ExecHandle;
import ai.bespokelabs.sandbox.adapters.host.ExecSink;
import ai.bespokelabs.sandbox.adapters.spi.Capability;
import ai.bespokelabs.sandbox.core.model.FileEntry;
import ai.bespokelabs.sandbox.core.bus.Messages.CreateSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.DestroySandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.FileOp;
import ai.bespokelabs.sandbox.core.bus.Messages.MetricsRequest;
import ai.bespokelabs.sandbox.core.bus.Messages.Resource;
import ai.bespokelabs.sandbox.core.bus.Messages.SandboxDestroyed;
import ai.bespokelabs.sandbox.core.bus.Messages.SandboxMetrics;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;

/**
 * The {@code local} backend: a sandbox is a host directory and its executions are plain host processes
 * (no isolation beyond a clean environment and a working directory inside the sandbox). Runtimes live in
 * this node's memory, so the gateway ends its sandboxes when it stops, and at start those a killed run left;
 * without a runtime a sandbox is destroyed from its provider resource id (its directory) and its process
 * records.
 *
 * <p>{@link LocalLifecycle} creates, adopts, lists and destroys sandboxes (their directories:
 * {@link SandboxDirs}), {@link LocalExecutions} runs their programs, {@link HostFiles} serves their files and
 * {@link HostMetrics} measures them.
 */
public final class LocalProvider implements BlockingProvider {
  /** Metrics read processes from /proc: not offered where there is none (safehouse on macOS). */
  private static final Set<Capability> CAPABILITIES = Files.isDirectory(Path.of("/proc"))
      ? EnumSet.of(Capability.FILES, Capability.METRICS, Capability.ADOPT)
      : EnumSet.of(Capability.FILES, Capability.ADOPT);
  public static final String BACKEND = "local";

  /** Whether {@code local} executions run under a resident supervisor on this host ({@link SupervisorBinary}). */
  public static boolean supervised() {
    return SupervisorBinary.enabled() && SupervisorBinary.path().isPresent();
  }

  private final String backend;
  private final HostWrapper wrapper;
  private final Workdirs workdirs;
  private final HostUsers users;
  private final SandboxDirs dirs;
  private final ProcessRecords records;
  private final ConcurrentMap<String, SandboxRuntime> runtimes = new ConcurrentHashMap<>();
  private final LocalLifecycle lifecycle;
  private final LocalExecutions executions;
  /** Set when this node must not run the backend's programs (see {@link #disable}). */
  private volatile String disabled;

  /**
   * @param root the directory holding owned sandbox directories (created on first use)
   * @param clock the clock stamping sandbox creation
   */
  public LocalProvider(Path root, Clock clock) {
    this(BACKEND, root, clock, HostWrapper.NONE);
  }

  /** A host-process backend named {@code backend} whose programs run through {@code wrapper}; no workdirs. */
  public LocalProvider(String backend, Path root, Clock clock, HostWrapper wrapper) {
    this(backend, root, clock, wrapper, Workdirs.NONE);
  }

  /** As {@link #LocalProvider(String, Path, Clock, HostWrapper)}, with the host directories allowed as workdirs. */
  public LocalProvider(String backend, Path root, Clock clock, HostWrapper wrapper, Workdirs workdirs) {
    this(backend, root, clock, wrapper, workdirs, HostUsers.detect());
  }

  LocalProvider(String backend, Path root, Clock clock, HostWrapper wrapper, HostUsers users) {
    this(backend, root, clock, wrapper, Workdirs.NONE, users);
  }

  /** As {@link #LocalProvider(String, Path, Clock, HostWrapper, Workdirs)}, with the users its programs run as. */
  public LocalProvider(String backend, Path root, Clock clock, HostWrapper wrapper, Workdirs workdirs,
      HostUsers users) {
    this.users = users;
    this.backend = backend;
    this.wrapper = wrapper;
    this.workdirs = workdirs;
    ProcessRunner runner = new ProcessRunner(backend, wrapper.diesWithStartingThread());
    this.dirs = new SandboxDirs(root, backend);
    this.records = new ProcessRecords(dirs.root());
    Path runDir = dirs.root().resolve(".run");
    EnvHandOff.clear(runDir);
    HostUsers.Held uids = users.held(backend);
    if (users.dropping()) {
      dirs.claimExisting(wrapper, uids);
    }
    this.lifecycle = new LocalLifecycle(backend, clock, wrapper, workdirs, users, uids, dirs, records, runtimes);
    this.executions = new LocalExecutions(backend, wrapper, users, workdirs, runner, records, runtimes, dirs.root(),
        runDir);
  }

  @Override
  public String backend() {
    return backend;
  }

  @Override
  public Set<Capability> capabilities() {
    return CAPABILITIES;
  }

  @Override
  public ai.bespokelabs.sandbox.adapters.spi.PlacementFacts placement() {
    return wrapper.placement();
  }

  @Override
  public boolean nodeBound() {
    return true;
  }

  /**
   * From now on no sandbox is created and no program started ({@code backend_not_installed}): what keeps them
   * in their bounds is missing on this node, e.g. its sandbox egress rules. {@code reason} is shown as is by
   * {@code /v1/providers}.
   */
  public void disable(String reason) {
    disabled = java.util.Objects.requireNonNull(reason);
  }

  private void requireEnabled(String op) {
    String reason = disabled;
    if (reason != null) {
      throw new ProviderException(ProviderError.unavailable(backend, op, reason));
    }
  }

  @Override
  public java.util.Optional<String> unavailable() {
    if (disabled != null) {
      return java.util.Optional.of(disabled);
    }
    java.util.Optional<String> missing = wrapper.missing();
    return missing.isPresent() ? missing : users.missing();
  }

  /** See {@link LocalLifecycle#create}. */
  @Override
  public String create(CreateSandbox request) {
    requireEnabled("create");
    return lifecycle.create(request);
  }

  /** See {@link LocalLifecycle#adopt}. */
  @Override
  public String adopt(CreateSandbox request, String providerResourceId) {
    requireEnabled("adopt");
    return lifecycle.adopt(request, providerResourceId);
  }

  /** See {@link LocalLifecycle#list}. */
  @Override
  public List<Resource> list() {
    return lifecycle.list();
  }

  /** See {@link LocalLifecycle#destroy}. */
  @Override
  public SandboxDestroyed destroy(DestroySandbox request) {
    return lifecycle.destroy(request);
  }

  /** See {@link LocalLifecycle#close}. */
  @Override
  public void close() {
    lifecycle.close();
  }

  /** See {@link LocalExecutions#start}. */
  @Override
  public ExecHandle start(ExecSandbox request, ExecSink sink) {
    requireEnabled("execute");
    return executions.start(request, sink);
  }

  /** See {@link LocalExecutions#checkHealth}. */
  @Override
  public void checkHealth() {
    executions.checkHealth();
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
  public SandboxMetrics metrics(MetricsRequest request) {
    if (!SandboxDirs.isSandboxId(request.sandboxId())) {
      throw new ApiException(409, "sandbox directory is gone");
    }
    SandboxRuntime runtime = runtimes.get(request.sandboxId());
    Path dir = runtime != null ? runtime.dir : dirs.ownedDirectory(request.sandboxId(), request.providerResourceId());
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
    return new SandboxMetrics(usage.cpuPercent(),
        mb(usage.rssBytes()), request.memoryMb() == null ? null : request.memoryMb().doubleValue(),
        disk.isPresent() ? mb(disk.getAsDouble()) : null,
        request.diskMb() == null ? null : request.diskMb().doubleValue(), usage.processes());
  }

  /** Bytes as mebibytes, to two decimals. */
  static double mb(double bytes) {
    return Math.round(bytes / (1 << 20) * 100) / 100.0;
  }

  // ---- files -----------------------------------------------------------------------------------------

  /** The files of the sandbox's directory: its runtime's, else the directory its resource id names. */
  private HostFiles files(FileOp op) {
    SandboxRuntime runtime = runtimes.get(op.sandboxId());
    if (runtime != null) {
      workdirs.requireUnchanged(runtime);
    }
    // without a runtime only the sandbox's own directory: a stored workdir is not checked any more
    Path dir = runtime != null ? runtime.dir : dirs.ownedDirectory(op.sandboxId(), op.providerResourceId());
    if (dir == null || !Files.isDirectory(dir)) {
      throw new ApiException(409, "sandbox directory is gone");
    }
    return new HostFiles(dir, wrapper.insidePath(), dirs.root().resolve(".files-staging"));
  }

  @Override
  public List<FileEntry> listFiles(FileOp op) {
    return files(op).list(op.path());
  }

  @Override
  public ReadableFile openRead(FileOp op) {
    return files(op).openRead(op.path());
  }

  @Override
  public WritableFile openWrite(FileOp op) {
    return files(op).openWrite(op.path(), op.executable());
  }

  @Override
  public ReadableFile openArchiveRead(FileOp op) {
    return files(op).archiveRead(op.path());
  }

  @Override
  public WritableFile openArchiveWrite(FileOp op) {
    return files(op).archiveWrite(op.path());
  }

  @Override
  public void deleteFile(FileOp op) {
    files(op).delete(op.path(), op.recursive());
  }
}
