package ai.bespokelabs.sandbox.adapters.local;

import ai.bespokelabs.sandbox.adapters.host.ExecHandle;
import ai.bespokelabs.sandbox.adapters.host.ExecSink;
import ai.bespokelabs.sandbox.adapters.spi.OutputSink.Stream;
import ai.bespokelabs.sandbox.adapters.host.BlockingProvider;
import ai.bespokelabs.sandbox.adapters.exec.Timeouts;
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
 * this node's memory, so the gateway ends its sandboxes when it stops, and at start those a killed run left;
 * without a runtime a sandbox is destroyed from its provider resource id (its directory) and its process
 * records.
 */
public final class LocalProvider implements BlockingProvider {
  /** Metrics read processes from /proc: not offered where there is none (safehouse on macOS). */
  private static final java.util.Set<ai.bespokelabs.sandbox.adapters.spi.Capability> CAPABILITIES =
      Files.isDirectory(Path.of("/proc"))
          ? java.util.EnumSet.of(ai.bespokelabs.sandbox.adapters.spi.Capability.FILES,
              ai.bespokelabs.sandbox.adapters.spi.Capability.METRICS, ai.bespokelabs.sandbox.adapters.spi.Capability.ADOPT)
          : java.util.EnumSet.of(ai.bespokelabs.sandbox.adapters.spi.Capability.FILES,
              ai.bespokelabs.sandbox.adapters.spi.Capability.ADOPT);
  public static final String BACKEND = "local";

  private static final Logger LOG = LoggerFactory.getLogger(LocalProvider.class);
  private static final Pattern SANDBOX_ID = Pattern.compile("[A-Za-z0-9_-]{1,128}");
  private static final int DELETE_ATTEMPTS = 3;

  private final Path root;
  private final Clock clock;
  private final String backend;
  private final HostWrapper wrapper;
  private final Workdirs workdirs;
  private final ProcessRunner runner;
  private final ProcessRecords records;
  private final HostUsers users;
  /** Where environments wait for the programs they belong to ({@link EnvHandOff}); private to the gateway. */
  private final Path runDir;
  private final ConcurrentMap<String, SandboxRuntime> runtimes = new ConcurrentHashMap<>();

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

  LocalProvider(String backend, Path root, Clock clock, HostWrapper wrapper, Workdirs workdirs, HostUsers users) {
    this.users = users;
    this.backend = backend;
    this.wrapper = wrapper;
    this.workdirs = workdirs;
    this.runner = new ProcessRunner(backend, wrapper.diesWithStartingThread());
    this.root = root.toAbsolutePath().normalize();
    this.records = new ProcessRecords(this.root);
    this.clock = clock;
    this.runDir = this.root.resolve(".run");
    EnvHandOff.clear(runDir);
    if (users.dropping()) {
      claimExisting();
    }
  }

  /**
   * As root: the sandboxes root is traversable (programs reach their own directory by its path) but not
   * listable, and the uids of the directories left by an earlier run stay taken.
   */
  private void claimExisting() {
    try {
      Files.createDirectories(root);
      Files.setPosixFilePermissions(root, java.nio.file.attribute.PosixFilePermissions.fromString("rwx--x--x"));
      try (var dirs = Files.newDirectoryStream(root, p -> Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS))) {
        for (Path d : dirs) {
          if (SANDBOX_ID.matcher(d.getFileName().toString()).matches()) {
            HostUsers.claim(ownerUid(d));
          }
        }
      }
    } catch (IOException e) {
      LOG.warn("cannot prepare the {} sandboxes directory {}: {}", backend, root, e.toString());
    }
    if (wrapper == HostWrapper.NONE) {
      for (Path p = root.getParent(); p != null; p = p.getParent()) {
        try {
          if (!Files.getPosixFilePermissions(p).contains(java.nio.file.attribute.PosixFilePermission.OTHERS_EXECUTE)) {
            LOG.warn("{} programs run as unprivileged uids, which cannot traverse {}: they reach their sandbox"
                + " directory only as their working directory (keep BESPOKE_DATA_DIR on a traversable path)", backend, p);
            break;
          }
        } catch (IOException | UnsupportedOperationException ignored) {
          break;
        }
      }
    }
  }

  private static int ownerUid(Path p) throws IOException {
    return (Integer) Files.getAttribute(p, "unix:uid", LinkOption.NOFOLLOW_LINKS);
  }

  /**
   * As root, gives an owned sandbox directory to the uid its programs run as, readable by nobody else; a
   * workdir the operator allowed keeps its owner and permissions.
   */
  private void own(Path dir, int uid) {
    try {
      if (ownerUid(dir) != uid) {
        Files.setAttribute(dir, "unix:uid", uid, LinkOption.NOFOLLOW_LINKS);
        Files.setAttribute(dir, "unix:gid", uid, LinkOption.NOFOLLOW_LINKS);
      }
      Files.setPosixFilePermissions(dir, java.nio.file.attribute.PosixFilePermissions.fromString("rwx------"));
    } catch (IOException e) {
      throw new ProviderException(
          ProviderError.of(ErrorCode.CREATION_FAILED, backend, "create", false, ProviderError.Outcome.FAILED), e);
    }
  }

  @Override
  public String backend() {
    return backend;
  }

  @Override
  public java.util.Set<ai.bespokelabs.sandbox.adapters.spi.Capability> capabilities() {
    return CAPABILITIES;
  }

  @Override
  public boolean nativeArchives() {
    return true;
  }

  @Override
  public boolean nodeBound() {
    return true;
  }

  @Override
  public boolean installed() {
    try {
      wrapper.check();
      users.check(backend);
      return true;
    } catch (ProviderException e) {
      return false;
    }
  }

  /**
   * Uses {@code config.workdir} (never deleted) or creates {@code <root>/<sandboxId>} (owned); repeating a
   * create for the same sandbox returns the same directory.
   *
   * @throws ApiException 422 when the workdir is not an existing directory the operator allowed ({@link Workdirs})
   */
  @Override
  public String create(CreateSandbox request) {
    wrapper.check();
    users.check(backend);
    SandboxRuntime runtime = runtimes.computeIfAbsent(request.sandboxId(), id -> newRuntime(id, request));
    return runtime.dir.toString();
  }

  private SandboxRuntime newRuntime(String sandboxId, CreateSandbox request) {
    Map<String, String> env = request.config().envVars() == null ? Map.of() : request.config().envVars();
    String workdir = request.config().workdir();
    if (workdir != null) {
      Path dir = workdirs.claim(workdirs.resolve(workdir));
      return new SandboxRuntime(dir, false, env, request.config(), clock.instant(),
          users.dropping() ? HostUsers.allocate() : -1);
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
    int uid = -1;
    if (users.dropping()) {
      uid = HostUsers.allocate();
      try {
        own(dir, uid);
      } catch (RuntimeException e) {
        HostUsers.release(uid);
        throw e;
      }
    }
    return new SandboxRuntime(dir, true, env, request.config(), clock.instant(), uid);
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
    requireWorkdirUnchanged(runtime);
    ProcessSpec plain = ProcessSpec.of(runtime.dir, runtime.env, request);
    if (users.dropping() && wrapper == HostWrapper.NONE && ProcessRunner.program(plain).isEmpty()) {
      // started by a shell after the drop, a missing program would only exit 127: fail as a direct start does
      throw runner.failure(ErrorCode.EXECUTION_FAILED, ProviderError.Outcome.FAILED, null);
    }
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
        if (!timedOut && exitCode != 0 && runtime.expired()) {
          // killed because the sandbox's time ran out: a timeout, as the program's own would be
          try {
            sink.output(Stream.STDERR, Timeouts.sandboxMessage(durationMs));
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
          sink.exited(Timeouts.EXIT_CODE, true, false, durationMs);
          return;
        }
        sink.exited(exitCode, timedOut, cancelled, durationMs);
      }
    };
    return launch(plain, runtime.dir, runtime.config, runtime.uid, request.keepStdin(), pruning, pgid -> {
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

  /** A workdir is used only while its path still leads where it led when the sandbox was created. */
  private void requireWorkdirUnchanged(SandboxRuntime runtime) {
    if (!runtime.owned && !workdirs.stillAt(runtime.config.workdir(), runtime.dir)) {
      throw new ApiException(409, "the sandbox's workdir changed since it was created");
    }
  }

  /**
   * Starts {@code plain} through the wrapper as {@code uid} (when the gateway is root), its environment handed
   * over by {@link EnvHandOff} where the wrapper takes it so; a handed-over file that no program took is
   * removed.
   */
  private ExecHandle launch(ProcessSpec plain, Path dir, ai.bespokelabs.sandbox.core.model.SandboxConfig config,
      int uid, boolean keepStdin, ExecSink sink, java.util.function.LongConsumer started) {
    Path envFile = wrapper.envThroughFile(users.dropping())
        ? EnvHandOff.write(runDir, wrapper.environment(plain.env(), dir), uid) : null;
    try {
      return runner.start(wrapper.wrap(plain, new HostWrapper.HostSandbox(dir, config, users.dropTo(uid), envFile)),
          keepStdin, sink, started);
    } catch (RuntimeException e) {
      if (envFile != null) {
        EnvHandOff.discard(envFile);
      }
      throw e;
    }
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
    if (!SANDBOX_ID.matcher(request.sandboxId()).matches()) {
      throw new ApiException(409, "sandbox directory is gone");
    }
    SandboxRuntime runtime = runtimes.get(request.sandboxId());
    Path dir = runtime != null ? runtime.dir : ownedDirectory(request.sandboxId(), request.providerResourceId());
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
   * Takes the sandbox's directory back (its own {@code <root>/<sandboxId>}, or the workdir it was created with
   * when the operator still allows it), so executions work again after a restart. A workdir is never owned.
   * Env vars are not restored: they were never stored.
   */
  @Override
  public String adopt(CreateSandbox request, String providerResourceId) {
    wrapper.check();
    String workdir = request.config().workdir();
    boolean owned = workdir == null;
    Path dir = owned ? ownedDirectory(request.sandboxId(), providerResourceId) : null;
    if (!owned && providerResourceId != null) {
      try {
        Path allowed = workdirs.resolve(workdir);
        dir = allowed.equals(workdirs.resolve(providerResourceId)) && !runtimes.containsKey(request.sandboxId())
            ? workdirs.claim(allowed) : null;
      } catch (ApiException refused) {
        // no longer a directory the operator allows: nothing to take back
      }
    }
    if (dir == null) {
      throw new ProviderException(ProviderError.of(ErrorCode.NOT_FOUND, backend, "adopt", false,
          ProviderError.Outcome.FAILED));
    }
    Path found = dir;
    SandboxRuntime runtime = runtimes.computeIfAbsent(request.sandboxId(),
        id -> new SandboxRuntime(found, owned, Map.of(), request.config(), clock.instant(), adoptedUid(found, owned)));
    return runtime.dir.toString();
  }

  /** As root, the uid an adopted directory's programs run as: its owner's when in range, else a new one. */
  private int adoptedUid(Path dir, boolean owned) {
    if (!users.dropping()) {
      return -1;
    }
    try {
      if (owned && HostUsers.claim(ownerUid(dir))) {
        return ownerUid(dir);
      }
    } catch (IOException e) {
      // given a new uid below
    }
    int uid = HostUsers.allocate();
    if (owned) {
      own(dir, uid);
    }
    return uid;
  }

  // ---- files -----------------------------------------------------------------------------------------

  /** The files of the sandbox's directory: its runtime's, else the directory its resource id names. */
  private HostFiles files(ai.bespokelabs.sandbox.core.bus.Messages.FileOp op) {
    SandboxRuntime runtime = runtimes.get(op.sandboxId());
    if (runtime != null) {
      requireWorkdirUnchanged(runtime);
    }
    // without a runtime only the sandbox's own directory: a stored workdir is not checked any more
    Path dir = runtime != null ? runtime.dir : ownedDirectory(op.sandboxId(), op.providerResourceId());
    if (dir == null || !Files.isDirectory(dir)) {
      throw new ApiException(409, "sandbox directory is gone");
    }
    return new HostFiles(dir, wrapper.insidePath(), root.resolve(".files-staging"));
  }

  @Override
  public List<ai.bespokelabs.sandbox.adapters.spi.FileEntry> listFiles(
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
    ai.bespokelabs.sandbox.adapters.host.CapturingSink sink = new ai.bespokelabs.sandbox.adapters.host.CapturingSink(1024);
    wrapper.check();
    users.check(backend);
    try {
      Files.createDirectories(root);
    } catch (IOException e) {
      throw new IllegalStateException("the sandboxes directory cannot be created", e);
    }
    launch(new ProcessSpec(List.of("true"), root, ProcessSpec.environment(root, Map.of(), Map.of()), 5, 1024), root,
        null, HostUsers.PROBE_UID, false, sink, pgid -> { });
    ExecResult r = sink.await();
    if (r.exitCode() != 0) {
      throw new IllegalStateException("a test process exited with " + r.exitCode());
    }
  }

  /**
   * Kills every process the sandbox's executions started and deletes its directory when owned; when the
   * sandbox ends because its time ran out ({@link DestroySandbox#expired()}), the executions still running end
   * as timed out (exit 124, a last stderr line saying why), otherwise as their kill left them. Works from
   * the durable process records too, so after the gateway was killed and restarted nothing the sandbox
   * started survives its destroy; without a runtime only the sandbox's own {@code <root>/<sandboxId>} is
   * deleted, never a workdir.
   */
  @Override
  public SandboxDestroyed destroy(DestroySandbox request) {
    SandboxRuntime runtime = runtimes.remove(request.sandboxId());
    List<Long> groups = runtime == null ? List.of() : runtime.close(request.expired());
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
      } else {
        workdirs.release(runtime.dir);
      }
      if (runtime.uid >= 0) {
        HostUsers.release(runtime.uid);
      }
      LOG.debug("destroyed local sandbox {} after {}", request.sandboxId(),
          Duration.between(runtime.createdAt, clock.instant()));
      return new SandboxDestroyed(false);
    }
    Path dir = ownedDirectory(request.sandboxId(), request.providerResourceId());
    if (dir == null) {
      return new SandboxDestroyed(killed == 0);
    }
    int owner = -1;
    try {
      owner = users.dropping() ? ownerUid(dir) : -1;
    } catch (IOException e) {
      // gone already, or unreadable: nothing to give back
    }
    deleteTree(dir);
    if (owner >= 0) {
      HostUsers.release(owner); // taken when this node found the directory at its start
    }
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
        ProcessGroups.kill(runtime.close(false));
        if (!runtime.owned) {
          workdirs.release(runtime.dir);
        }
      }
    });
  }

  /**
   * The resource id as the directory this backend created for the sandbox ({@code <root>/<sandboxId>}), or null
   * when it is anything else: another sandbox's directory or a workdir is never the sandbox's to delete.
   */
  private Path ownedDirectory(String sandboxId, String resourceId) {
    if (resourceId == null || !SANDBOX_ID.matcher(sandboxId).matches()) {
      return null;
    }
    try {
      Path dir = Path.of(resourceId).toAbsolutePath().normalize();
      boolean own = dir.equals(root.resolve(sandboxId)) && Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS);
      return own ? dir : null;
    } catch (InvalidPathException e) {
      return null;
    }
  }

  /** Deletes {@code dir} and everything in it (symlinks are removed, never followed). */
  private void deleteTree(Path dir) {
    for (int attempt = 1; ; attempt++) {
      try {
        HostDeletes.deleteTree(dir);
        return;
      } catch (NoSuchFileException e) {
        return;
      } catch (DirectoryNotEmptyException e) {
        if (attempt == DELETE_ATTEMPTS) {
          throw destroyFailed(e);
        }
        // a process killed a moment ago may still have been writing: walk again
      } catch (HostDeletes.TooDeep e) {
        removeDeepTree(dir, e);
        return;
      } catch (IOException e) {
        throw destroyFailed(e);
      }
    }
  }

  /**
   * A tree deeper than a delete through handles goes (a sandbox can nest directories thousands deep) is removed
   * by {@code rm -rf}, which walks any depth without following links; the directory is the sandbox's own, under
   * the gateway's root, so nothing the sandbox controls is on the path to it.
   */
  private void removeDeepTree(Path dir, IOException cause) {
    try {
      Process rm = new ProcessBuilder("rm", "-rf", "--one-file-system", "--", dir.toString())
          .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
      if (rm.waitFor() != 0 || Files.exists(dir, LinkOption.NOFOLLOW_LINKS)) {
        throw destroyFailed(cause);
      }
    } catch (IOException e) {
      throw destroyFailed(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw destroyFailed(cause);
    }
  }

  private ProviderException destroyFailed(IOException cause) {
    return new ProviderException(
        ProviderError.of(ErrorCode.COMMAND_FAILED, backend, "destroy", true, ProviderError.Outcome.UNKNOWN), cause);
  }
}
