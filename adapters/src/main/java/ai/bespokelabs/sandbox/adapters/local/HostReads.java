package ai.bespokelabs.sandbox.adapters.local;

import static ai.bespokelabs.sandbox.adapters.local.Handles.NOFOLLOW;
import static ai.bespokelabs.sandbox.adapters.local.Handles.enter;
import static ai.bespokelabs.sandbox.adapters.local.Handles.entry;
import static ai.bespokelabs.sandbox.adapters.local.Handles.self;
import static ai.bespokelabs.sandbox.adapters.local.Handles.stat;

import ai.bespokelabs.sandbox.adapters.files.ReadableFile;
import ai.bespokelabs.sandbox.adapters.files.SandboxPaths;
import ai.bespokelabs.sandbox.adapters.local.SandboxTree.Walk;
import ai.bespokelabs.sandbox.core.model.FileEntry;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.SeekableByteChannel;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.SecureDirectoryStream;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFileAttributes;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Set;

/**
 * Listing and reading files of a sandbox directory: types are checked without following a link before anything
 * is opened, and FIFOs, sockets and devices are refused (see {@link HostFiles}).
 */
final class HostReads {
  private static final Set<OpenOption> READ_ONLY = Set.of(StandardOpenOption.READ, NOFOLLOW);

  private final SandboxTree tree;

  HostReads(SandboxTree tree) {
    this.tree = tree;
  }

  List<FileEntry> list(String path) {
    List<String> parts = tree.components(path);
    try (Walk w = tree.walk(parts, true)) {
      if (!w.complete()) {
        throw SandboxPaths.notFound();
      }
      SecureDirectoryStream<Path> dir = w.chain().dir();
      if (w.name() != null) {
        PosixFileAttributes a = stat(dir, w.name());
        if (a == null) {
          throw SandboxPaths.notFound();
        }
        if (!a.isDirectory()) {
          return List.of(entry(w.name().toString(), tree.shown(parts), a));
        }
        dir = enter(w.chain(), w.name().toString(), true);
        if (dir == null) {
          throw SandboxPaths.notFound();
        }
      }
      List<FileEntry> out = new ArrayList<>();
      for (Path child : dir) {
        Path name = child.getFileName();
        PosixFileAttributes a = stat(dir, name);
        if (a != null) { // else removed while listing
          List<String> at = new ArrayList<>(parts);
          at.add(name.toString());
          out.add(entry(name.toString(), tree.shown(at), a));
        }
      }
      out.sort(Comparator.comparing(FileEntry::name));
      return out;
    } catch (java.nio.file.DirectoryIteratorException e) {
      throw SandboxPaths.changed();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  ReadableFile openRead(String path) {
    List<String> parts = tree.components(path);
    try (Walk w = tree.walk(parts, true)) {
      if (w.name() == null) {
        throw SandboxPaths.isDirectory();
      }
      if (!w.complete()) {
        throw SandboxPaths.notFound();
      }
      return regularFile(w.chain().dir(), w.name(), tree.root(), String.join("/", parts));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * Opens regular file {@code name} of {@code dir} for reading, its end fixed at its size when opened. Its
   * type is checked (without following a link) before anything opens it. Where {@code openat2} is available
   * the file is then opened by {@code relative} below {@code root} without following links and without
   * blocking, and must be the very file checked; elsewhere it is opened through the handle and must be
   * seekable, so a FIFO is never read.
   */
  static ReadableFile regularFile(SecureDirectoryStream<Path> dir, Path name, Path root, String relative)
      throws IOException {
    PosixFileAttributes a = stat(dir, name);
    if (a == null) {
      throw SandboxPaths.notFound();
    }
    if (a.isDirectory()) {
      throw SandboxPaths.isDirectory();
    }
    if (a.isSymbolicLink()) {
      throw SandboxPaths.symlink();
    }
    if (!a.isRegularFile()) {
      throw SandboxPaths.special();
    }
    SeekableByteChannel ch;
    if (OPENER.isPresent()) {
      ch = openBeneath(OPENER.get(), root, relative, a);
    } else {
      try {
        ch = dir.newByteChannel(name, READ_ONLY);
      } catch (NoSuchFileException e) {
        throw SandboxPaths.notFound();
      } catch (FileSystemException e) {
        throw SandboxPaths.changed();
      }
    }
    try {
      ch.position(0); // fails on a FIFO
      return bounded(ch, ch.size());
    } catch (IOException e) {
      ch.close();
      throw SandboxPaths.special();
    }
  }

  static final java.util.Optional<BeneathOpener> OPENER = BeneathOpener.available();

  /**
   * {@code relative} below {@code root} opened without following links or blocking; read through its
   * descriptor only once it is known to be the regular file {@code checked} (a FIFO swapped in is opened
   * without waiting, and refused).
   */
  private static SeekableByteChannel openBeneath(BeneathOpener opener, Path root, String relative,
      PosixFileAttributes checked) throws IOException {
    int fd;
    try {
      fd = opener.open(root, relative);
    } catch (IOException e) {
      throw SandboxPaths.changed(); // it was a regular file a moment ago
    }
    try {
      Path self = Path.of("/proc/self/fd/" + fd);
      PosixFileAttributes opened = Files.readAttributes(self, PosixFileAttributes.class);
      if (!opened.isRegularFile()) {
        throw SandboxPaths.special();
      }
      if (!java.util.Objects.equals(opened.fileKey(), checked.fileKey())) {
        throw SandboxPaths.changed();
      }
      // the same regular file again, through its descriptor's link (followed on purpose): nothing to wait for
      return Files.newByteChannel(self, StandardOpenOption.READ);
    } finally {
      opener.close(fd);
    }
  }

  /** A download of the first {@code size} bytes of {@code ch}. */
  private static ReadableFile bounded(SeekableByteChannel ch, long size) {
    return new ReadableFile() {
      private long left = size;

      @Override
      public long size() {
        return size;
      }

      @Override
      public int read(byte[] buf) throws IOException {
        if (left <= 0) {
          return -1;
        }
        ByteBuffer b = ByteBuffer.wrap(buf, 0, (int) Math.min(buf.length, left));
        while (b.hasRemaining()) {
          if (ch.read(b) < 0) {
            break;
          }
        }
        int n = b.position();
        left -= n;
        return n == 0 ? -1 : n;
      }

      @Override
      public void close() throws IOException {
        ch.close();
      }
    };
  }
}
