package ai.bespokelabs.sandbox.adapters.host;

import ai.bespokelabs.sandbox.adapters.files.ReadableFile;
import ai.bespokelabs.sandbox.adapters.files.TarGz;
import ai.bespokelabs.sandbox.adapters.files.WritableFile;
import ai.bespokelabs.sandbox.adapters.spi.FileEntry;
import ai.bespokelabs.sandbox.core.bus.Messages.FileOp;
import ai.bespokelabs.sandbox.core.error.ApiException;
import java.io.IOException;
import java.util.Arrays;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;

/**
 * Directory archives built on a backend's single-file operations, for backends without a native tree
 * transfer: a download lists the tree and streams each file into the tar.gz; an upload, once checked
 * whole, writes each file (parents are created by the writes). Files and directories only: symbolic
 * links are skipped and empty directories are not recreated.
 */
public final class TreeTransfer {
  private static final int CHUNK = 256 * 1024;

  private TreeTransfer() {}

  public static ReadableFile read(BlockingProvider provider, FileOp op) {
    ReadableFile asFile;
    try {
      asFile = provider.openRead(new FileOp("open_read", op.sandboxId(), op.providerResourceId(), op.path(), null, null,
          false, false));
    } catch (ApiException e) {
      if (e.status() != 422) {
        throw e;
      }
      asFile = null; // a directory
    }
    if (asFile != null) {
      try {
        asFile.close();
      } catch (IOException ignored) {
        // only probed
      }
      throw ApiException.invalid("path is not a directory");
    }
    return TarGz.stream("tree", tar -> walk(provider, op, op.path(), "", tar));
  }

  private static void walk(BlockingProvider provider, FileOp op, String dir, String rel, TarArchiveOutputStream tar)
      throws IOException {
    for (FileEntry e : provider.listFiles(new FileOp("list", op.sandboxId(), op.providerResourceId(), dir, null, null,
        false, false))) {
      String name = rel.isEmpty() ? e.name() : rel + "/" + e.name();
      String path = dir.endsWith("/") ? dir + e.name() : dir + "/" + e.name();
      if (e.isDir()) {
        TarArchiveEntry d = new TarArchiveEntry(name + "/");
        d.setMode(040000 | (e.mode() & 0777));
        tar.putArchiveEntry(d);
        tar.closeArchiveEntry();
        walk(provider, op, path, name, tar);
        continue;
      }
      try (ReadableFile in = provider.openRead(new FileOp("open_read", op.sandboxId(), op.providerResourceId(), path,
          null, null, false, false))) {
        if (in.size() < 0) {
          continue; // a size the tar header needs is unknown: not a regular file
        }
        TarArchiveEntry f = new TarArchiveEntry(name);
        f.setSize(in.size());
        f.setMode(0100000 | (e.mode() & 0777));
        if (e.modified() != null) {
          f.setModTime(e.modified().toEpochMilli());
        }
        tar.putArchiveEntry(f);
        byte[] buf = new byte[CHUNK];
        for (int n; (n = in.read(buf)) > 0; ) {
          tar.write(buf, 0, n);
        }
        tar.closeArchiveEntry();
      }
    }
  }

  public static WritableFile write(BlockingProvider provider, FileOp op) {
    return TarGz.spool((spool, entries) -> {
      try (TarArchiveInputStream tar = TarGz.open(spool)) {
        TarArchiveEntry e;
        while ((e = tar.getNextEntry()) != null) {
          String rel = TarGz.relative(e.getName());
          if (rel.isEmpty() || !e.isFile()) {
            continue;
          }
          String path = op.path().endsWith("/") ? op.path() + rel : op.path() + "/" + rel;
          WritableFile w = provider.openWrite(new FileOp("open_write", op.sandboxId(), op.providerResourceId(), path,
              null, null, (e.getMode() & 0111) != 0, false));
          try {
            byte[] buf = new byte[CHUNK];
            for (int n; (n = tar.read(buf)) > 0; ) {
              w.write(n == buf.length ? buf : Arrays.copyOf(buf, n));
            }
            w.commit();
          } catch (IOException | RuntimeException ex) {
            w.abort();
            throw ex;
          }
        }
      }
      var listed = provider.listFiles(new FileOp("list", op.sandboxId(), op.providerResourceId(), op.path(), null, null,
          false, false));
      return new FileEntry("", op.path(), true, 0, 0755, listed.isEmpty() ? null : listed.get(0).modified());
    });
  }
}
