package ai.bespokelabs.sandbox.adapters.runpod;

import ai.bespokelabs.sandbox.adapters.files.ReadableFile;
import ai.bespokelabs.sandbox.adapters.files.SandboxPaths;
import ai.bespokelabs.sandbox.adapters.files.SpooledWriter;
import ai.bespokelabs.sandbox.adapters.files.TreeArchives;
import ai.bespokelabs.sandbox.adapters.spi.FileReader;
import ai.bespokelabs.sandbox.adapters.spi.FileSystem;
import ai.bespokelabs.sandbox.adapters.spi.FileWriter;
import ai.bespokelabs.sandbox.core.bus.Messages.FileOp;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import ai.bespokelabs.sandbox.core.model.FileEntry;
import io.vertx.core.Future;
import io.vertx.core.WorkerExecutor;
import io.vertx.core.buffer.Buffer;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.Callable;
import org.apache.sshd.client.session.ClientSession;
import org.apache.sshd.sftp.client.SftpClient;
import org.apache.sshd.sftp.client.SftpClientFactory;
import org.apache.sshd.sftp.common.SftpConstants;
import org.apache.sshd.sftp.common.SftpException;

/**
 * A pod's files over SFTP on the pod's SSH session. MINA's SFTP client is blocking, so every SFTP call runs on a
 * dedicated worker pool ({@code runpod-sftp}, {@link #POOL} threads: four times what the adapter admits of one
 * organization, see {@link FileSystem#PER_ORGANIZATION}), never on the event loop. Paths are
 * passed as given (relative ones resolve against the login's home, as commands' do): the whole pod is the
 * sandbox. An upload is spooled on this node and sent at commit to a temporary name beside its target, then
 * renamed into place with its mode. Directory archives are built on these single-file operations
 * ({@link TreeArchives}).
 */
final class RunPodFiles implements FileSystem {
  static final int POOL = 4 * FileSystem.PER_ORGANIZATION;

  private final RunPodClient client;
  private final RunPodSsh ssh;
  private final WorkerExecutor pool;

  RunPodFiles(RunPodClient client, RunPodSsh ssh) {
    this.client = client;
    this.ssh = ssh;
    this.pool = client.vertx().createSharedWorkerExecutor("runpod-sftp", POOL);
  }

  /** Work with an SFTP client on the pool; the client is closed unless the work keeps it ({@code keep}). */
  private <T> Future<T> sftp(FileOp op, String name, boolean keep, SftpWork<T> work) {
    if (op.providerResourceId() == null || op.providerResourceId().isBlank()) {
      return Future.failedFuture(RunPodErrors.notFound(name));
    }
    if (op.path() == null || op.path().isBlank()) {
      return Future.failedFuture(SandboxPaths.required());
    }
    if (op.path().indexOf('\0') >= 0) {
      return Future.failedFuture(ApiException.invalid("path is not a valid path"));
    }
    return ssh.session(op.providerResourceId(), name).compose(session -> blocking(() -> {
      SftpClient c = SftpClientFactory.instance().createSftpClient(session);
      boolean close = true;
      try {
        T out = work.run(c, op.path());
        close = !keep;
        return out;
      } finally {
        if (close) {
          c.close();
        }
      }
    }, name));
  }

  private <T> Future<T> blocking(Callable<T> work, String op) {
    Future<T> f = pool.executeBlocking(work, false);
    return client.onContext(() -> f).recover(t -> Future.failedFuture(mapped(t, op)));
  }

  /** An SFTP work step. */
  @FunctionalInterface
  interface SftpWork<T> {
    T run(SftpClient sftp, String path) throws IOException;
  }

  static Throwable mapped(Throwable t, String op) {
    if (t instanceof ApiException || t instanceof ProviderException) {
      return t;
    }
    if (t instanceof SftpException e) {
      if (e.getStatus() == SftpConstants.SSH_FX_NO_SUCH_FILE || e.getStatus() == SftpConstants.SSH_FX_NO_SUCH_PATH) {
        return SandboxPaths.notFound();
      }
      return new ProviderException(ProviderError.of(ErrorCode.COMMAND_FAILED, RunPodProvider.BACKEND, op, false,
          ProviderError.Outcome.FAILED).withContext("provider_status", e.getStatus()));
    }
    return RunPodErrors.transportError(op, t, false);
  }

  static FileEntry entry(String name, String path, SftpClient.Attributes a) {
    String type = a.isDirectory() ? FileEntry.DIRECTORY : a.isRegularFile() ? FileEntry.FILE
        : a.isSymbolicLink() ? FileEntry.SYMLINK : FileEntry.OTHER;
    Instant modified = a.getModifyTime() == null ? Instant.EPOCH : a.getModifyTime().toInstant();
    return new FileEntry(name, path, a.isDirectory(), a.getSize(), a.getPermissions() & 07777, modified, type);
  }

  static String trimmed(String path) {
    return path.length() > 1 && path.endsWith("/") ? path.substring(0, path.length() - 1) : path;
  }

  static String nameOf(String path) {
    String p = trimmed(path);
    String n = p.substring(p.lastIndexOf('/') + 1);
    return n.isEmpty() ? p : n;
  }

  /** A directory's entries, or the entry itself when the path is not a directory. */
  @Override
  public Future<List<FileEntry>> list(FileOp op) {
    return sftp(op, "list_files", false, (c, path) -> {
      String p = trimmed(path);
      SftpClient.Attributes a = c.lstat(p);
      List<FileEntry> out = new ArrayList<>();
      if (!a.isDirectory()) {
        out.add(entry(nameOf(p), p, a));
        return out;
      }
      for (SftpClient.DirEntry e : c.readDir(p)) {
        String n = e.getFilename();
        if (!".".equals(n) && !"..".equals(n)) {
          out.add(entry(n, ("/".equals(p) ? "" : p) + "/" + n, e.getAttributes()));
        }
      }
      out.sort(Comparator.comparing(FileEntry::name));
      return out;
    });
  }

  @Override
  public Future<FileReader> openRead(FileOp op) {
    return sftp(op, "download", true, (c, path) -> {
      SftpClient.Attributes a = c.lstat(path);
      if (a.isDirectory()) {
        throw SandboxPaths.isDirectory();
      }
      if (!a.isRegularFile()) {
        throw SandboxPaths.special();
      }
      InputStream in = c.read(path);
      return reader(ReadableFile.of(in, a.getSize()), c);
    });
  }

  private FileReader reader(ReadableFile file, SftpClient c) {
    return new FileReader() {
      @Override
      public long size() {
        return file.size();
      }

      @Override
      public Future<Buffer> read(int max) {
        return blocking(() -> {
          byte[] buf = new byte[Math.max(1, max)];
          int n = file.read(buf);
          return n < 0 ? null : Buffer.buffer(n == buf.length ? buf : java.util.Arrays.copyOf(buf, n));
        }, "download");
      }

      @Override
      public Future<Void> close() {
        return blocking(() -> {
          try (c) {
            file.close();
          }
          return null;
        }, "download");
      }
    };
  }

  @Override
  public Future<FileWriter> openWrite(FileOp op) {
    if (op.path() == null || op.path().isBlank()) {
      return Future.failedFuture(SandboxPaths.required());
    }
    return SpooledWriter.open(client.vertx().fileSystem(), "runpod-upload-", (spool, size) ->
        sftp(op, "upload", false, (c, path) -> {
          String target = trimmed(path);
          int slash = target.lastIndexOf('/');
          String dir = slash < 0 ? "" : target.substring(0, slash);
          mkdirs(c, dir);
          String tmp = (dir.isEmpty() ? "" : dir + "/") + ".bsk-upload-" + nameOf(target);
          try (InputStream in = Files.newInputStream(spool); OutputStream out = c.write(tmp)) {
            in.transferTo(out);
          }
          SftpClient.Attributes mode = new SftpClient.Attributes();
          mode.setPermissions(op.executable() ? 0755 : 0644);
          c.setStat(tmp, mode);
          try {
            SftpClient.Attributes existing = c.lstat(target);
            if (existing.isDirectory()) {
              c.remove(tmp);
              throw SandboxPaths.isDirectory();
            }
            c.remove(target);
          } catch (SftpException absent) {
            // nothing to replace
          }
          c.rename(tmp, target);
          return entry(nameOf(target), target, c.lstat(target));
        }));
  }

  private static void mkdirs(SftpClient c, String dir) throws IOException {
    if (dir.isEmpty()) {
      return;
    }
    StringBuilder at = new StringBuilder(dir.startsWith("/") ? "/" : "");
    for (String part : dir.split("/")) {
      if (part.isEmpty()) {
        continue;
      }
      at.append(part);
      String p = at.toString();
      try {
        if (!c.lstat(p).isDirectory()) {
          throw ApiException.invalid("a parent of path is not a directory");
        }
      } catch (SftpException missing) {
        c.mkdir(p);
      }
      at.append('/');
    }
  }

  @Override
  public Future<FileReader> openArchiveRead(FileOp op) {
    return TreeArchives.read(this, op);
  }

  @Override
  public Future<FileWriter> openArchiveWrite(FileOp op) {
    return TreeArchives.write(this, op);
  }

  @Override
  public Future<Void> delete(FileOp op) {
    return sftp(op, "delete_file", false, (c, path) -> {
      String p = trimmed(path);
      SftpClient.Attributes a = c.lstat(p);
      if (!a.isDirectory()) {
        c.remove(p);
        return null;
      }
      if (!op.recursive()) {
        for (SftpClient.DirEntry e : c.readDir(p)) {
          if (!".".equals(e.getFilename()) && !"..".equals(e.getFilename())) {
            throw SandboxPaths.notEmpty();
          }
        }
      }
      removeTree(c, p);
      return null;
    });
  }

  private static void removeTree(SftpClient c, String dir) throws IOException {
    List<SftpClient.DirEntry> entries = new ArrayList<>();
    c.readDir(dir).forEach(entries::add);
    for (SftpClient.DirEntry e : entries) {
      String n = e.getFilename();
      if (".".equals(n) || "..".equals(n)) {
        continue;
      }
      String child = dir + "/" + n;
      if (e.getAttributes().isDirectory()) {
        removeTree(c, child);
      } else {
        c.remove(child);
      }
    }
    c.rmdir(dir);
  }

  Future<Void> close() {
    return pool.close();
  }
}
