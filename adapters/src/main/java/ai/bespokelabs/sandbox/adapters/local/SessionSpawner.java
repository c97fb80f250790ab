package ai.bespokelabs.sandbox.adapters.local;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Starts a program as the leader of a new session (so of a new process group whose id is its pid), with
 * exactly the given environment and working directory, its three standard streams on pipes, and no other
 * descriptor of the gateway. {@code program} is the absolute path of what {@code argv[0]} names; a file
 * that is not a binary nor has a {@code #!} line runs under {@code /bin/sh}, as {@code execvp} would.
 *
 * <p>On Java 22 and newer on Linux with glibc, {@link #available()} is a direct {@code posix_spawn} with
 * {@code POSIX_SPAWN_SETSID} through the foreign-function API ({@code PosixSpawn}, compiled for Java 22). That
 * saves the extra {@code setsid} program every execution otherwise runs in front of its own, and the JDK's
 * spawn helper: about 1.4 ms per execution here. Elsewhere, or with {@code BESPOKE_NATIVE_SPAWN=false} (or
 * the system property {@code bespoke.nativeSpawn=false}), programs start through {@code setsid} and
 * {@link ProcessBuilder} as before.
 */
interface SessionSpawner {
  /** Starts {@code program}; {@code descriptor3}, when not null, is opened read-only as the child's descriptor 3. */
  Process start(Path program, List<String> argv, Path cwd, Map<String, String> env, Path descriptor3)
      throws IOException;

  default Process start(Path program, List<String> argv, Path cwd, Map<String, String> env) throws IOException {
    return start(program, argv, cwd, env, null);
  }

  /**
   * Sends {@code signal} (a number) to process {@code target}, or to process group {@code -target} when it is
   * negative; a target that no longer exists is ignored.
   */
  void signal(long target, int signal);

  /** The native spawner when this runtime and host have one, else empty. */
  static Optional<SessionSpawner> available() {
    return Native.SPAWNER;
  }

  /** Loads the native spawner once. */
  final class Native {
    private static final Logger LOG = LoggerFactory.getLogger(SessionSpawner.class);
    static final Optional<SessionSpawner> SPAWNER = load();

    private Native() {}

    private static Optional<SessionSpawner> load() {
      if ("false".equalsIgnoreCase(System.getenv("BESPOKE_NATIVE_SPAWN"))
          || "false".equalsIgnoreCase(System.getProperty("bespoke.nativeSpawn"))
          || Runtime.version().feature() < 22 || !System.getProperty("os.name", "").startsWith("Linux")) {
        return Optional.empty();
      }
      try {
        return Optional.of((SessionSpawner) Class.forName(SessionSpawner.class.getPackageName() + ".PosixSpawn")
            .getDeclaredConstructor().newInstance());
      } catch (ReflectiveOperationException | LinkageError | RuntimeException e) {
        // a build without the Java 22 class, a libc without the functions, or native access refused
        LOG.info("Programs start through setsid: no native session spawn here ({})", e.getClass().getSimpleName());
        return Optional.empty();
      }
    }
  }
}
