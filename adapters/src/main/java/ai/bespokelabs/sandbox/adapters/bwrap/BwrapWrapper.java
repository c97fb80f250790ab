package ai.bespokelabs.sandbox.adapters.bwrap;

import ai.bespokelabs.sandbox.adapters.local.HostWrapper;
import ai.bespokelabs.sandbox.adapters.local.ProcessSpec;
import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import ai.bespokelabs.sandbox.core.model.SandboxConfig;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Runs every program under bubblewrap as an unprivileged user (uid 65534, no capabilities) in new pid, mount,
 * ipc, uts, cgroup and user namespaces, and a new network
 * namespace unless the sandbox allows internet access; a read-only view of the system directories only, the
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

  private final Optional<Path> bwrap;
  private final Optional<Path> prlimit;

  public BwrapWrapper() {
    this(HostWrapper.findExecutable("bwrap", HostWrapper.SYSTEM_BIN, List.of()),
        HostWrapper.findExecutable("prlimit", HostWrapper.SYSTEM_BIN, List.of()));
  }

  BwrapWrapper(Optional<Path> bwrap, Optional<Path> prlimit) {
    this.bwrap = bwrap;
    this.prlimit = prlimit;
  }

  @Override
  public void check() {
    if (bwrap.isEmpty() || prlimit.isEmpty()) {
      throw new ProviderException(ProviderError.of(ErrorCode.BACKEND_NOT_INSTALLED, BACKEND, "create", false,
          ProviderError.Outcome.FAILED));
    }
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
    argv.addAll(List.of("--die-with-parent", "--unshare-all", "--hostname", "sandbox",
        "--uid", "65534", "--gid", "65534", "--cap-drop", "ALL"));
    if (config == null || config.allowInternet() == null || config.allowInternet()) {
      argv.add("--share-net");
    }
    for (String d : SYSTEM_DIRS) {
      argv.addAll(List.of("--ro-bind-try", d, d));
    }
    argv.addAll(List.of("--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
        "--bind", dir.toString(), INSIDE, "--chdir", cwd.endsWith("/") ? cwd.substring(0, cwd.length() - 1) : cwd,
        "--clearenv"));
    for (Map.Entry<String, String> e : inside(spec.env(), dir).entrySet()) {
      argv.addAll(List.of("--setenv", e.getKey(), e.getValue()));
    }
    argv.add("--");
    argv.addAll(spec.argv());
    return new ProcessSpec(argv, dir, Map.of("PATH", ProcessSpec.BASE_PATH), spec.timeoutSecs(),
        spec.outputLimitBytes());
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
