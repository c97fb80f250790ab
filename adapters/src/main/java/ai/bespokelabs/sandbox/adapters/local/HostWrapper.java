package ai.bespokelabs.sandbox.adapters.local;

import ai.bespokelabs.sandbox.core.model.SandboxConfig;
import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * How a host-process backend runs a program: as it is ({@code local}), or inside an isolation tool
 * (bubblewrap, macOS safehouse) whose command line wraps the program's. Everything else — directories,
 * process groups, streaming, stdin, signals, timeouts — is shared.
 */
public interface HostWrapper {
  /** What a sandbox under this wrapper can be relied on for (a bare host process by default). */
  default ai.bespokelabs.sandbox.adapters.spi.PlacementFacts placement() {
    return ai.bespokelabs.sandbox.adapters.spi.PlacementFacts.NONE;
  }
  /**
   * What a wrapper needs to know of the sandbox a program runs in.
   *
   * @param dir the sandbox directory on the host
   * @param config the sandbox's settings; null for health probes
   * @param dropTo the command that drops to the sandbox's own uid ({@link HostUsers#dropTo}); empty when
   *     the gateway is not root
   * @param envFile the program's environment handed over by {@link EnvHandOff}; null when the program gets
   *     it directly
   */
  record HostSandbox(Path dir, SandboxConfig config, List<String> dropTo, Path envFile) {
    public HostSandbox {
      dropTo = List.copyOf(dropTo);
    }
  }

  /**
   * Runs programs directly on the host: as they are when the gateway is an ordinary user, else dropped to
   * the sandbox's uid with the environment read back only after the drop.
   */
  HostWrapper NONE = new HostWrapper() {
    @Override
    public java.util.Optional<String> missing() {
      return java.util.Optional.empty();
    }

    @Override
    public void check() {
    }

    @Override
    public boolean runsPlainCommandsDirectly() {
      return true;
    }

    @Override
    public ProcessSpec wrap(ProcessSpec spec, HostSandbox sandbox) {
      if (sandbox.envFile() == null) {
        return spec;
      }
      List<String> argv = new java.util.ArrayList<>(sandbox.dropTo());
      argv.addAll(EnvHandOff.loadFd(spec.argv()));
      return new ProcessSpec(argv, spec.cwd(), java.util.Map.of("PATH", ProcessSpec.BASE_PATH), spec.timeoutSecs(),
          spec.outputLimitBytes(), sandbox.envFile());
    }
  };

  /** Whether programs get their environment through a file ({@link EnvHandOff}) rather than directly. */
  default boolean envThroughFile(boolean dropping) {
    return dropping;
  }

  /**
   * Whether a command line of plain words may run as its program rather than under {@code bash -c}
   * ({@link PlainCommand}): the host's system directories are the program's, and the shell that loads a handed-over
   * environment sets {@code PWD}.
   */
  default boolean runsPlainCommandsDirectly() {
    return false;
  }

  /** The environment as the program sees it (paths inside the sandbox, for instance). */
  default java.util.Map<String, String> environment(java.util.Map<String, String> env, Path dir) {
    return env;
  }

  /**
   * What the host lacks to run this backend, as the sentence an operator acts on (the tool and the package that
   * brings it); empty when nothing is missing.
   */
  java.util.Optional<String> missing();

  /**
   * Fails with the contract's {@code backend_not_installed} error, {@link #missing()} as its message, when the
   * host cannot run this backend.
   */
  void check();

  /**
   * Where programs see the sandbox directory ({@code /sandbox} under bubblewrap); null when they see it at
   * its host path.
   */
  default String insidePath() {
    return null;
  }

  /**
   * Whether everything a program starts ends with it (the program runs as the init of its own PID namespace),
   * so a finished execution leaves no process behind for destroy to look for.
   */
  default boolean endsWithProgram() {
    return false;
  }

  /**
   * Whether the kernel kills a program when the thread that started it ends (a parent-death signal, as bwrap's
   * {@code --die-with-parent} sets): such programs must be started from threads that last.
   */
  default boolean diesWithStartingThread() {
    return false;
  }

  /** The spec to run for a program of {@code sandbox}. */
  ProcessSpec wrap(ProcessSpec spec, HostSandbox sandbox);

  /** Where system tools live; searched before {@code PATH} so a user's PATH cannot substitute them. */
  List<String> SYSTEM_BIN = List.of("/usr/bin", "/bin");

  /** The first executable {@code name} in {@code dirsFirst}, then on {@code PATH}, then in {@code dirsLast}. */
  static Optional<Path> findExecutable(String name, List<String> dirsFirst, List<String> dirsLast) {
    String path = System.getenv().getOrDefault("PATH", "");
    return Stream.of(dirsFirst.stream(), Stream.of(path.split(File.pathSeparator)), dirsLast.stream())
        .flatMap(d -> d)
        .filter(d -> !d.isEmpty())
        .map(d -> Path.of(d, name))
        .filter(Files::isExecutable)
        .findFirst();
  }
}
