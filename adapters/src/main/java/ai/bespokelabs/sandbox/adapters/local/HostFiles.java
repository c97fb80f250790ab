package ai.bespokelabs.sandbox.adapters.local;

import ai.bespokelabs.sandbox.adapters.files.FileEntry;
import ai.bespokelabs.sandbox.adapters.files.ReadableFile;
import ai.bespokelabs.sandbox.adapters.files.SandboxPaths;
import ai.bespokelabs.sandbox.adapters.files.TarGz;
import ai.bespokelabs.sandbox.adapters.files.WritableFile;
import ai.bespokelabs.sandbox.core.error.ApiException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipal;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;

/**
 * Files of a host-directory sandbox. A path is relative to the sandbox directory, or absolute as the
 * sandbox's programs see it (the host path for {@code local}, {@code /sandbox/…} under bubblewrap); it must
 * stay inside the directory after normalization and after resolving symlinks (a link pointing out is
 * refused). Uploads go to a hidden temporary file beside the target and are renamed into place on commit,
 * owned like the sandbox directory; an aborted upload removes the file and any directory it created.
 */
final class HostFiles {
  private static final LinkOption[] NOFOLLOW = {LinkOption.NOFOLLOW_LINKS};

  private final Path root;
  private final String inside;

  /** @param inside where programs see {@code root}; null when they see its host path */
  HostFiles(Path root, String inside) {
    this.root = root.toAbsolutePath().normalize();
    this.inside = inside == null ? this.root.toString() : inside;
  }

  /** The host path of {@code path}, checked to stay inside the sandbox. */
  Path resolve(String path) {
    if (path == null || path.isBlank()) {
      throw SandboxPaths.required();
    }
    Path p;
    try {
      if (path.startsWith("/")) {
        if (path.equals(inside) || path.startsWith(inside.endsWith("/") ? inside : inside + "/")) {
          p = root.resolve(path.substring(inside.length()).replaceFirst("^/+", ""));
        } else {
          throw SandboxPaths.escapes();
        }
      } else {
        p = root.resolve(path);
      }
    } catch (InvalidPathException e) {
      throw ApiException.invalid("path is not a valid path");
    }
    p = p.normalize();
    if (!p.startsWith(root)) {
      throw SandboxPaths.escapes();
    }
    try {
      Path realRoot = root.toRealPath();
      Path probe = p;
      while (probe != null && !Files.exists(probe, NOFOLLOW)) {
        probe = probe.getParent();
      }
      if (probe == null || !probe.toRealPath().startsWith(realRoot)) {
        throw SandboxPaths.escapes();
      }
    } catch (NoSuchFileException e) {
      throw ApiException.conflict("sandbox directory is gone");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return p;
  }

  /** How programs see host path {@code p}. */
  private String shown(Path p) {
    String rel = root.relativize(p).toString();
    return rel.isEmpty() ? inside : (inside.endsWith("/") ? inside : inside + "/") + rel;
  }

  private FileEntry entry(Path p) throws IOException {
    PosixFileAttributes a = Files.readAttributes(p, PosixFileAttributes.class);
    int mode = 0;
    for (PosixFilePermission perm : a.permissions()) {
      mode |= 1 << (8 - perm.ordinal());
    }
    String name = p.equals(root) ? "" : p.getFileName().toString();
    return new FileEntry(name, shown(p), a.isDirectory(), a.isDirectory() ? 0 : a.size(), mode,
        a.lastModifiedTime().toInstant());
  }

  List<FileEntry> list(String path) {
    Path p = resolve(path);
    try {
      if (!Files.exists(p)) {
        throw SandboxPaths.notFound();
      }
      if (!Files.isDirectory(p)) {
        return List.of(entry(p));
      }
      List<FileEntry> out = new ArrayList<>();
      try (var dir = Files.newDirectoryStream(p)) {
        for (Path child : dir) {
          try {
            out.add(entry(child));
          } catch (NoSuchFileException ignored) {
            // removed while listing
          }
        }
      }
      out.sort(Comparator.comparing(FileEntry::name));
      return out;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  ReadableFile openRead(String path) {
    Path p = resolve(path);
    try {
      Path real = p.toRealPath();
      if (Files.isDirectory(real)) {
        throw SandboxPaths.isDirectory();
      }
      FileChannel ch = FileChannel.open(real, StandardOpenOption.READ);
      return ReadableFile.of(java.nio.channels.Channels.newInputStream(ch), ch.size());
    } catch (NoSuchFileException e) {
      throw SandboxPaths.notFound();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  WritableFile openWrite(String path, boolean executable) {
    Path target = resolve(path);
    if (target.equals(root) || Files.isDirectory(target, NOFOLLOW)) {
      throw SandboxPaths.isDirectory();
    }
    try {
      UserPrincipal owner = Files.getOwner(root);
      List<Path> created = new ArrayList<>();
      for (Path d = target.getParent(); d != null && !Files.exists(d, NOFOLLOW); d = d.getParent()) {
        created.add(0, d);
      }
      for (Path d : created) {
        Files.createDirectory(d);
        own(d, owner);
      }
      Path temp = target.resolveSibling("." + target.getFileName() + ".upload-" + UUID.randomUUID());
      FileChannel ch = FileChannel.open(temp, Set.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE),
          PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
      return new WritableFile() {
        private boolean done;

        @Override
        public void write(byte[] data) throws IOException {
          ByteBuffer buf = ByteBuffer.wrap(data);
          while (buf.hasRemaining()) {
            ch.write(buf);
          }
        }

        @Override
        public FileEntry commit() throws IOException {
          ch.close();
          Files.setPosixFilePermissions(temp, PosixFilePermissions.fromString(executable ? "rwxr-xr-x" : "rw-r--r--"));
          own(temp, owner);
          Files.move(temp, target, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
          done = true;
          return entry(target);
        }

        @Override
        public void abort() {
          if (done) {
            return;
          }
          done = true;
          try {
            ch.close();
            Files.deleteIfExists(temp);
            for (int i = created.size() - 1; i >= 0; i--) {
              Files.deleteIfExists(created.get(i));
            }
          } catch (IOException ignored) {
            // a directory someone wrote into meanwhile stays
          }
        }
      };
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Gives {@code p} to the sandbox directory's owner (the sandbox's own uid under bubblewrap as root). */
  private static void own(Path p, UserPrincipal owner) throws IOException {
    if (!Files.getOwner(p, NOFOLLOW).equals(owner)) {
      Files.setOwner(p, owner);
    }
  }

  // ---- directory archives ----------------------------------------------------------------------------

  /** The directory at {@code path} as a tar.gz of its tree (symlinks kept as links, never followed). */
  ReadableFile archiveRead(String path) {
    Path dir = resolve(path);
    if (!Files.exists(dir, NOFOLLOW)) {
      throw SandboxPaths.notFound();
    }
    if (!Files.isDirectory(dir, NOFOLLOW)) {
      throw ApiException.invalid("path is not a directory");
    }
    return TarGz.ofDirectory(dir);
  }


  /**
   * Receives a tar.gz and, once it arrived whole and checked, extracts it into the directory at
   * {@code path} (created when missing), keeping modes (without set-id bits) and links.
   */
  WritableFile archiveWrite(String path) {
    Path dir = resolve(path);
    if (Files.exists(dir, NOFOLLOW) && !Files.isDirectory(dir, NOFOLLOW)) {
      throw ApiException.invalid("path is not a directory");
    }
    return TarGz.spool((spool, entries) -> {
      UserPrincipal owner = Files.getOwner(root);
      java.util.Deque<Path> missing = new java.util.ArrayDeque<>();
      for (Path d = dir; !Files.exists(d, NOFOLLOW); d = d.getParent()) {
        missing.push(d);
      }
      for (Path d : missing) {
        Files.createDirectory(d);
        own(d, owner);
      }
      try (TarArchiveInputStream tar = TarGz.open(spool)) {
        TarArchiveEntry e;
        while ((e = tar.getNextEntry()) != null) {
          String rel = TarGz.relative(e.getName());
          if (rel.isEmpty()) {
            continue;
          }
          Path target = resolve(shown(dir) + "/" + rel);
          Set<PosixFilePermission> perms = PosixFilePermissions.fromString(symbolic(e.getMode()));
          if (e.isDirectory()) {
            if (!Files.isDirectory(target, NOFOLLOW)) {
              Files.createDirectories(target);
            }
            perms.add(PosixFilePermission.OWNER_WRITE);
            perms.add(PosixFilePermission.OWNER_EXECUTE);
            Files.setPosixFilePermissions(target, perms);
            own(target, owner);
          } else if (e.isSymbolicLink()) {
            Files.createDirectories(target.getParent());
            Files.deleteIfExists(target);
            Files.createSymbolicLink(target, Path.of(e.getLinkName()));
          } else if (e.isFile()) {
            Files.createDirectories(target.getParent());
            Path temp = target.resolveSibling("." + target.getFileName() + ".upload-" + UUID.randomUUID());
            try {
              Files.copy(tar, temp);
              Files.setPosixFilePermissions(temp, perms);
              own(temp, owner);
              Files.move(temp, target, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            } finally {
              Files.deleteIfExists(temp);
            }
          }
        }
      }
      return entry(dir);
    });
  }

  /** {@code rwxr-x---} for a mode's permission bits (set-id and sticky bits dropped). */
  private static String symbolic(int mode) {
    StringBuilder b = new StringBuilder(9);
    String rwx = "rwxrwxrwx";
    for (int i = 0; i < 9; i++) {
      b.append((mode & (1 << (8 - i))) != 0 ? rwx.charAt(i) : '-');
    }
    return b.toString();
  }

  /** Deletes {@code dir} and everything in it; symlinks are removed, never followed. */
  static void deleteTree(Path dir) throws IOException {
    Files.walkFileTree(dir, new SimpleFileVisitor<>() {
      @Override
      public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) throws IOException {
        Files.deleteIfExists(file);
        return FileVisitResult.CONTINUE;
      }

      @Override
      public FileVisitResult postVisitDirectory(Path d, IOException e) throws IOException {
        if (e != null) {
          throw e;
        }
        Files.deleteIfExists(d);
        return FileVisitResult.CONTINUE;
      }
    });
  }

  void delete(String path, boolean recursive) {
    Path p = resolve(path);
    if (p.equals(root)) {
      throw ApiException.invalid("path must name something inside the sandbox");
    }
    try {
      if (!Files.exists(p, NOFOLLOW)) {
        throw SandboxPaths.notFound();
      }
      if (!recursive || !Files.isDirectory(p, NOFOLLOW)) {
        Files.delete(p);
        return;
      }
      deleteTree(p);
    } catch (DirectoryNotEmptyException e) {
      throw SandboxPaths.notEmpty();
    } catch (NoSuchFileException e) {
      throw SandboxPaths.notFound();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
