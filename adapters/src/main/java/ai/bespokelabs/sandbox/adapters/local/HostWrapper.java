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
  /** Runs programs directly on the host. */
  HostWrapper NONE = new HostWrapper() {
    @Override
    public void check() {
    }

    @Override
    public ProcessSpec wrap(ProcessSpec spec, Path sandboxDir, SandboxConfig config) {
      return spec;
    }
  };

  /**
   * Fails with the contract's {@code backend_not_installed} error when the host cannot run this backend.
   */
  void check();

  /** Readies a new sandbox's directory (e.g. its owner) before anything is run or put in it. */
  default void prepare(Path sandboxDir, SandboxConfig config) {
  }

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

  /** The spec to run for a program of a sandbox rooted at {@code sandboxDir} created with {@code config}. */
  ProcessSpec wrap(ProcessSpec spec, Path sandboxDir, SandboxConfig config);

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
