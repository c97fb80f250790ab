package ai.bespokelabs.sandbox.adapters.bwrap;

import ai.bespokelabs.sandbox.adapters.local.HostWrapper;
import ai.bespokelabs.sandbox.adapters.local.ProcessSpec;
import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import ai.bespokelabs.sandbox.core.model.SandboxConfig;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Runs every program under bubblewrap as an unprivileged user with no capabilities in new pid, mount, ipc, uts
 * and cgroup namespaces, and a new network namespace unless the sandbox allows internet access. As an ordinary
 * user the gateway adds a user namespace (uid 65534 inside); as root it drops each program to its sandbox's own
 * host uid instead, so the process limit counts that sandbox alone; a read-only view of the system directories only, the
 * sandbox directory writable at {@code /sandbox}, a private {@code /tmp}, an environment made only of the
 * sandbox's variables, and resource limits (address space from {@code memory_mb}, CPU seconds, processes, open
 * files, file size) set with {@code prlimit}. Nothing of the gateway — its data directory, database, secrets
 * or other sandboxes — is mounted inside.
 */
public final class BwrapWrapper implements HostWrapper {
  public static final String BACKEND = "bwrap";
  static final String INSIDE = "/sandbox";
  static final List<String> SYSTEM_DIRS = List.of("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc");
  static final long MAX_PROCESSES = 512;
  static final long MAX_OPEN_FILES = 4096;
  static final long MAX_FILE_BYTES = 4L << 30;

  /** First host uid of the per-sandbox range used when the gateway runs as root. */
  static final int HOST_UID_BASE = 1_000_000;

  private final Optional<Path> bwrap;
  private final Optional<Path> prlimit;
  /** Present when the gateway runs as root: programs then run as a per-sandbox unprivileged host uid. */
  private final Optional<Path> setpriv;

  public BwrapWrapper() {
    this(HostWrapper.findExecutable("bwrap", HostWrapper.SYSTEM_BIN, List.of()),
        HostWrapper.findExecutable("prlimit", HostWrapper.SYSTEM_BIN, List.of()),
        isRoot() ? HostWrapper.findExecutable("setpriv", HostWrapper.SYSTEM_BIN, List.of()) : Optional.empty());
  }

  BwrapWrapper(Optional<Path> bwrap, Optional<Path> prlimit, Optional<Path> setpriv) {
    this.bwrap = bwrap;
    this.prlimit = prlimit;
    this.setpriv = setpriv;
  }

  private static boolean isRoot() {
    try {
      return ((Integer) Files.getAttribute(Path.of("/proc/self"), "unix:uid")) == 0;
    } catch (IOException | UnsupportedOperationException e) {
      return false;
    }
  }

  /** The unprivileged host uid (and gid) a sandbox's programs run as when the gateway is root. */
  static int hostUid(Path sandboxDir) {
    return HOST_UID_BASE + Math.floorMod(sandboxDir.getFileName().toString().hashCode(), 1 << 16);
  }

  /** As root, the sandbox directory belongs to the sandbox's uid from the start (files put in it follow). */
  @Override
  public void prepare(Path dir, SandboxConfig config) {
    if (setpriv.isPresent() && (config == null || config.workdir() == null)) {
      own(dir, hostUid(dir));
    }
  }

  @Override
  public String insidePath() {
    return INSIDE;
  }

  @Override
  public void check() {
    if (bwrap.isEmpty() || prlimit.isEmpty()) {
      throw new ProviderException(ProviderError.of(ErrorCode.BACKEND_NOT_INSTALLED, BACKEND, "create", false,
          ProviderError.Outcome.FAILED));
    }
  }

  /** {@code --die-with-parent}: the gateway ending ends its sandboxes' programs, and so would the starting thread. */
  @Override
  public boolean diesWithStartingThread() {
    return true;
  }

  /** Every program runs in a new PID namespace, which the kernel empties when the program ends. */
  @Override
  public boolean endsWithProgram() {
    return true;
  }

  @Override
  public ProcessSpec wrap(ProcessSpec spec, Path sandboxDir, SandboxConfig config) {
    check();
    Path dir = sandboxDir.toAbsolutePath().normalize();
    String cwd = INSIDE + "/" + dir.relativize(spec.cwd().toAbsolutePath().normalize());
    List<String> argv = new ArrayList<>();
    argv.add(prlimit.get().toString());
    if (config != null && config.memoryMb() != null) {
      argv.add("--as=" + ((long) config.memoryMb() << 20));
    }
    argv.add("--nproc=" + MAX_PROCESSES);
    argv.add("--nofile=" + MAX_OPEN_FILES);
    argv.add("--fsize=" + MAX_FILE_BYTES);
    argv.add("--cpu=" + Math.max(1, spec.timeoutSecs()) * cpus(config));
    argv.add("--");
    argv.add(bwrap.get().toString());
    boolean online = config == null || config.allowInternet() == null || config.allowInternet();
    argv.addAll(List.of("--die-with-parent", "--hostname", "sandbox"));
    if (setpriv.isPresent()) {
      // As root a user namespace would map the sandbox to host root, which no process limit binds. Instead bwrap
      // builds the namespaces with its privileges and setpriv drops to the sandbox's own uid with no capabilities,
      // so --nproc counts this sandbox's processes only (a fork bomb stays inside its sandbox).
      argv.addAll(List.of("--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"));
      if (!online) {
        argv.add("--unshare-net");
      }
    } else {
      argv.addAll(List.of("--unshare-all", "--uid", "65534", "--gid", "65534", "--cap-drop", "ALL"));
      if (online) {
        argv.add("--share-net");
      }
    }
    for (String d : SYSTEM_DIRS) {
      argv.addAll(List.of("--ro-bind-try", d, d));
    }
    argv.addAll(List.of("--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--tmpfs", "/tmp",
        "--bind", dir.toString(), INSIDE, "--chdir", cwd.endsWith("/") ? cwd.substring(0, cwd.length() - 1) : cwd,
        "--clearenv"));
    for (Map.Entry<String, String> e : inside(spec.env(), dir).entrySet()) {
      argv.addAll(List.of("--setenv", e.getKey(), e.getValue()));
    }
    argv.add("--");
    if (setpriv.isPresent()) {
      int uid = hostUid(dir);
      if (config == null || config.workdir() == null) {
        own(dir, uid); // a workdir the caller gave keeps its owner and permissions
      }
      argv.addAll(List.of(setpriv.get().toString(), "--reuid=" + uid, "--regid=" + uid, "--clear-groups",
          "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--"));
    }
    argv.addAll(spec.argv());
    return new ProcessSpec(argv, dir, Map.of("PATH", ProcessSpec.BASE_PATH), spec.timeoutSecs(),
        spec.outputLimitBytes());
  }

  /** Gives the sandbox directory to the uid its programs run as (once; their files are theirs already). */
  private static void own(Path dir, int uid) {
    try {
      if (((Integer) Files.getAttribute(dir, "unix:uid")) != uid) {
        Files.setAttribute(dir, "unix:uid", uid);
        Files.setAttribute(dir, "unix:gid", uid);
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot hand the sandbox directory to its uid", e);
    }
  }

  /** The environment as seen inside: the sandbox directory is {@code /sandbox}, temporary files in /tmp. */
  static Map<String, String> inside(Map<String, String> env, Path dir) {
    Map<String, String> out = new java.util.LinkedHashMap<>(env);
    out.replaceAll((k, v) -> v.equals(dir.toString()) ? INSIDE : v);
    out.put("HOME", INSIDE);
    out.put("TMPDIR", "/tmp");
    return out;
  }

  /** CPU seconds a run may use: its timeout times the sandbox's CPUs (at least one). */
  private static long cpus(SandboxConfig config) {
    return config == null || config.cpu() == null ? 1 : Math.max(1, (long) Math.ceil(config.cpu()));
  }
}
