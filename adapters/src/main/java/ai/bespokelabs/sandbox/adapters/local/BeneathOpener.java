package ai.bespokelabs.sandbox.adapters.local;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Opens a file below a directory in one system call that never follows a link, never leaves the directory
 * and never waits ({@code openat2} with {@code RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS} and {@code O_NONBLOCK}),
 * so a FIFO that sandbox code swaps in at the last moment cannot hold a thread. Linux 5.6+ through
 * {@code java.lang.foreign} (Java 22+, compiled in {@code src/main/java22}); elsewhere absent, and the files
 * API relies on its type checks alone.
 */
public interface BeneathOpener {
  /**
   * The descriptor of {@code relative} (names separated by {@code /}) below {@code dir}, opened read-only.
   *
   * @throws IOException naming the error when it cannot be opened so
   */
  int open(Path dir, String relative) throws IOException;

  void close(int fd);

  /**
   * The target of symbolic link {@code relative} below {@code dir}, found without following any link on the
   * way, so the link read is always one below {@code dir}.
   *
   * @throws IOException when it is not such a link
   */
  String readLink(Path dir, String relative) throws IOException;

  /** The native opener when this runtime and kernel have one. */
  static Optional<BeneathOpener> available() {
    return Native.OPENER;
  }

  /** Loads the native opener once. */
  final class Native {
    private static final Logger LOG = LoggerFactory.getLogger(BeneathOpener.class);
    static final Optional<BeneathOpener> OPENER = load();

    private Native() {}

    private static Optional<BeneathOpener> load() {
      if (Runtime.version().feature() < 22 || !System.getProperty("os.name", "").startsWith("Linux")) {
        return Optional.empty();
      }
      try {
        BeneathOpener opener = (BeneathOpener) Class.forName(BeneathOpener.class.getPackageName() + ".Openat2")
            .getDeclaredConstructor().newInstance();
        opener.close(opener.open(Path.of("/"), "")); // the kernel has openat2
        return Optional.of(opener);
      } catch (ReflectiveOperationException | LinkageError | RuntimeException | IOException e) {
        LOG.info("Sandbox files are opened without openat2 here ({})", e.toString());
        return Optional.empty();
      }
    }
  }
}
