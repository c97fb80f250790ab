package ai.bespokelabs.sandbox.adapters.local;

import static ai.bespokelabs.sandbox.adapters.local.Handles.NOFOLLOW;
import static ai.bespokelabs.sandbox.adapters.local.Handles.secure;
import static ai.bespokelabs.sandbox.adapters.local.Handles.stat;
import static ai.bespokelabs.sandbox.adapters.local.SandboxTree.MAX_DEPTH;

import ai.bespokelabs.sandbox.adapters.files.SandboxPaths;
import ai.bespokelabs.sandbox.adapters.local.SandboxTree.Walk;
import ai.bespokelabs.sandbox.core.error.ApiException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.SecureDirectoryStream;
import java.nio.file.attribute.PosixFileAttributes;
import java.util.List;

/** Deleting files and whole trees through directory handles, never following a link. */
final class HostDeletes {
  private final SandboxTree tree;

  HostDeletes(SandboxTree tree) {
    this.tree = tree;
  }

  void delete(String path, boolean recursive) {
    List<String> parts = tree.components(path);
    if (parts.isEmpty()) {
      throw ApiException.invalid("path must name something inside the sandbox");
    }
    try (Walk w = tree.walk(parts, true)) {
      if (!w.complete()) {
        throw SandboxPaths.notFound();
      }
      SecureDirectoryStream<Path> dir = w.chain().dir();
      PosixFileAttributes a = stat(dir, w.name());
      if (a == null) {
        throw SandboxPaths.notFound();
      }
      if (!a.isDirectory()) {
        dir.deleteFile(w.name());
      } else if (recursive) {
        deleteTree(dir, w.name());
      } else {
        dir.deleteDirectory(w.name());
      }
    } catch (DirectoryNotEmptyException e) {
      throw SandboxPaths.notEmpty();
    } catch (NoSuchFileException e) {
      throw SandboxPaths.notFound();
    } catch (FileSystemException e) {
      throw SandboxPaths.changed();
    } catch (TooDeep e) {
      throw new ApiException(422, "directory is too deep to delete here (" + e.getMessage() + "): delete it in parts");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Deletes directory {@code name} of {@code parent} and everything in it, through handles, never following a link. */
  static void deleteTree(SecureDirectoryStream<Path> parent, Path name) throws IOException {
    deleteTree(parent, name, 0);
  }

  /** Thrown for a tree deeper than a delete through handles goes (one open handle and frame per level). */
  static final class TooDeep extends IOException {
    TooDeep() {
      super("the tree is deeper than " + 2 * MAX_DEPTH + " levels");
    }
  }

  private static void deleteTree(SecureDirectoryStream<Path> parent, Path name, int depth) throws IOException {
    if (depth > 2 * MAX_DEPTH) {
      throw new TooDeep();
    }
    try (SecureDirectoryStream<Path> d = parent.newDirectoryStream(name, NOFOLLOW)) {
      for (Path child : d) {
        Path n = child.getFileName();
        PosixFileAttributes a = stat(d, n);
        if (a == null) {
          continue;
        }
        try {
          if (a.isDirectory()) {
            deleteTree(d, n, depth + 1);
          } else {
            d.deleteFile(n);
          }
        } catch (NoSuchFileException ignored) {
          // removed meanwhile
        }
      }
    }
    parent.deleteDirectory(name);
  }

  /** Deletes {@code dir} and everything in it; symbolic links are removed, never followed. */
  static void deleteTree(Path dir) throws IOException {
    Path abs = dir.toAbsolutePath().normalize();
    if (abs.getParent() == null) {
      throw new IOException("refusing to delete " + abs);
    }
    try (SecureDirectoryStream<Path> parent = secure(Files.newDirectoryStream(abs.getParent()))) {
      PosixFileAttributes a = stat(parent, abs.getFileName());
      if (a == null) {
        throw new NoSuchFileException(abs.toString());
      }
      if (!a.isDirectory()) {
        parent.deleteFile(abs.getFileName());
        return;
      }
      deleteTree(parent, abs.getFileName());
    }
  }
}
