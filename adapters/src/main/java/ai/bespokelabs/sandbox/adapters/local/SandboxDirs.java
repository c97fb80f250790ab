package ai.bespokelabs.sandbox.adapters.local;

import ai.bespokelabs.sandbox.core.bus.Messages.Resource;
import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import java.io.IOException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Map;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The directory holding a host backend's own sandbox directories ({@code <root>/<sandboxId>}): creating, owning
 * (as root, each is given the uid its programs run as), finding and deleting them. A workdir is never one of
 * them.
 */
final class SandboxDirs {
  private static final Logger LOG = LoggerFactory.getLogger(SandboxDirs.class);
  private static final Pattern SANDBOX_ID = Pattern.compile("[A-Za-z0-9_-]{1,128}");
  private static final int DELETE_ATTEMPTS = 3;

  private final Path root;
  private final String backend;

  /** @param root the directory holding owned sandbox directories (created on first use) */
  SandboxDirs(Path root, String backend) {
    this.root = root.toAbsolutePath().normalize();
    this.backend = backend;
  }

  Path root() {
    return root;
  }

  /** True when {@code sandboxId} is safe as a directory name. */
  static boolean isSandboxId(String sandboxId) {
    return SANDBOX_ID.matcher(sandboxId).matches();
  }

  /**
   * As root: the sandboxes root is traversable (programs reach their own directory by its path) but not
   * listable, and the uids of the directories left by an earlier run stay taken (on the whole host).
   */
  void claimExisting(HostWrapper wrapper, HostUsers.Held uids) {
    try {
      Files.createDirectories(root);
      Files.setPosixFilePermissions(root, java.nio.file.attribute.PosixFilePermissions.fromString("rwx--x--x"));
      try (var dirs = Files.newDirectoryStream(root, p -> Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS))) {
        for (Path d : dirs) {
          if (SANDBOX_ID.matcher(d.getFileName().toString()).matches()) {
            uids.claim(ownerUid(d), d);
          }
        }
      }
    } catch (IOException e) {
      LOG.warn("cannot prepare the {} sandboxes directory {}: {}", backend, root, e.toString());
    }
    if (wrapper == HostWrapper.NONE) {
      for (Path p = root.getParent(); p != null; p = p.getParent()) {
        try {
          if (!Files.getPosixFilePermissions(p).contains(java.nio.file.attribute.PosixFilePermission.OTHERS_EXECUTE)) {
            LOG.warn("{} programs run as unprivileged uids, which cannot traverse {}: they reach their sandbox"
                + " directory only as their working directory (keep BESPOKE_DATA_DIR on a traversable path)", backend, p);
            break;
          }
        } catch (IOException | UnsupportedOperationException ignored) {
          break;
        }
      }
    }
  }

  static int ownerUid(Path p) throws IOException {
    return (Integer) Files.getAttribute(p, "unix:uid", LinkOption.NOFOLLOW_LINKS);
  }

  /** Creates (or finds again) the sandbox's own directory {@code <root>/<sandboxId>}. */
  Path create(String sandboxId) {
    if (!SANDBOX_ID.matcher(sandboxId).matches()) {
      throw new IllegalArgumentException("sandbox id is not a safe directory name");
    }
    Path dir = root.resolve(sandboxId);
    try {
      Files.createDirectories(dir);
    } catch (IOException e) {
      throw new ProviderException(
          ProviderError.of(ErrorCode.CREATION_FAILED, backend, "create", false, ProviderError.Outcome.FAILED), e);
    }
    return dir;
  }

  /**
   * As root, gives an owned sandbox directory to the uid its programs run as, readable by nobody else; a
   * workdir the operator allowed keeps its owner and permissions.
   */
  void own(Path dir, int uid) {
    try {
      if (ownerUid(dir) != uid) {
        Files.setAttribute(dir, "unix:uid", uid, LinkOption.NOFOLLOW_LINKS);
        Files.setAttribute(dir, "unix:gid", uid, LinkOption.NOFOLLOW_LINKS);
      }
      Files.setPosixFilePermissions(dir, java.nio.file.attribute.PosixFilePermissions.fromString("rwx------"));
    } catch (IOException e) {
      throw new ProviderException(
          ProviderError.of(ErrorCode.CREATION_FAILED, backend, "create", false, ProviderError.Outcome.FAILED), e);
    }
  }

  /**
   * The resource id as the directory this backend created for the sandbox ({@code <root>/<sandboxId>}), or null
   * when it is anything else: another sandbox's directory or a workdir is never the sandbox's to delete.
   */
  Path ownedDirectory(String sandboxId, String resourceId) {
    if (resourceId == null || !SANDBOX_ID.matcher(sandboxId).matches()) {
      return null;
    }
    try {
      Path dir = Path.of(resourceId).toAbsolutePath().normalize();
      boolean own = dir.equals(root.resolve(sandboxId)) && Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS);
      return own ? dir : null;
    } catch (InvalidPathException e) {
      return null;
    }
  }

  /** Adds the sandbox directories under the root to {@code out}, each as a {@code running} resource. */
  void list(Map<String, Resource> out) {
    if (Files.isDirectory(root)) {
      try (var dirs = Files.newDirectoryStream(root, p -> Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS))) {
        for (Path d : dirs) {
          String id = d.getFileName().toString();
          if (SANDBOX_ID.matcher(id).matches()) {
            out.put(id, new Resource(d.toString(), id, "running", null));
          }
        }
      } catch (IOException e) {
        throw new IllegalStateException("the sandboxes directory cannot be listed", e);
      }
    }
  }

  /** Deletes {@code dir} and everything in it (symlinks are removed, never followed). */
  void deleteTree(Path dir) {
    for (int attempt = 1; ; attempt++) {
      try {
        HostDeletes.deleteTree(dir);
        return;
      } catch (NoSuchFileException e) {
        return;
      } catch (DirectoryNotEmptyException e) {
        if (attempt == DELETE_ATTEMPTS) {
          throw destroyFailed(e);
        }
        // a process killed a moment ago may still have been writing: walk again
      } catch (HostDeletes.TooDeep e) {
        removeDeepTree(dir, e);
        return;
      } catch (IOException e) {
        throw destroyFailed(e);
      }
    }
  }

  /**
   * A tree deeper than a delete through handles goes (a sandbox can nest directories thousands deep) is removed
   * by {@code rm -rf}, which walks any depth without following links; the directory is the sandbox's own, under
   * the gateway's root, so nothing the sandbox controls is on the path to it.
   */
  private void removeDeepTree(Path dir, IOException cause) {
    try {
      Process rm = new ProcessBuilder("rm", "-rf", "--one-file-system", "--", dir.toString())
          .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
      if (rm.waitFor() != 0 || Files.exists(dir, LinkOption.NOFOLLOW_LINKS)) {
        throw destroyFailed(cause);
      }
    } catch (IOException e) {
      throw destroyFailed(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw destroyFailed(cause);
    }
  }

  private ProviderException destroyFailed(IOException cause) {
    return new ProviderException(
        ProviderError.of(ErrorCode.COMMAND_FAILED, backend, "destroy", true, ProviderError.Outcome.UNKNOWN), cause);
  }
}
