package ai.bespokelabs.sandbox.adapters.local;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Where the directories of host sandboxes live. Their programs run as unprivileged uids on a root gateway and must
 * reach {@code SANDBOX_ROOT} by its path, so every directory above it must be traversable by others. The data
 * directory serves when it is (or when the gateway is not root, its programs running as itself); otherwise — the
 * default {@code ~/.bespoke-sandbox} of root lies under {@code /root}, mode 0700 — the sandboxes move to
 * {@code /var/lib/bespoke-sandbox/sandboxes-<hash of the data directory>}, outside the data directory, so its
 * secrets stay closed to them. {@code BESPOKE_SANDBOX_ROOT} names the place explicitly.
 */
public final class SandboxRoot {
  private static final Logger LOG = LoggerFactory.getLogger(SandboxRoot.class);
  /** The conventional state directory of a root gateway's sandboxes. */
  public static final Path SYSTEM = Path.of("/var/lib/bespoke-sandbox");

  private SandboxRoot() {}

  /**
   * The directory under which each host backend keeps its sandboxes' directories.
   *
   * @param configured {@code BESPOKE_SANDBOX_ROOT}, when set
   * @param root whether the gateway runs as root
   */
  public static Path choose(Path dataDir, Optional<Path> configured, boolean root) {
    if (configured.isPresent()) {
      return configured.get().toAbsolutePath().normalize();
    }
    Path data = dataDir.toAbsolutePath().normalize();
    if (!root || traversable(data)) {
      return data;
    }
    Path moved = SYSTEM.resolve("sandboxes-" + hash(data));
    try {
      for (Path p : new Path[] {SYSTEM, moved}) {
        Files.createDirectories(p);
        // traversable, not listable: a sandbox reaches its own directory by its path and sees no other's name
        Files.setPosixFilePermissions(p, java.nio.file.attribute.PosixFilePermissions.fromString("rwx--x--x"));
      }
    } catch (IOException e) {
      LOG.warn("cannot prepare {} for host sandboxes: {}", moved, e.toString());
    }
    LOG.info("Host sandboxes live in {}: sandbox uids cannot traverse the data directory {}", moved, data);
    return moved;
  }

  /** Whether every existing directory from {@code dir} up is searchable by others (missing ones will be made so). */
  static boolean traversable(Path dir) {
    for (Path p = dir; p != null; p = p.getParent()) {
      if (!Files.exists(p)) {
        continue;
      }
      try {
        if (!Files.getPosixFilePermissions(p).contains(PosixFilePermission.OTHERS_EXECUTE)) {
          return false;
        }
      } catch (IOException | UnsupportedOperationException e) {
        return false;
      }
    }
    return true;
  }

  private static String hash(Path data) {
    String real = data.toString();
    try {
      real = data.toRealPath().toString();
    } catch (IOException ignored) {
      // not created yet: its normalized path names it
    }
    try {
      byte[] d = MessageDigest.getInstance("SHA-256").digest(real.getBytes(StandardCharsets.UTF_8));
      return HexFormat.of().formatHex(d, 0, 8);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }
}
