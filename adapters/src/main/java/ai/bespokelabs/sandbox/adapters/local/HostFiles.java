package ai.bespokelabs.sandbox.adapters.local;

import ai.bespokelabs.sandbox.adapters.spi.FileEntry;
import ai.bespokelabs.sandbox.adapters.files.ReadableFile;
import ai.bespokelabs.sandbox.adapters.files.SandboxPaths;
import ai.bespokelabs.sandbox.adapters.files.TarGz;
import ai.bespokelabs.sandbox.adapters.files.WritableFile;
import ai.bespokelabs.sandbox.core.error.ApiException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.SeekableByteChannel;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.DirectoryStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.SecureDirectoryStream;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipal;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Deque;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.UUID;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;

/**
 * Files of a host-directory sandbox, whose programs may change the tree at any moment. A path is relative to
 * the sandbox directory, or absolute as the sandbox's programs see it (the host path for {@code local},
 * {@code /sandbox/…} under bubblewrap); {@code ..} is resolved by name and may not leave the directory.
 *
 * <p>Every operation resolves the path once, one component at a time, from a handle on the sandbox
 * directory ({@link SecureDirectoryStream}: {@code openat}, {@code fstatat}, {@code renameat},
 * {@code unlinkat} relative to an open directory, never following a symbolic link), and then acts on the
 * handle it reached: a link met on the way or at the end is refused, never followed, so renaming or swapping
 * entries meanwhile cannot lead anything outside the directory. FIFOs, sockets and devices are refused from
 * their type before anything opens them. (Java's handles cannot open with {@code O_NONBLOCK}: sandbox code
 * that swaps a FIFO into a name between that check and the open can still block the open, on one of its own
 * organization's file threads, see the adapters' file pool; an archive download's walk runs on a thread of
 * its own, at most {@link #ARCHIVES_PER_SANDBOX} at a time per sandbox.)
 *
 * <p>What the gateway creates (uploaded files, directories, archive entries) is made in a private staging
 * directory beside the sandboxes (same file system), given the sandbox directory's owner and its mode there,
 * and renamed into place relative to the parent's handle; an upload's missing parent directories are only
 * created at commit, so a refused, aborted or failed upload leaves nothing behind.
 */
final class HostFiles {
  /** How many levels a path may go down. */
  static final int MAX_DEPTH = TarGz.MAX_DEPTH;
  private static final LinkOption NOFOLLOW = LinkOption.NOFOLLOW_LINKS;
  /** How many archive downloads of one sandbox may run at a time. */
  static final int ARCHIVES_PER_SANDBOX = 8;
  private static final java.util.concurrent.ConcurrentHashMap<Path, Integer> LIVE_ARCHIVES =
      new java.util.concurrent.ConcurrentHashMap<>();
  private static final Set<OpenOption> READ_ONLY = Set.of(StandardOpenOption.READ, NOFOLLOW);

  private final Path root;
  private final String inside;
  private final Path staging;

  /**
   * @param inside where programs see {@code root}; null when they see its host path
   * @param staging a directory only the gateway uses, on the sandbox directory's file system
   */
  HostFiles(Path root, String inside, Path staging) {
    this.root = root.toAbsolutePath().normalize();
    this.inside = inside == null ? this.root.toString() : inside;
    this.staging = staging == null ? this.root.resolveSibling(".files-staging") : staging.toAbsolutePath().normalize();
  }

  // ---- resolution ----------------------------------------------------------------------------------------

  /** The components of {@code path} below the sandbox directory (empty for the directory itself). */
  List<String> components(String path) {
    if (path == null || path.isBlank()) {
      throw SandboxPaths.required();
    }
    if (path.indexOf('\0') >= 0) {
      throw ApiException.invalid("path is not a valid path");
    }
    String rel = path;
    if (path.startsWith("/")) {
      String prefix = inside.endsWith("/") ? inside : inside + "/";
      if (path.equals(inside) || path.equals(prefix)) {
        rel = "";
      } else if (path.startsWith(prefix)) {
        rel = path.substring(prefix.length());
      } else {
        throw SandboxPaths.escapes();
      }
    }
    Deque<String> out = new ArrayDeque<>();
    for (String c : rel.split("/")) {
      if (c.isEmpty() || c.equals(".")) {
        continue;
      }
      if (c.equals("..")) {
        if (out.isEmpty()) {
          throw SandboxPaths.escapes();
        }
        out.removeLast();
      } else {
        if (c.getBytes(java.nio.charset.StandardCharsets.UTF_8).length > 255) {
          throw ApiException.invalid("path is not a valid path");
        }
        try {
          Path.of(c);
        } catch (java.nio.file.InvalidPathException e) {
          throw ApiException.invalid("path is not a valid path");
        }
        out.addLast(c);
      }
      if (out.size() > MAX_DEPTH) {
        throw SandboxPaths.tooDeep(MAX_DEPTH);
      }
    }
    return List.copyOf(out);
  }

  /**
   * Open directories from the sandbox directory down; closing it closes them all. {@link #dir} is the last
   * one reached.
   */
  private static final class Chain implements AutoCloseable {
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

  private static SecureDirectoryStream<Path> secure(DirectoryStream<Path> d) throws IOException {
    if (d instanceof SecureDirectoryStream<Path> s) {
      return s;
    }
    d.close();
    throw new ApiException(501, "the files API needs a file system with secure directory access (openat)");
  }

  /** A handle on the sandbox directory itself (its own name is not followed if it became a link). */
  private Chain openRoot() {
    Chain c = new Chain();
    try {
      Path real = root.toRealPath();
      try (SecureDirectoryStream<Path> parent = secure(Files.newDirectoryStream(
          real.getParent() == null ? real : real.getParent()))) {
        c.push(real.getParent() == null ? secure(Files.newDirectoryStream(real))
            : parent.newDirectoryStream(real.getFileName(), NOFOLLOW));
      }
      return c;
    } catch (NoSuchFileException e) {
      c.close();
      throw ApiException.conflict("sandbox directory is gone");
    } catch (IOException e) {
      c.close();
      throw new UncheckedIOException(e);
    } catch (RuntimeException e) {
      c.close();
      throw e;
    }
  }

  /** The attributes of {@code name} in {@code dir} itself (a link is described, not followed); null if none. */
  private static PosixFileAttributes stat(SecureDirectoryStream<Path> dir, Path name) throws IOException {
    try {
      return dir.getFileAttributeView(name, PosixFileAttributeView.class, NOFOLLOW).readAttributes();
    } catch (NoSuchFileException e) {
      return null;
    }
  }

  private static PosixFileAttributes self(SecureDirectoryStream<Path> dir) throws IOException {
    return dir.getFileAttributeView(PosixFileAttributeView.class).readAttributes();
  }

  /** Opens directory {@code name} of the chain's last directory, refusing a link; null when missing. */
  private static SecureDirectoryStream<Path> enter(Chain chain, String name, boolean missingIfFile)
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

  /**
   * The directories from the sandbox's down to the parent of the path's last component, or to the deepest
   * one that exists ({@link #complete} tells which).
   */
  private record Walk(Chain chain, List<String> parts, int reached) implements AutoCloseable {
    boolean complete() {
      return reached == Math.max(0, parts.size() - 1);
    }

    Path name() {
      return parts.isEmpty() ? null : Path.of(parts.get(parts.size() - 1));
    }

    @Override
    public void close() {
      chain.close();
    }
  }

  private Walk walk(List<String> parts, boolean missingIfFile) {
    Chain chain = openRoot();
    int reached = 0;
    try {
      for (; reached < parts.size() - 1; reached++) {
        if (enter(chain, parts.get(reached), missingIfFile) == null) {
          break;
        }
      }
      return new Walk(chain, parts, reached);
    } catch (IOException e) {
      chain.close();
      throw new UncheckedIOException(e);
    } catch (RuntimeException e) {
      chain.close();
      throw e;
    }
  }

  /** How programs see the entry at {@code parts}. */
  private String shown(List<String> parts) {
    String rel = String.join("/", parts);
    return rel.isEmpty() ? inside : (inside.endsWith("/") ? inside : inside + "/") + rel;
  }

  private static FileEntry entry(String name, String shown, PosixFileAttributes a) {
    String type = a.isSymbolicLink() ? FileEntry.SYMLINK : a.isDirectory() ? FileEntry.DIRECTORY
        : a.isRegularFile() ? FileEntry.FILE : FileEntry.OTHER;
    return new FileEntry(name, shown, a.isDirectory(), a.isRegularFile() ? a.size() : 0, mode(a),
        a.lastModifiedTime().toInstant(), type);
  }

  private static int mode(PosixFileAttributes a) {
    int mode = 0;
    for (PosixFilePermission perm : a.permissions()) {
      mode |= 1 << (8 - perm.ordinal());
    }
    return mode;
  }

  // ---- list, read, delete --------------------------------------------------------------------------------

  List<FileEntry> list(String path) {
    List<String> parts = components(path);
    try (Walk w = walk(parts, true)) {
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
          return List.of(entry(w.name().toString(), shown(parts), a));
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
          out.add(entry(name.toString(), shown(at), a));
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
    List<String> parts = components(path);
    try (Walk w = walk(parts, true)) {
      if (w.name() == null) {
        throw SandboxPaths.isDirectory();
      }
      if (!w.complete()) {
        throw SandboxPaths.notFound();
      }
      return regularFile(w.chain().dir(), w.name(), root, String.join("/", parts));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * What a failed write says: a file system refusal other than a missing entry means the sandbox changed the
   * tree under the operation (409); anything else goes on as it is.
   */
  private static void failIfChanged(Exception e) {
    if (e instanceof FileSystemException && !(e instanceof NoSuchFileException)) {
      throw SandboxPaths.changed();
    }
  }

  /**
   * Opens regular file {@code name} of {@code dir} for reading, its end fixed at its size when opened. Its
   * type is checked (without following a link) before anything opens it. Where {@code openat2} is available
   * the file is then opened by {@code relative} below {@code root} without following links and without
   * blocking, and must be the very file checked; elsewhere it is opened through the handle and must be
   * seekable, so a FIFO is never read.
   */
  private static ReadableFile regularFile(SecureDirectoryStream<Path> dir, Path name, Path root, String relative)
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

  private static final java.util.Optional<BeneathOpener> OPENER = BeneathOpener.available();

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

  void delete(String path, boolean recursive) {
    List<String> parts = components(path);
    if (parts.isEmpty()) {
      throw ApiException.invalid("path must name something inside the sandbox");
    }
    try (Walk w = walk(parts, true)) {
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
  private static void deleteTree(SecureDirectoryStream<Path> parent, Path name) throws IOException {
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

  // ---- creating entries ------------------------------------------------------------------------------------

  /** The staging directory's handle, created (mode 0700) when missing. */
  private SecureDirectoryStream<Path> openStaging() throws IOException {
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

  private Path stagingName(String kind) {
    return Path.of("." + kind + "-" + UUID.randomUUID());
  }

  /** Gives a staged entry (never anything of the sandbox's) to {@code owner}; a link itself, not its target. */
  private static void own(Path staged, UserPrincipal owner) throws IOException {
    PosixFileAttributeView v = Files.getFileAttributeView(staged, PosixFileAttributeView.class, NOFOLLOW);
    if (!v.readAttributes().owner().equals(owner)) {
      v.setOwner(owner);
    }
  }

  /** Renames staged {@code name} to {@code target} in {@code dir}. */
  private static void place(SecureDirectoryStream<Path> stage, Path name, SecureDirectoryStream<Path> dir,
      Path target) throws IOException {
    try {
      stage.move(name, dir, target);
    } catch (AtomicMoveNotSupportedException e) {
      throw ApiException.conflict("files cannot be written here: the sandbox directory is on another file system"
          + " than the gateway's sandboxes directory");
    }
  }

  /** The directories an upload or extraction created so far, to remove again when it fails. */
  private static final class Created {
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
  private SecureDirectoryStream<Path> enterOrCreate(Chain chain, String name, SecureDirectoryStream<Path> stage,
      UserPrincipal owner, Created created) throws IOException {
    SecureDirectoryStream<Path> d = enter(chain, name, false);
    if (d != null) {
      return d;
    }
    Path staged = stagingName("dir");
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
  private static UserPrincipal owner(Chain chain) throws IOException {
    return self(chain.open.peekFirst()).owner();
  }

  /** Checks, without creating anything, that an upload to {@code parts} can land. */
  private void checkWritable(List<String> parts) throws IOException {
    try (Walk w = walk(parts, false)) {
      if (w.complete()) {
        PosixFileAttributes a = stat(w.chain().dir(), w.name());
        if (a != null && a.isDirectory()) {
          throw SandboxPaths.isDirectory();
        }
        if (a != null && a.isSymbolicLink()) {
          throw SandboxPaths.symlink();
        }
      }
    }
  }

  WritableFile openWrite(String path, boolean executable) {
    List<String> parts = components(path);
    if (parts.isEmpty()) {
      throw SandboxPaths.isDirectory();
    }
    try {
      checkWritable(parts);
      SecureDirectoryStream<Path> stage = openStaging();
      Path staged = stagingName("file");
      Path abs = staging.resolve(staged);
      FileChannel ch;
      try {
        ch = FileChannel.open(abs, Set.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE),
            PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
      } catch (IOException | RuntimeException e) {
        stage.close();
        throw e;
      }
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
          Created created = new Created();
          Chain chain = openRoot();
          try {
            UserPrincipal owner = owner(chain);
            for (int i = 0; i < parts.size() - 1; i++) {
              enterOrCreate(chain, parts.get(i), stage, owner, created);
            }
            Path name = Path.of(parts.get(parts.size() - 1));
            PosixFileAttributes before = stat(chain.dir(), name);
            if (before != null && before.isDirectory()) {
              throw SandboxPaths.isDirectory();
            }
            if (before != null && before.isSymbolicLink()) {
              throw SandboxPaths.symlink();
            }
            Files.setPosixFilePermissions(abs, PosixFilePermissions.fromString(executable ? "rwxr-xr-x" : "rw-r--r--"));
            own(abs, owner);
            place(stage, staged, chain.dir(), name);
            done = true;
            PosixFileAttributes a = stat(chain.dir(), name);
            return entry(name.toString(), shown(parts), Objects.requireNonNull(a, "placed"));
          } catch (IOException | RuntimeException e) {
            if (!done) {
              created.undo();
            }
            failIfChanged(e);
            throw e;
          } finally {
            chain.close();
            abort();
          }
        }

        @Override
        public void abort() {
          try {
            ch.close();
            Files.deleteIfExists(abs);
          } catch (IOException ignored) {
            // the staging directory only holds the gateway's own leftovers
          }
          try {
            stage.close();
          } catch (IOException ignored) {
            // nothing to flush
          }
          done = true;
        }
      };
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  // ---- directory archives ----------------------------------------------------------------------------

  /** The directory at {@code path} as a tar.gz of its tree (links kept as links, special files skipped). */
  ReadableFile archiveRead(String path) {
    List<String> parts = components(path);
    Walk w = walk(parts, true);
    try {
      if (!w.complete()) {
        throw SandboxPaths.notFound();
      }
      if (w.name() != null) {
        PosixFileAttributes a = stat(w.chain().dir(), w.name());
        if (a == null) {
          throw SandboxPaths.notFound();
        }
        if (!a.isDirectory()) {
          throw ApiException.invalid("path is not a directory");
        }
        if (enter(w.chain(), w.name().toString(), true) == null) {
          throw SandboxPaths.notFound();
        }
      }
    } catch (IOException e) {
      w.close();
      throw new UncheckedIOException(e);
    } catch (RuntimeException e) {
      w.close();
      throw e;
    }
    boolean[] admitted = {false};
    LIVE_ARCHIVES.compute(root, (k, n) -> {
      int now = n == null ? 0 : n;
      if (now >= ARCHIVES_PER_SANDBOX) {
        return n;
      }
      admitted[0] = true;
      return now + 1;
    });
    if (!admitted[0]) {
      w.close();
      throw new ApiException(429, "too many archive downloads of this sandbox in progress; finish one first");
    }
    Path hostDir = root.resolve(String.join("/", parts));
    try {
      return TarGz.stream(parts.isEmpty() ? "root" : parts.get(parts.size() - 1),
          tar -> archive(root, w.chain().dir(), hostDir, "", tar, 0), () -> {
            w.close();
            archiveEnded();
          });
    } catch (RuntimeException e) {
      w.close();
      archiveEnded();
      throw e;
    }
  }

  private void archiveEnded() {
    LIVE_ARCHIVES.computeIfPresent(root, (k, n) -> n <= 1 ? null : n - 1);
  }

  /** Archives the entries of {@code dir} under {@code prefix}. */
  private static void archive(Path root, SecureDirectoryStream<Path> dir, Path hostDir, String prefix, TarArchiveOutputStream tar,
      int depth) throws IOException {
    if (depth > 4 * MAX_DEPTH) {
      throw new IOException("tree too deep");
    }
    List<Path> names = new ArrayList<>();
    for (Path child : dir) {
      names.add(child.getFileName());
    }
    names.sort(Comparator.naturalOrder());
    for (Path n : names) {
      PosixFileAttributes a = stat(dir, n);
      if (a == null) {
        continue;
      }
      String name = prefix + n;
      if (a.isDirectory()) {
        SecureDirectoryStream<Path> sub;
        try {
          sub = dir.newDirectoryStream(n, NOFOLLOW);
        } catch (FileSystemException e) {
          continue; // replaced meanwhile
        }
        try (sub) {
          if (!self(sub).fileKey().equals(a.fileKey())) {
            continue;
          }
          TarArchiveEntry e = new TarArchiveEntry(name + "/");
          e.setMode(040000 | mode(a));
          e.setModTime(a.lastModifiedTime().toMillis());
          tar.putArchiveEntry(e);
          tar.closeArchiveEntry();
          archive(root, sub, hostDir.resolve(n), name + "/", tar, depth + 1);
        }
      } else if (a.isSymbolicLink()) {
        String target = linkTarget(root, hostDir.resolve(n));
        if (target != null) {
          TarArchiveEntry e = new TarArchiveEntry(name, TarArchiveEntry.LF_SYMLINK);
          e.setLinkName(target);
          tar.putArchiveEntry(e);
          tar.closeArchiveEntry();
        }
      } else if (a.isRegularFile()) {
        ReadableFile in;
        try {
          in = regularFile(dir, n, root, root.relativize(hostDir.resolve(n)).toString());
        } catch (ApiException e) {
          continue; // replaced meanwhile by something else
        }
        try (in) {
          TarArchiveEntry e = new TarArchiveEntry(name);
          e.setSize(in.size());
          e.setMode(0100000 | mode(a));
          e.setModTime(a.lastModifiedTime().toMillis());
          tar.putArchiveEntry(e);
          byte[] buf = new byte[64 * 1024];
          long copied = 0;
          for (int k; (k = in.read(buf)) > 0; ) {
            tar.write(buf, 0, k);
            copied += k;
          }
          if (copied != in.size()) {
            throw new IOException("file changed while archiving");
          }
          tar.closeArchiveEntry();
        }
      }
    }
  }

  /**
   * The target of link {@code host} of the sandbox at {@code root}, read with {@code openat2} below the root with
   * no link followed on the way, so only a link of the sandbox is ever read (its target is only text, never
   * followed). Without {@code openat2} links are left out of the archive: read by host path, a directory the
   * sandbox swapped on the way could lead the read outside it. Null when it is not there as a link any more.
   */
  private static String linkTarget(Path root, Path host) {
    if (OPENER.isEmpty()) {
      return null;
    }
    try {
      return OPENER.get().readLink(root, root.relativize(host).toString());
    } catch (IOException e) {
      return null;
    }
  }

  /**
   * Receives a tar.gz and, once it arrived whole and its tree checked (see {@link TarGz#check}) and found to
   * fit the directory at {@code path} (created when missing) without going through a link or replacing a
   * directory, extracts it, keeping modes (without set-id bits) and links; everything it creates is the
   * sandbox owner's.
   */
  WritableFile archiveWrite(String path) {
    List<String> parts = components(path);
    try {
      try (Walk w = walk(parts, false)) {
        if (w.complete() && w.name() != null) {
          PosixFileAttributes a = stat(w.chain().dir(), w.name());
          if (a != null && a.isSymbolicLink()) {
            throw SandboxPaths.symlink();
          }
          if (a != null && !a.isDirectory()) {
            throw ApiException.invalid("path is not a directory");
          }
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return TarGz.spool((spool, entries) -> {
      Created created = new Created();
      Chain chain = openRoot();
      try (SecureDirectoryStream<Path> stage = openStaging()) {
        UserPrincipal owner = owner(chain);
        int base = chain.open.size();
        boolean exists = true;
        for (String c : parts) {
          exists = enter(chain, c, false) != null;
          if (!exists) {
            break;
          }
        }
        if (exists) {
          fits(chain.dir(), entries);
        }
        while (chain.open.size() > base) {
          chain.open.removeLast().close();
        }
        for (String c : parts) {
          enterOrCreate(chain, c, stage, owner, created);
        }
        SecureDirectoryStream<Path> target = chain.dir();
        extract(chain, stage, spool, entries, owner, created);
        return entry(parts.isEmpty() ? "" : parts.get(parts.size() - 1), shown(parts), self(target));
      } catch (IOException | RuntimeException e) {
        created.undo();
        failIfChanged(e);
        throw e;
      } finally {
        chain.close();
      }
    });
  }

  /** Refuses an archive whose entries would go through a link or a file, or replace a directory, in {@code dir}. */
  private static void fits(SecureDirectoryStream<Path> dir, List<TarGz.Entry> entries) throws IOException {
    for (TarGz.Entry e : entries) {
      String[] parts = e.path().split("/");
      SecureDirectoryStream<Path> cur = dir;
      List<SecureDirectoryStream<Path>> opened = new ArrayList<>();
      try {
        for (int i = 0; i < parts.length; i++) {
          PosixFileAttributes a = stat(cur, Path.of(parts[i]));
          if (a == null) {
            break;
          }
          boolean last = i == parts.length - 1;
          if (a.isSymbolicLink() && !last) {
            throw ApiException.invalid("archive entry goes through a symbolic link in the sandbox: " + e.path());
          }
          if (!last && !a.isDirectory()) {
            throw ApiException.invalid("archive entry is inside a file of the sandbox: " + e.path());
          }
          if (last && a.isDirectory() != e.dir()) {
            throw ApiException.invalid("archive entry would replace " + (a.isDirectory() ? "a directory" : "a file")
                + " of the sandbox: " + e.path());
          }
          if (!last) {
            try {
              cur = cur.newDirectoryStream(Path.of(parts[i]), NOFOLLOW);
            } catch (FileSystemException x) {
              throw SandboxPaths.changed();
            }
            opened.add(cur);
          }
        }
      } finally {
        for (SecureDirectoryStream<Path> d : opened) {
          d.close();
        }
      }
    }
  }

  private void extract(Chain chain, SecureDirectoryStream<Path> stage, Path spool, List<TarGz.Entry> entries,
      UserPrincipal owner, Created created) throws IOException {
    int base = chain.open.size();
    try (TarArchiveInputStream tar = TarGz.open(spool)) {
      int index = 0;
      TarArchiveEntry t;
      while ((t = tar.getNextEntry()) != null) {
        if (TarGz.relative(t.getName()).isEmpty()) {
          continue;
        }
        TarGz.Entry e = entries.get(index++);
        while (chain.open.size() > base) {
          chain.open.removeLast().close();
        }
        String[] parts = e.path().split("/");
        for (int i = 0; i < parts.length - 1; i++) {
          enterOrCreate(chain, parts[i], stage, owner, created);
        }
        String last = parts[parts.length - 1];
        Path name = Path.of(last);
        Set<PosixFilePermission> perms = PosixFilePermissions.fromString(symbolic(e.mode()));
        if (e.dir()) {
          perms.add(PosixFilePermission.OWNER_WRITE);
          perms.add(PosixFilePermission.OWNER_EXECUTE);
          SecureDirectoryStream<Path> d = enterOrCreate(chain, last, stage, owner, created);
          PosixFileAttributeView v = d.getFileAttributeView(PosixFileAttributeView.class);
          v.setPermissions(perms);
          if (!v.readAttributes().owner().equals(owner)) {
            v.setOwner(owner);
          }
          continue;
        }
        PosixFileAttributes there = stat(chain.dir(), name);
        if (there != null && there.isDirectory()) {
          throw ApiException.invalid("archive entry would replace a directory of the sandbox: " + e.path());
        }
        Path staged = stagingName(e.symlink() ? "link" : "file");
        Path abs = staging.resolve(staged);
        try {
          if (e.symlink()) {
            Files.createSymbolicLink(abs, Path.of(e.linkTarget()));
          } else {
            Files.copy(tar, abs); // leaves the archive open for the next entry
            Files.setPosixFilePermissions(abs, perms);
          }
          own(abs, owner);
          place(stage, staged, chain.dir(), name);
        } finally {
          Files.deleteIfExists(abs);
        }
      }
    }
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
}
