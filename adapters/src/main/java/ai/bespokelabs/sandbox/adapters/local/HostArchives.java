package ai.bespokelabs.sandbox.adapters.local;

import static ai.bespokelabs.sandbox.adapters.local.Handles.NOFOLLOW;
import static ai.bespokelabs.sandbox.adapters.local.Handles.enter;
import static ai.bespokelabs.sandbox.adapters.local.Handles.entry;
import static ai.bespokelabs.sandbox.adapters.local.Handles.failIfChanged;
import static ai.bespokelabs.sandbox.adapters.local.Handles.mode;
import static ai.bespokelabs.sandbox.adapters.local.Handles.self;
import static ai.bespokelabs.sandbox.adapters.local.Handles.stat;
import static ai.bespokelabs.sandbox.adapters.local.Staging.own;
import static ai.bespokelabs.sandbox.adapters.local.Staging.place;
import static ai.bespokelabs.sandbox.adapters.local.Staging.owner;
import static ai.bespokelabs.sandbox.adapters.local.HostReads.regularFile;
import static ai.bespokelabs.sandbox.adapters.local.HostReads.OPENER;
import static ai.bespokelabs.sandbox.adapters.local.SandboxTree.MAX_DEPTH;

import ai.bespokelabs.sandbox.adapters.files.ReadableFile;
import ai.bespokelabs.sandbox.adapters.files.SandboxPaths;
import ai.bespokelabs.sandbox.adapters.files.TarGz;
import ai.bespokelabs.sandbox.adapters.files.WritableFile;
import ai.bespokelabs.sandbox.adapters.local.Handles.Chain;
import ai.bespokelabs.sandbox.adapters.local.SandboxTree.Walk;
import ai.bespokelabs.sandbox.adapters.local.Staging.Created;
import ai.bespokelabs.sandbox.core.error.ApiException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SecureDirectoryStream;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipal;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Set;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;

/**
 * Directory archives (tar.gz): a download walks the tree through handles, at most {@link #ARCHIVES_PER_SANDBOX}
 * at a time per sandbox; an upload is checked whole ({@link TarGz#check}) before anything is extracted.
 */
final class HostArchives {
  /** How many archive downloads of one sandbox may run at a time. */
  static final int ARCHIVES_PER_SANDBOX = 8;
  private static final java.util.concurrent.ConcurrentHashMap<Path, Integer> LIVE_ARCHIVES =
      new java.util.concurrent.ConcurrentHashMap<>();

  private final SandboxTree tree;
  private final Path root;
  private final Staging staging;

  HostArchives(SandboxTree tree, Staging staging) {
    this.tree = tree;
    this.root = tree.root();
    this.staging = staging;
  }

  /** The directory at {@code path} as a tar.gz of its tree (links kept as links, special files skipped). */
  ReadableFile archiveRead(String path) {
    List<String> parts = tree.components(path);
    Walk w = tree.walk(parts, true);
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
    List<String> parts = tree.components(path);
    try {
      try (Walk w = tree.walk(parts, false)) {
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
      Chain chain = tree.openRoot();
      try (SecureDirectoryStream<Path> stage = staging.open()) {
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
          staging.enterOrCreate(chain, c, stage, owner, created);
        }
        SecureDirectoryStream<Path> target = chain.dir();
        extract(chain, stage, spool, entries, owner, created);
        return entry(parts.isEmpty() ? "" : parts.get(parts.size() - 1), tree.shown(parts), self(target));
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
          staging.enterOrCreate(chain, parts[i], stage, owner, created);
        }
        String last = parts[parts.length - 1];
        Path name = Path.of(last);
        Set<PosixFilePermission> perms = PosixFilePermissions.fromString(symbolic(e.mode()));
        if (e.dir()) {
          perms.add(PosixFilePermission.OWNER_WRITE);
          perms.add(PosixFilePermission.OWNER_EXECUTE);
          SecureDirectoryStream<Path> d = staging.enterOrCreate(chain, last, stage, owner, created);
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
        Path staged = staging.name(e.symlink() ? "link" : "file");
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
