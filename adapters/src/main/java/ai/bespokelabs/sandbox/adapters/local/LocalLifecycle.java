package ai.bespokelabs.sandbox.adapters.local;

import ai.bespokelabs.sandbox.core.bus.Messages.CreateSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.DestroySandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.Resource;
import ai.bespokelabs.sandbox.core.bus.Messages.SandboxDestroyed;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Creating, adopting, listing and destroying the sandboxes of a host backend. Runtimes live in this node's
 * memory ({@code runtimes}); without one a sandbox is destroyed from its provider resource id (its directory)
 * and its process records.
 */
final class LocalLifecycle {
  private static final Logger LOG = LoggerFactory.getLogger(LocalLifecycle.class);

  private final String backend;
  private final Clock clock;
  private final HostWrapper wrapper;
  private final Workdirs workdirs;
  private final HostUsers users;
  private final HostUsers.Held uids;
  private final SandboxDirs dirs;
  private final ProcessRecords records;
  private final ConcurrentMap<String, SandboxRuntime> runtimes;

  LocalLifecycle(String backend, Clock clock, HostWrapper wrapper, Workdirs workdirs, HostUsers users,
      HostUsers.Held uids, SandboxDirs dirs, ProcessRecords records, ConcurrentMap<String, SandboxRuntime> runtimes) {
    this.uids = uids;
    this.backend = backend;
    this.clock = clock;
    this.wrapper = wrapper;
    this.workdirs = workdirs;
    this.users = users;
    this.dirs = dirs;
    this.records = records;
    this.runtimes = runtimes;
  }

  /**
   * Uses {@code config.workdir} (never deleted) or creates {@code <root>/<sandboxId>} (owned); repeating a
   * create for the same sandbox returns the same directory.
   *
   * @throws ApiException 422 when the workdir is not an existing directory the operator allowed ({@link Workdirs})
   */
  String create(CreateSandbox request) {
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
      try {
        return new SandboxRuntime(dir, false, env, request.config(), clock.instant(),
            users.dropping() ? uids.allocate(null) : -1);
      } catch (RuntimeException e) {
        workdirs.release(dir);
        throw e;
      }
    }
    Path dir = dirs.create(sandboxId);
    int uid = -1;
    if (users.dropping()) {
      uid = uids.allocate(dir);
      try {
        dirs.own(dir, uid);
      } catch (RuntimeException e) {
        uids.release(uid);
        throw e;
      }
    }
    return new SandboxRuntime(dir, true, env, request.config(), clock.instant(), uid);
  }

  /**
   * Takes the sandbox's directory back (its own {@code <root>/<sandboxId>}, or the workdir it was created with
   * when the operator still allows it), so executions work again after a restart. A workdir is never owned.
   * Env vars are not restored: they were never stored.
   */
  String adopt(CreateSandbox request, String providerResourceId) {
    wrapper.check();
    String workdir = request.config().workdir();
    boolean owned = workdir == null;
    Path dir = owned ? dirs.ownedDirectory(request.sandboxId(), providerResourceId) : null;
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
      if (owned && uids.claim(SandboxDirs.ownerUid(dir), dir)) {
        return SandboxDirs.ownerUid(dir);
      }
    } catch (IOException e) {
      // given a new uid below
    }
    int uid = uids.allocate(owned ? dir : null);
    if (owned) {
      try {
        dirs.own(dir, uid);
      } catch (RuntimeException e) {
        uids.release(uid);
        throw e;
      }
    }
    return uid;
  }

  /**
   * The sandbox directories under the root or given as workdirs, and sandboxes with recorded processes but
   * no directory any more; every one is {@code running} (a local sandbox exists as long as its directory or
   * its processes do).
   */
  List<Resource> list() {
    Map<String, Resource> out = new java.util.TreeMap<>();
    dirs.list(out);
    for (String id : records.sandboxes()) {
      out.putIfAbsent(id, new Resource(dirs.root().resolve(id).toString(), id, "running", null));
    }
    runtimes.forEach((id, rt) -> {
      if (Files.isDirectory(rt.dir)) {
        out.putIfAbsent(id, new Resource(rt.dir.toString(), id, "running", null));
      }
    });
    return List.copyOf(out.values());
  }

  /**
   * Kills every process the sandbox's executions started and deletes its directory when owned; when the
   * sandbox ends because its time ran out ({@link DestroySandbox#expired()}), the executions still running end
   * as timed out (exit 124, a last stderr line saying why), otherwise as their kill left them. Works from
   * the durable process records too, so after the gateway was killed and restarted nothing the sandbox
   * started survives its destroy; without a runtime only the sandbox's own {@code <root>/<sandboxId>} is
   * deleted, never a workdir.
   */
  SandboxDestroyed destroy(DestroySandbox request) {
    SandboxRuntime runtime = runtimes.remove(request.sandboxId());
    List<Long> groups = runtime == null ? List.of() : runtime.close(request.expired());
    int killed = 0;
    if (runtime != null && groups.isEmpty() && wrapper.endsWithProgram()) {
      // every execution has ended, and with it everything it started: nothing to look for in /proc
      records.forget(request.sandboxId());
    } else if (SandboxDirs.isSandboxId(request.sandboxId())) {
      killed = records.killAll(request.sandboxId(), groups);
    } else {
      ProcessGroups.kill(groups);
    }
    if (runtime != null) {
      if (runtime.owned) {
        dirs.deleteTree(runtime.dir);
      } else {
        workdirs.release(runtime.dir);
      }
      if (runtime.uid >= 0) {
        uids.release(runtime.uid);
      }
      LOG.debug("destroyed local sandbox {} after {}", request.sandboxId(),
          Duration.between(runtime.createdAt, clock.instant()));
      return new SandboxDestroyed(false);
    }
    Path dir = dirs.ownedDirectory(request.sandboxId(), request.providerResourceId());
    if (dir == null) {
      return new SandboxDestroyed(killed == 0);
    }
    int owner = -1;
    try {
      owner = users.dropping() ? SandboxDirs.ownerUid(dir) : -1;
    } catch (IOException e) {
      // gone already, or unreadable: nothing to give back
    }
    dirs.deleteTree(dir);
    if (owner >= 0) {
      uids.release(owner); // taken when this node found the directory at its start
    }
    return new SandboxDestroyed(false);
  }

  /**
   * Kills every process group of every sandbox and forgets the runtimes: once this node's provider is
   * gone its sandboxes can only be destroyed, so nothing they started may outlive it. Directories stay
   * for destroy to remove, and the uids still held stay reserved for them ({@link HostUsers.Held#close}).
   */
  void close() {
    runtimes.keySet().forEach(id -> {
      SandboxRuntime runtime = runtimes.remove(id);
      if (runtime != null) {
        ProcessGroups.kill(runtime.close(false));
        if (!runtime.owned) {
          workdirs.release(runtime.dir);
        }
      }
    });
    uids.close();
  }
}
