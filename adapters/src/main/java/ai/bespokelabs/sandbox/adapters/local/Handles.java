package ai.bespokelabs.sandbox.adapters.local;

import ai.bespokelabs.sandbox.adapters.files.SandboxPaths;
import ai.bespokelabs.sandbox.core.model.FileEntry;
import ai.bespokelabs.sandbox.core.error.ApiException;
import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.FileSystemException;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.SecureDirectoryStream;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.util.ArrayDeque;
import java.util.Deque;

/**
 * Primitives on directory handles ({@link SecureDirectoryStream}: {@code openat}, {@code fstatat} relative to an
 * open directory) that never follow a symbolic link; what {@link HostFiles} is built on.
 */
final class Handles {
  static final LinkOption NOFOLLOW = LinkOption.NOFOLLOW_LINKS;

  private Handles() {}

  /**
   * Open directories from the sandbox directory down; closing it closes them all. {@link #dir} is the last
   * one reached.
   */
  static final class Chain implements AutoCloseable {
    final Deque<SecureDirectoryStream<Path>> open = new ArrayDeque<>();

    SecureDirectoryStream<Path> dir() {
      return open.peekLast();
    }

    void push(SecureDirectoryStream<Path> d) {
      open.addLast(d);
    }

    @Override
    public void close() {
      while (!open.isEmpty()) {
        try {
          open.removeLast().close();
        } catch (IOException ignored) {
          // a directory handle has nothing to flush
        }
      }
    }
  }

  static SecureDirectoryStream<Path> secure(DirectoryStream<Path> d) throws IOException {
    if (d instanceof SecureDirectoryStream<Path> s) {
      return s;
    }
    d.close();
    throw new ApiException(501, "the files API needs a file system with secure directory access (openat)");
  }

  /** The attributes of {@code name} in {@code dir} itself (a link is described, not followed); null if none. */
  static PosixFileAttributes stat(SecureDirectoryStream<Path> dir, Path name) throws IOException {
    try {
      return dir.getFileAttributeView(name, PosixFileAttributeView.class, NOFOLLOW).readAttributes();
    } catch (NoSuchFileException e) {
      return null;
    }
  }

  static PosixFileAttributes self(SecureDirectoryStream<Path> dir) throws IOException {
    return dir.getFileAttributeView(PosixFileAttributeView.class).readAttributes();
  }

  /** Opens directory {@code name} of the chain's last directory, refusing a link; null when missing. */
  static SecureDirectoryStream<Path> enter(Chain chain, String name, boolean missingIfFile)
      throws IOException {
    Path n = Path.of(name);
    PosixFileAttributes a = stat(chain.dir(), n);
    if (a == null) {
      return null;
    }
    if (a.isSymbolicLink()) {
      throw SandboxPaths.symlink();
    }
    if (!a.isDirectory()) {
      throw missingIfFile ? SandboxPaths.notFound() : ApiException.invalid("a parent of path is not a directory");
    }
    try {
      SecureDirectoryStream<Path> d = chain.dir().newDirectoryStream(n, NOFOLLOW);
      chain.push(d);
      return d;
    } catch (NoSuchFileException e) {
      return null;
    } catch (FileSystemException e) {
      throw SandboxPaths.changed();
    }
  }

  static FileEntry entry(String name, String shown, PosixFileAttributes a) {
    String type = a.isSymbolicLink() ? FileEntry.SYMLINK : a.isDirectory() ? FileEntry.DIRECTORY
        : a.isRegularFile() ? FileEntry.FILE : FileEntry.OTHER;
    return new FileEntry(name, shown, a.isDirectory(), a.isRegularFile() ? a.size() : 0, mode(a),
        a.lastModifiedTime().toInstant(), type);
  }

  static int mode(PosixFileAttributes a) {
    int mode = 0;
    for (PosixFilePermission perm : a.permissions()) {
      mode |= 1 << (8 - perm.ordinal());
    }
    return mode;
  }

  /**
   * What a failed write says: a file system refusal other than a missing entry means the sandbox changed the
   * tree under the operation (409); anything else goes on as it is.
   */
  static void failIfChanged(Exception e) {
    if (e instanceof FileSystemException && !(e instanceof NoSuchFileException)) {
      throw SandboxPaths.changed();
    }
  }
}
