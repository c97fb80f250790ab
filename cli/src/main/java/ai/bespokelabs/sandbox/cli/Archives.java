package ai.bespokelabs.sandbox.cli;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.apache.commons.compress.archivers.tar.TarConstants;
import org.apache.commons.compress.compressors.gzip.GzipCompressorInputStream;
import org.apache.commons.compress.compressors.gzip.GzipCompressorOutputStream;

/**
 * Directories as the gzip-compressed tars the gateway's archive routes move: entries relative to the
 * directory, with modes, and symbolic links as links (never followed).
 */
final class Archives {
  private Archives() {
  }

  /** Writes {@code dir}'s tree as a tar.gz to {@code out}. */
  static void pack(Path dir, OutputStream out) throws IOException {
    try (TarArchiveOutputStream tar = new TarArchiveOutputStream(new GzipCompressorOutputStream(out));
         Stream<Path> walk = Files.walk(dir)) {
      tar.setLongFileMode(TarArchiveOutputStream.LONGFILE_POSIX);
      tar.setBigNumberMode(TarArchiveOutputStream.BIGNUMBER_POSIX);
      for (Path p : (Iterable<Path>) walk.sorted()::iterator) {
        if (p.equals(dir)) {
          continue;
        }
        String name = dir.relativize(p).toString().replace('\\', '/');
        TarArchiveEntry e;
        if (Files.isSymbolicLink(p)) {
          e = new TarArchiveEntry(name, TarConstants.LF_SYMLINK);
          e.setLinkName(Files.readSymbolicLink(p).toString());
        } else if (Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS)) {
          e = new TarArchiveEntry(name + "/");
        } else if (Files.isRegularFile(p, LinkOption.NOFOLLOW_LINKS)) {
          e = new TarArchiveEntry(name);
          e.setSize(Files.size(p));
        } else {
          continue;
        }
        e.setMode(mode(p, e));
        tar.putArchiveEntry(e);
        if (e.isFile()) {
          Files.copy(p, tar);
        }
        tar.closeArchiveEntry();
      }
    }
  }

  /**
   * Extracts a tar.gz into {@code dir} (created when missing): files, directories and links whose target stays
   * inside it; an entry that would leave the directory is refused.
   */
  static void unpack(InputStream in, Path dir) throws IOException {
    Path root = Files.createDirectories(dir).toRealPath();
    try (TarArchiveInputStream tar = new TarArchiveInputStream(new GzipCompressorInputStream(in))) {
      TarArchiveEntry e;
      while ((e = tar.getNextEntry()) != null) {
        Path target = root.resolve(e.getName()).normalize();
        if (!target.startsWith(root) || target.equals(root)) {
          if (target.equals(root)) {
            continue;
          }
          throw new IOException("archive entry leaves the directory: " + e.getName());
        }
        Files.createDirectories(target.getParent());
        if (!target.getParent().toRealPath().startsWith(root)) {
          throw new IOException("archive entry goes through a link: " + e.getName());
        }
        if (e.isDirectory()) {
          Files.createDirectories(target);
        } else if (e.isSymbolicLink()) {
          Path link = target.getParent().resolve(e.getLinkName()).normalize();
          if (!link.startsWith(root) || Path.of(e.getLinkName()).isAbsolute()) {
            throw new IOException("archive link leads out of the directory: " + e.getName());
          }
          Files.deleteIfExists(target);
          Files.createSymbolicLink(target, Path.of(e.getLinkName()));
          continue;
        } else if (e.isFile()) {
          Files.deleteIfExists(target);
          Files.copy(tar, target);
        } else {
          continue;
        }
        setMode(target, e.getMode());
      }
    }
  }

  private static int mode(Path p, TarArchiveEntry e) throws IOException {
    if (e.isSymbolicLink()) {
      return 0120777;
    }
    int bits = 0;
    Set<PosixFilePermission> perms = Files.getPosixFilePermissions(p, LinkOption.NOFOLLOW_LINKS);
    PosixFilePermission[] order = PosixFilePermission.values();
    for (int i = 0; i < order.length; i++) {
      if (perms.contains(order[i])) {
        bits |= 1 << (8 - i);
      }
    }
    return (e.isDirectory() ? 040000 : 0100000) | bits;
  }

  private static void setMode(Path p, int mode) throws IOException {
    List<PosixFilePermission> order = List.of(PosixFilePermission.values());
    Set<PosixFilePermission> perms = java.util.EnumSet.noneOf(PosixFilePermission.class);
    for (int i = 0; i < order.size(); i++) {
      if ((mode & (1 << (8 - i))) != 0) {
        perms.add(order.get(i));
      }
    }
    Files.setPosixFilePermissions(p, perms);
  }
}
