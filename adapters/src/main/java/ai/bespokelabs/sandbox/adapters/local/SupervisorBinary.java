package ai.bespokelabs.sandbox.adapters.local;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The resident sandbox supervisor ({@code src/main/c/sandbox-supervisor.c}), built by the project's build where a C
 * compiler exists and shipped as the resource {@code native/linux-<arch>/sandbox-supervisor}. It is copied once
 * into a new directory of the temporary directory that the gateway's user creates and owns (mode 0711, so a
 * sandbox uid may run the file, mode 0555, but nobody else may change, replace or list it).
 *
 * <p>Enabled with {@code BESPOKE_LOCAL_SUPERVISOR=true} (or the system property {@code bespoke.localSupervisor});
 * off by default: under a loaded CI run one of 200 concurrent streams in a sandbox did not complete with it on.
 */
final class SupervisorBinary {
  private static final Logger LOG = LoggerFactory.getLogger(SupervisorBinary.class);
  private static final String NAME = "sandbox-supervisor";

  private SupervisorBinary() {}

  /** Whether executions go through a resident supervisor where its binary exists. */
  static boolean enabled() {
    String v = System.getProperty("bespoke.localSupervisor", System.getenv("BESPOKE_LOCAL_SUPERVISOR"));
    return "true".equalsIgnoreCase(v == null ? "" : v.strip());
  }

  /** The extracted binary, or empty (with one warning) when this build or host has none. */
  static Optional<Path> path() {
    return Holder.PATH;
  }

  /** The resource path of this host's binary. */
  static String resource() {
    String arch = System.getProperty("os.arch", "");
    arch = switch (arch) {
      case "amd64", "x86_64" -> "x86_64";
      case "aarch64", "arm64" -> "aarch64";
      default -> arch;
    };
    return "/native/linux-" + arch + "/" + NAME;
  }

  private static final class Holder {
    static final Optional<Path> PATH = extract();

    private static Optional<Path> extract() {
      if (!System.getProperty("os.name", "").startsWith("Linux")) {
        return Optional.empty();
      }
      try (InputStream in = SupervisorBinary.class.getResourceAsStream(resource())) {
        if (in == null) {
          LOG.warn("No sandbox supervisor in this build for {} (no C compiler at build time): executions start"
              + " one by one", resource());
          return Optional.empty();
        }
        Path dir = Files.createTempDirectory("bespoke-supervisor-",
            PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        Path file = dir.resolve(NAME);
        Files.copy(in, file);
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("r-xr-xr-x"));
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx--x--x"));
        file.toFile().deleteOnExit();
        dir.toFile().deleteOnExit();
        return Optional.of(file);
      } catch (IOException | RuntimeException e) {
        LOG.warn("The sandbox supervisor cannot be installed ({}): executions start one by one", e.toString());
        return Optional.empty();
      }
    }
  }
}
