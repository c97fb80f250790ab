package ai.bespokelabs.sandbox.adapters.bwrap;

import ai.bespokelabs.sandbox.adapters.local.EnvHandOff;
import ai.bespokelabs.sandbox.adapters.local.HostWrapper;
import ai.bespokelabs.sandbox.adapters.local.ProcessSpec;
import ai.bespokelabs.sandbox.core.error.ProviderError;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import ai.bespokelabs.sandbox.core.model.SandboxConfig;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Runs every program under bubblewrap in new pid, mount, ipc, uts and cgroup namespaces, and a new network
 * namespace unless the sandbox allows internet access, with a read-only view of the system directories only,
 * the sandbox directory writable at {@code /sandbox}, a private {@code /tmp}, and resource limits (address
 * space from {@code memory_mb}, CPU seconds, processes, open files, file size) set with {@code prlimit}.
 * Nothing of the gateway — its data directory, database socket, secrets or other sandboxes — is mounted inside.
 *
 * <p>As an ordinary user the gateway adds a user namespace (uid 65534 inside, no capabilities). As root,
 * bubblewrap builds the namespaces with only the capabilities needed to change user, and {@code setpriv}
 * drops the program to its sandbox's own host uid with no capabilities and {@code no_new_privs}, so the
 * process limit counts that sandbox alone. In both cases the tenant's environment is neither on a command
 * line nor seen by any helper that runs before the drop: it is copied into the sandbox as a read-only file
 * ({@link EnvHandOff}) and read back by the shell that starts the program.
 */
public final class BwrapWrapper implements HostWrapper {
  public static final String BACKEND = "bwrap";

  /** Namespaces of its own; {@code allow_internet: false} gives it a network namespace with only loopback. */
  @Override
  public ai.bespokelabs.sandbox.adapters.spi.PlacementFacts placement() {
    return new ai.bespokelabs.sandbox.adapters.spi.PlacementFacts(
        ai.bespokelabs.sandbox.adapters.spi.PlacementFacts.Isolation.NAMESPACE, false, false, false, true);
  }
  static final String INSIDE = "/sandbox";
  static final List<String> SYSTEM_DIRS = List.of("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc");
  static final long MAX_PROCESSES = 512;
  static final long MAX_OPEN_FILES = 4096;
  static final long MAX_FILE_BYTES = 4L << 30;

  private final Optional<Path> bwrap;
  private final Optional<Path> prlimit;
  private final List<Path> hidden;

  public BwrapWrapper() {
    this(List.of());
  }

  /**
   * A wrapper whose sandboxes never see the files {@code hidden} (the gateway's own secrets, such as the cluster
   * node's key), even where they lie in a system directory the sandbox sees: each is replaced by an empty file.
   * Without it a sandbox of a non-root gateway, which runs as the gateway's own user, could read them.
   */
  public BwrapWrapper(List<Path> hidden) {
    this(HostWrapper.findExecutable("bwrap", HostWrapper.SYSTEM_BIN, List.of()),
        HostWrapper.findExecutable("prlimit", HostWrapper.SYSTEM_BIN, List.of()), hidden);
  }

  BwrapWrapper(Optional<Path> bwrap, Optional<Path> prlimit) {
    this(bwrap, prlimit, List.of());
  }

  BwrapWrapper(Optional<Path> bwrap, Optional<Path> prlimit, List<Path> hidden) {
    this.bwrap = bwrap;
    this.prlimit = prlimit;
    this.hidden = hidden.stream().map(p -> p.toAbsolutePath().normalize()).distinct().toList();
  }

  @Override
  public String insidePath() {
    return INSIDE;
  }

  @Override
  public Optional<String> missing() {
    if (bwrap.isEmpty()) {
      return Optional.of("bwrap is not installed on this host (Debian/Ubuntu: apt-get install bubblewrap)");
    }
    if (prlimit.isEmpty()) {
      return Optional.of("prlimit is not installed on this host (Debian/Ubuntu: apt-get install util-linux)");
    }
    return Optional.empty();
  }

  @Override
  public void check() {
    Optional<String> missing = missing();
    if (missing.isPresent()) {
      throw new ProviderException(ProviderError.unavailable(BACKEND, "create", missing.get()));
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

  /** Always: bubblewrap's own {@code --setenv} would put the values on its command line. */
  @Override
  public boolean envThroughFile(boolean dropping) {
    return true;
  }

  /** The system directories are bound read-only at their own paths, so a plain command finds the same program. */
  @Override
  public boolean runsPlainCommandsDirectly() {
    return true;
  }

  @Override
  public Map<String, String> environment(Map<String, String> env, Path dir) {
    return inside(env, dir.toAbsolutePath().normalize());
  }

  @Override
  public ProcessSpec wrap(ProcessSpec spec, HostSandbox sandbox) {
    check();
    if (sandbox.envFile() == null) {
      throw new IllegalArgumentException("bwrap programs get their environment through a file");
    }
    SandboxConfig config = sandbox.config();
    Path dir = sandbox.dir().toAbsolutePath().normalize();
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
    if (!sandbox.dropTo().isEmpty()) {
      // As root a user namespace would map the sandbox to host root, which no process limit binds. Instead bwrap
      // builds the namespaces keeping only what changing user needs, and setpriv drops to the sandbox's own uid,
      // so --nproc counts this sandbox's processes only (a fork bomb stays inside its sandbox).
      argv.addAll(List.of("--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
          "--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_SETPCAP"));
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
    for (Path h : hidden) {
      // over the system directories' binds; the real path, since a sandbox sees links resolved the same way
      Path real;
      try {
        real = h.toRealPath();
      } catch (java.io.IOException gone) {
        continue;
      }
      if (SYSTEM_DIRS.stream().anyMatch(d -> real.startsWith(d) || h.startsWith(d))) {
        argv.addAll(List.of("--ro-bind", "/dev/null", real.toString()));
        if (!real.equals(h)) {
          argv.addAll(List.of("--ro-bind-try", "/dev/null", h.toString()));
        }
      }
    }
    argv.addAll(List.of("--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--tmpfs", "/tmp",
        "--bind", dir.toString(), INSIDE, "--perms", "0444", "--ro-bind-data", "3", EnvHandOff.INSIDE_FILE,
        "--clearenv", "--setenv", "PATH", ProcessSpec.BASE_PATH, "--"));
    argv.addAll(sandbox.dropTo());
    // the working directory is entered after the drop: as root, bwrap keeps no right to enter the sandbox's
    argv.addAll(EnvHandOff.loadFile(cwd.endsWith("/") ? cwd.substring(0, cwd.length() - 1) : cwd, spec.argv()));
    return new ProcessSpec(argv, dir, Map.of("PATH", ProcessSpec.BASE_PATH), spec.timeoutSecs(),
        spec.outputLimitBytes(), sandbox.envFile());
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
