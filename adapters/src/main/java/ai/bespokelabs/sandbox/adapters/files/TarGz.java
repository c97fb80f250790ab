package ai.bespokelabs.sandbox.adapters.files;

import ai.bespokelabs.sandbox.core.model.FileEntry;
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
 * Downloads are produced on their own platform thread into a bounded pipe (the reader's pace is the producer's;
 * a producer blocked in the file system never holds a carrier of the virtual threads);
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
    return stream(name, producer, () -> { });
  }

  /** Like {@link #stream(String, Producer)}; {@code onEnd} runs on the producer thread once it is done, however. */
  public static ReadableFile stream(String name, Producer producer, Runnable onEnd) {
    PipedInputStream in = new PipedInputStream(PIPE);
    PipedOutputStream out;
    try {
      out = new PipedOutputStream(in);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    Thread.ofPlatform().daemon().name("tar-" + name).start(() -> {
      try (OutputStream o = out; TarArchiveOutputStream tar = new TarArchiveOutputStream(
          new GzipCompressorOutputStream(o))) {
        tar.setLongFileMode(TarArchiveOutputStream.LONGFILE_POSIX);
        tar.setBigNumberMode(TarArchiveOutputStream.BIGNUMBER_POSIX);
        producer.write(tar);
        tar.finish();
      } catch (IOException | RuntimeException e) {
        // the reader closed early, or a file vanished mid-way: the reader sees the stream end abruptly
      } finally {
        onEnd.run();
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

  /**
   * The tree under {@code dir} as a tar.gz stream (links archived as links, never followed), for trees only the
   * gateway writes (a sandbox's files are archived through its handles, see the host backends' files).
   */
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

  /** How many levels an archive entry (and a link's resolution) may go down. */
  public static final int MAX_DEPTH = 128;
  private static final int MAX_LINK_HOPS = 40;
  /** At most this many entries, bytes per name (path or link target) and per component, and bytes in files. */
  static final int MAX_ENTRIES = 100_000;
  static final int MAX_NAME_BYTES = 4096;
  static final int MAX_COMPONENT_BYTES = 255;
  static final long MAX_EXTRACTED_BYTES = 16L << 30;
  /** How many characters of directory prefixes checking the tree may hold (a few tiny entries must not cost gigabytes). */
  private static final long TREE_BUDGET = 64L << 20;

  /**
   * Reads the whole spooled archive once and returns its entries, after checking the tree they build: a
   * corrupt archive, an entry leaving the directory ({@code ..}, absolute paths), an entry under a symbolic
   * link or a file of the archive, a link that is absolute or leads out of the directory (resolved against
   * the archive's own links), conflicting entries for one path, and anything that is not a file, directory
   * or symbolic link (hard links, devices, FIFOs, unknown types) answer 422.
   */
  public static List<Entry> check(Path spool) {
    List<Entry> out = new ArrayList<>();
    long extracted = 0;
    try (TarArchiveInputStream tar = open(spool)) {
      TarArchiveEntry e;
      while ((e = tar.getNextEntry()) != null) {
        String path = relative(bounded(e.getName()));
        if (path.isEmpty()) {
          continue;
        }
        for (String c : path.split("/")) {
          if (c.getBytes(java.nio.charset.StandardCharsets.UTF_8).length > MAX_COMPONENT_BYTES) {
            throw ApiException.invalid("archive entry has a name longer than " + MAX_COMPONENT_BYTES + " bytes");
          }
        }
        if (out.size() == MAX_ENTRIES) {
          throw ApiException.invalid("archive has more than " + MAX_ENTRIES + " entries");
        }
        if (e.isSymbolicLink()) {
          bounded(e.getLinkName());
        } else if (regular(e) && (extracted += e.getSize()) > MAX_EXTRACTED_BYTES) {
          throw ApiException.invalid("archive holds more than " + (MAX_EXTRACTED_BYTES >> 30) + " GiB of files");
        }
        if (e.isSymbolicLink()) {
          out.add(new Entry(path, false, true, e.getLinkName(), 0777, 0));
        } else if (e.isDirectory()) {
          out.add(new Entry(path, true, false, null, e.getMode() & 0777, 0));
        } else if (regular(e)) {
          tar.transferTo(OutputStream.nullOutputStream());
          out.add(new Entry(path, false, false, null, e.getMode() & 0777, e.getSize()));
        } else {
          throw ApiException.invalid("archive entry is " + kind(e) + "; only files, directories and symbolic links"
              + " are accepted: " + path);
        }
      }
    } catch (IOException | IllegalArgumentException e) {
      throw ApiException.invalid("archive is not a valid tar.gz");
    }
    checkTree(out);
    return out;
  }

  /** A regular file's entry type: normal, old-style normal or contiguous (nothing else that tar calls a file). */
  public static boolean regular(TarArchiveEntry e) {
    byte flag = e.getLinkFlag();
    return !e.isDirectory() && (flag == TarArchiveEntry.LF_NORMAL || flag == TarArchiveEntry.LF_OLDNORM
        || flag == TarArchiveEntry.LF_CONTIG);
  }

  private static String kind(TarArchiveEntry e) {
    if (e.isLink()) {
      return "a hard link";
    }
    if (e.isCharacterDevice() || e.isBlockDevice()) {
      return "a device";
    }
    if (e.isFIFO()) {
      return "a FIFO";
    }
    return "of an unsupported type";
  }

  private static String bounded(String name) {
    if (name.getBytes(java.nio.charset.StandardCharsets.UTF_8).length > MAX_NAME_BYTES) {
      throw ApiException.invalid("archive entry has a name or link target longer than " + MAX_NAME_BYTES + " bytes");
    }
    return name;
  }

  /** Checks the tree the entries build, links resolved against it; nothing is written yet. */
  static void checkTree(List<Entry> entries) {
    java.util.Map<String, Character> tree = new java.util.HashMap<>();
    long held = 0;
    java.util.Map<String, String> links = new java.util.LinkedHashMap<>();
    for (Entry e : entries) {
      String[] parts = e.path().split("/");
      if (parts.length > MAX_DEPTH) {
        throw ApiException.invalid("archive entry is too deep (at most " + MAX_DEPTH + " levels): " + e.path());
      }
      StringBuilder prefix = new StringBuilder();
      for (int i = 0; i < parts.length - 1; i++) {
        if (i > 0) {
          prefix.append('/');
        }
        prefix.append(parts[i]);
        Character k = tree.putIfAbsent(prefix.toString(), 'd');
        if (k == null && (held += prefix.length()) > TREE_BUDGET) {
          throw ApiException.invalid("archive's tree is too large to check");
        }
        if (k != null && k == 'l') {
          throw ApiException.invalid("archive entry goes through a symbolic link: " + e.path());
        }
        if (k != null && k == 'f') {
          throw ApiException.invalid("archive entry is inside a file of the archive: " + e.path());
        }
      }
      char type = e.dir() ? 'd' : e.symlink() ? 'l' : 'f';
      Character before = tree.put(e.path(), type);
      if (before != null && (before != type || type == 'l')) {
        throw ApiException.invalid("archive has conflicting entries for: " + e.path());
      }
      if (e.symlink()) {
        links.put(e.path(), e.linkTarget());
      }
    }
    links.forEach((path, target) -> {
      if (!staysInside(path, target, tree, links)) {
        throw ApiException.invalid("archive entry points outside the directory: " + path);
      }
    });
  }

  /** Whether link {@code path -> target} resolves inside the directory, following the archive's own links. */
  private static boolean staysInside(String path, String target, java.util.Map<String, Character> tree,
      java.util.Map<String, String> links) {
    if (target == null || target.isEmpty() || target.startsWith("/") || target.indexOf('\0') >= 0) {
      return false;
    }
    java.util.ArrayDeque<String> at = new java.util.ArrayDeque<>(List.of(path.split("/")));
    at.removeLast();
    java.util.ArrayDeque<String> pending = new java.util.ArrayDeque<>(List.of(target.split("/")));
    int hops = 0;
    while (!pending.isEmpty()) {
      String c = pending.removeFirst();
      if (c.isEmpty() || c.equals(".")) {
        continue;
      }
      if (c.equals("..")) {
        if (at.isEmpty()) {
          return false;
        }
        at.removeLast();
        continue;
      }
      at.addLast(c);
      if (at.size() > MAX_DEPTH) {
        return false;
      }
      String now = String.join("/", at);
      Character k = tree.get(now);
      if (k != null && k == 'l') {
        String next = links.get(now);
        if (++hops > MAX_LINK_HOPS || next.isEmpty() || next.startsWith("/")) {
          return false;
        }
        at.removeLast();
        List<String> parts = List.of(next.split("/"));
        for (int i = parts.size() - 1; i >= 0; i--) {
          pending.addFirst(parts.get(i));
        }
      }
    }
    return true;
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
    return SpooledUpload.open("upload-", (ch, spool, size) -> {
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
