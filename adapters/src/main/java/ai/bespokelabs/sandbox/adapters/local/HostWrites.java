package ai.bespokelabs.sandbox.adapters.local;

import static ai.bespokelabs.sandbox.adapters.local.Handles.entry;
import static ai.bespokelabs.sandbox.adapters.local.Handles.failIfChanged;
import static ai.bespokelabs.sandbox.adapters.local.Handles.stat;
import static ai.bespokelabs.sandbox.adapters.local.Staging.own;
import static ai.bespokelabs.sandbox.adapters.local.Staging.place;
import static ai.bespokelabs.sandbox.adapters.local.Staging.owner;

import ai.bespokelabs.sandbox.adapters.files.SandboxPaths;
import ai.bespokelabs.sandbox.adapters.files.WritableFile;
import ai.bespokelabs.sandbox.adapters.local.Handles.Chain;
import ai.bespokelabs.sandbox.adapters.local.SandboxTree.Walk;
import ai.bespokelabs.sandbox.adapters.local.Staging.Created;
import ai.bespokelabs.sandbox.core.model.FileEntry;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SecureDirectoryStream;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipal;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * File uploads: written to a staging file, then given the sandbox owner and its mode and renamed into place;
 * missing parent directories are only created at commit, so a refused, aborted or failed upload leaves nothing.
 */
final class HostWrites {
  private final SandboxTree tree;
  private final Staging staging;

  HostWrites(SandboxTree tree, Staging staging) {
    this.tree = tree;
    this.staging = staging;
  }

  /** Checks, without creating anything, that an upload to {@code parts} can land. */
  private void checkWritable(List<String> parts) throws IOException {
    try (Walk w = tree.walk(parts, false)) {
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
    List<String> parts = tree.components(path);
    if (parts.isEmpty()) {
      throw SandboxPaths.isDirectory();
    }
    try {
      checkWritable(parts);
      SecureDirectoryStream<Path> stage = staging.open();
      Path staged = staging.name("file");
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
          Chain chain = tree.openRoot();
          try {
            UserPrincipal owner = owner(chain);
            for (int i = 0; i < parts.size() - 1; i++) {
              staging.enterOrCreate(chain, parts.get(i), stage, owner, created);
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
            return entry(name.toString(), tree.shown(parts), Objects.requireNonNull(a, "placed"));
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
}
