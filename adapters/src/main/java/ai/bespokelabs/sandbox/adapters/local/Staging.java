package ai.bespokelabs.sandbox.adapters.local;

import static ai.bespokelabs.sandbox.adapters.local.Handles.NOFOLLOW;
import static ai.bespokelabs.sandbox.adapters.local.Handles.enter;
import static ai.bespokelabs.sandbox.adapters.local.Handles.failIfChanged;
import static ai.bespokelabs.sandbox.adapters.local.Handles.secure;
import static ai.bespokelabs.sandbox.adapters.local.Handles.self;
import static ai.bespokelabs.sandbox.adapters.local.Handles.stat;
import static ai.bespokelabs.sandbox.adapters.local.HostDeletes.deleteTree;

import ai.bespokelabs.sandbox.adapters.files.SandboxPaths;
import ai.bespokelabs.sandbox.adapters.local.Handles.Chain;
import ai.bespokelabs.sandbox.core.error.ApiException;
import java.io.IOException;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SecureDirectoryStream;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipal;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

/**
 * The private directory beside the sandboxes (same file system) where the gateway makes what it creates in a
 * sandbox: an entry is made here, given the sandbox directory's owner and its mode, and renamed into place
 * relative to its parent's handle.
 */
final class Staging {
  private final Path staging;

  /** @param staging a directory only the gateway uses, on the sandbox directory's file system */
  Staging(Path staging) {
    this.staging = staging;
  }

  /** The staging directory's handle, created (mode 0700) when missing. */
  SecureDirectoryStream<Path> open() throws IOException {
    try {
      Files.createDirectory(staging, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
    } catch (FileAlreadyExistsException ignored) {
      // made by an earlier upload
    }
    SecureDirectoryStream<Path> stage = secure(Files.newDirectoryStream(staging));
    sweep(stage);
    return stage;
  }

  private static final long STALE_MS = 3_600_000;
  private static final java.util.concurrent.ConcurrentHashMap<Path, Long> SWEPT =
      new java.util.concurrent.ConcurrentHashMap<>();

  /**
   * At most once an hour, removes what a crash left in the staging directory: entries untouched for an hour
   * (a live upload writes its file at least every minute, or is discarded).
   */
  private void sweep(SecureDirectoryStream<Path> stage) {
    long now = System.currentTimeMillis();
    Long last = SWEPT.get(staging);
    if (last != null && now - last < STALE_MS) {
      return;
    }
    boolean claimed = last == null ? SWEPT.putIfAbsent(staging, now) == null : SWEPT.replace(staging, last, now);
    if (!claimed) {
      return;
    }
    try {
      for (Path child : stage) {
        Path n = child.getFileName();
        PosixFileAttributes a = stat(stage, n);
        if (a != null && now - a.lastModifiedTime().toMillis() > STALE_MS) {
          if (a.isDirectory()) {
            deleteTree(stage, n);
          } else {
            stage.deleteFile(n);
          }
        }
      }
    } catch (IOException | RuntimeException ignored) {
      // tried again in an hour
    }
  }

  Path name(String kind) {
    return Path.of("." + kind + "-" + UUID.randomUUID());
  }

  /** The host path of staged entry {@code name}. */
  Path resolve(Path name) {
    return staging.resolve(name);
  }

  /** Gives a staged entry (never anything of the sandbox's) to {@code owner}; a link itself, not its target. */
  static void own(Path staged, UserPrincipal owner) throws IOException {
    PosixFileAttributeView v = Files.getFileAttributeView(staged, PosixFileAttributeView.class, NOFOLLOW);
    if (!v.readAttributes().owner().equals(owner)) {
      v.setOwner(owner);
    }
  }

  /** Renames staged {@code name} to {@code target} in {@code dir}. */
  static void place(SecureDirectoryStream<Path> stage, Path name, SecureDirectoryStream<Path> dir,
      Path target) throws IOException {
    try {
      stage.move(name, dir, target);
    } catch (AtomicMoveNotSupportedException e) {
      throw ApiException.conflict("files cannot be written here: the sandbox directory is on another file system"
          + " than the gateway's sandboxes directory");
    }
  }

  /** The directories an upload or extraction created so far, to remove again when it fails. */
  static final class Created {
    private record Dir(SecureDirectoryStream<Path> parent, Path name) {}

    private final List<Dir> dirs = new ArrayList<>();

    void add(SecureDirectoryStream<Path> parent, Path name) {
      dirs.add(new Dir(parent, name));
    }

    /** Removes them, deepest first, while their parents' handles are still open. */
    void undo() {
      for (int i = dirs.size() - 1; i >= 0; i--) {
        try {
          dirs.get(i).parent().deleteDirectory(dirs.get(i).name());
        } catch (IOException | RuntimeException ignored) {
          // something was put in it meanwhile: it stays
        }
      }
    }
  }

  /**
   * Opens directory {@code name} of the chain's last directory, creating it (mode 0755, the sandbox owner's)
   * when missing; refuses a link or a file in its place.
   */
  SecureDirectoryStream<Path> enterOrCreate(Chain chain, String name, SecureDirectoryStream<Path> stage,
      UserPrincipal owner, Created created) throws IOException {
    SecureDirectoryStream<Path> d = enter(chain, name, false);
    if (d != null) {
      return d;
    }
    Path staged = name("dir");
    Path abs = staging.resolve(staged);
    Files.createDirectory(abs);
    try {
      Files.setPosixFilePermissions(abs, PosixFilePermissions.fromString("rwxr-xr-x"));
      own(abs, owner);
      place(stage, staged, chain.dir(), Path.of(name));
    } catch (IOException | RuntimeException e) {
      Files.deleteIfExists(abs);
      failIfChanged(e);
      throw e;
    }
    created.add(chain.dir(), Path.of(name));
    d = enter(chain, name, false);
    if (d == null) {
      throw SandboxPaths.changed();
    }
    return d;
  }

  /** The owner of the sandbox directory, which everything the gateway creates in it gets. */
  static UserPrincipal owner(Chain chain) throws IOException {
    return self(chain.open.peekFirst()).owner();
  }
}
