package ai.bespokelabs.sandbox.adapters.files;

import ai.bespokelabs.sandbox.core.error.ApiException;
import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PipedInputStream;
import java.io.PipedOutputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.apache.commons.compress.compressors.gzip.GzipCompressorInputStream;
import org.apache.commons.compress.compressors.gzip.GzipCompressorOutputStream;

/**
 * Directory transfers as gzip-compressed tar archives whose entries are relative to the directory.
 * Downloads are produced on their own thread into a bounded pipe (the reader's pace is the producer's);
 * uploads are spooled to a temporary file and checked whole before anything is extracted, so a broken
 * archive changes nothing.
 */
public final class TarGz {
  private static final int PIPE = 256 * 1024;

  private TarGz() {}

  /** Writes the archive's entries; runs on the producer thread. */
  @FunctionalInterface
  public interface Producer {
    void write(TarArchiveOutputStream tar) throws IOException;
  }

  /** A download whose bytes {@code producer} writes as a tar.gz while the reader reads them. */
  public static ReadableFile stream(String name, Producer producer) {
    PipedInputStream in = new PipedInputStream(PIPE);
    PipedOutputStream out;
    try {
      out = new PipedOutputStream(in);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    Thread.ofVirtual().name("tar-" + name).start(() -> {
      try (OutputStream o = out; TarArchiveOutputStream tar = new TarArchiveOutputStream(
          new GzipCompressorOutputStream(o))) {
        tar.setLongFileMode(TarArchiveOutputStream.LONGFILE_POSIX);
        tar.setBigNumberMode(TarArchiveOutputStream.BIGNUMBER_POSIX);
        producer.write(tar);
        tar.finish();
      } catch (IOException | RuntimeException e) {
        // the reader closed early, or a file vanished mid-way: the reader sees the stream end abruptly
      }
    });
    return new ReadableFile() {
      @Override
      public long size() {
        return -1;
      }

      @Override
      public int read(byte[] buf) throws IOException {
        int total = 0;
        while (total < buf.length) {
          int n;
          try {
            n = in.read(buf, total, buf.length - total);
          } catch (IOException e) {
            // "write end dead": the producer stopped; what was written is all there is
            n = -1;
          }
          if (n < 0) {
            return total == 0 ? -1 : total;
          }
          total += n;
        }
        return total;
      }

      @Override
      public void close() throws IOException {
        in.close();
      }
    };
  }

  /** The tree under {@code dir} as a tar.gz stream (links archived as links, never followed). */
  public static ReadableFile ofDirectory(Path dir) {
    return stream(dir.getFileName() == null ? "root" : dir.getFileName().toString(), tar ->
        Files.walkFileTree(dir, new java.nio.file.SimpleFileVisitor<>() {
          @Override
          public java.nio.file.FileVisitResult preVisitDirectory(Path d, java.nio.file.attribute.BasicFileAttributes a)
              throws IOException {
            if (!d.equals(dir)) {
              TarArchiveEntry e = new TarArchiveEntry(dir.relativize(d) + "/");
              e.setMode(040000 | mode(d));
              e.setModTime(a.lastModifiedTime().toMillis());
              tar.putArchiveEntry(e);
              tar.closeArchiveEntry();
            }
            return java.nio.file.FileVisitResult.CONTINUE;
          }

          @Override
          public java.nio.file.FileVisitResult visitFile(Path f, java.nio.file.attribute.BasicFileAttributes a)
              throws IOException {
            String name = dir.relativize(f).toString();
            if (a.isSymbolicLink()) {
              TarArchiveEntry e = new TarArchiveEntry(name, TarArchiveEntry.LF_SYMLINK);
              e.setLinkName(Files.readSymbolicLink(f).toString());
              tar.putArchiveEntry(e);
              tar.closeArchiveEntry();
            } else if (a.isRegularFile()) {
              TarArchiveEntry e = new TarArchiveEntry(name);
              e.setSize(a.size());
              e.setMode(0100000 | mode(f));
              e.setModTime(a.lastModifiedTime().toMillis());
              tar.putArchiveEntry(e);
              try (InputStream in = Files.newInputStream(f, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
                byte[] buf = new byte[64 * 1024];
                long copied = 0;
                for (int n; (n = in.read(buf)) > 0; ) {
                  tar.write(buf, 0, n);
                  copied += n;
                }
                if (copied != a.size()) {
                  throw new IOException("file changed while archiving");
                }
              }
              tar.closeArchiveEntry();
            }
            return java.nio.file.FileVisitResult.CONTINUE;
          }
        }));
  }

  private static int mode(Path p) throws IOException {
    int mode = 0;
    for (java.nio.file.attribute.PosixFilePermission perm
        : Files.getPosixFilePermissions(p, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
      mode |= 1 << (8 - perm.ordinal());
    }
    return mode;
  }

  /** An entry of a checked upload: its normalized relative path, type, mode and (for links) target. */
  public record Entry(String path, boolean dir, boolean symlink, String linkTarget, int mode, long size) {}

  /**
   * Reads the whole spooled archive once and returns its entries; a corrupt archive, an entry leaving the
   * directory ({@code ..}, absolute paths, links pointing out) or one that is not a file, directory or
   * symbolic link answers 422.
   */
  public static List<Entry> check(Path spool) {
    List<Entry> out = new ArrayList<>();
    try (TarArchiveInputStream tar = open(spool)) {
      TarArchiveEntry e;
      while ((e = tar.getNextEntry()) != null) {
        String path = relative(e.getName());
        if (path.isEmpty()) {
          continue;
        }
        if (e.isSymbolicLink()) {
          String target = e.getLinkName();
          java.nio.file.Path resolved = Path.of("/x", path).getParent().resolve(target).normalize();
          if (target.startsWith("/") || !resolved.startsWith("/x")) {
            throw ApiException.invalid("archive entry points outside the directory: " + path);
          }
          out.add(new Entry(path, false, true, target, 0777, 0));
        } else if (e.isDirectory()) {
          out.add(new Entry(path, true, false, null, e.getMode() & 0777, 0));
        } else if (e.isFile()) {
          tar.transferTo(OutputStream.nullOutputStream());
          out.add(new Entry(path, false, false, null, e.getMode() & 0777, e.getSize()));
        } else {
          throw ApiException.invalid("archive entry is not a file, directory or symbolic link: " + path);
        }
      }
    } catch (IOException | IllegalArgumentException e) {
      throw ApiException.invalid("archive is not a valid tar.gz");
    }
    return out;
  }

  /** Opens a checked spool for extraction. */
  public static TarArchiveInputStream open(Path spool) throws IOException {
    return new TarArchiveInputStream(new GzipCompressorInputStream(new BufferedInputStream(
        Files.newInputStream(spool), 64 * 1024)));
  }

  /** The entry name as a normalized relative path; 422 when it leaves the directory. */
  public static String relative(String name) {
    String n = name.replace('\\', '/');
    while (n.startsWith("./")) {
      n = n.substring(2);
    }
    if (n.startsWith("/")) {
      throw ApiException.invalid("archive entry has an absolute path: " + name);
    }
    String normalized = Path.of("/x", n).normalize().toString();
    if (!normalized.startsWith("/x")) {
      throw ApiException.invalid("archive entry leaves the directory: " + name);
    }
    return normalized.equals("/x") ? "" : normalized.substring(3);
  }

  /** An upload spooled to a temporary file, handed to {@code onCommit} (which may extract it) at commit. */
  public static WritableFile spool(ExtractFn onCommit) {
    return SpooledUpload.open("upload-", 0, (ch, spool, size) -> {
      ch.close();
      return onCommit.extract(spool, check(spool));
    });
  }

  /** Extracts a checked archive; returns the entry of the directory it landed in. */
  @FunctionalInterface
  public interface ExtractFn {
    FileEntry extract(Path spool, List<Entry> entries) throws IOException;
  }
}
