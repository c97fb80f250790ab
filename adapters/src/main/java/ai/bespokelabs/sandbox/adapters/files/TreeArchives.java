package ai.bespokelabs.sandbox.adapters.files;

import ai.bespokelabs.sandbox.core.model.FileEntry;
import ai.bespokelabs.sandbox.adapters.spi.FileReader;
import ai.bespokelabs.sandbox.adapters.spi.FileSystem;
import ai.bespokelabs.sandbox.adapters.spi.FileWriter;
import ai.bespokelabs.sandbox.core.bus.Messages.FileOp;
import ai.bespokelabs.sandbox.core.error.ApiException;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.Iterator;
import java.util.function.Supplier;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.apache.commons.compress.compressors.gzip.GzipCompressorOutputStream;

/**
 * Directory archives (tar.gz) built on a backend's single-file operations, for backends without a native tree
 * transfer; asynchronous throughout, called on the adapter's context.
 *
 * <p>A download lists the tree and streams each file into the tar through gzip, one step per call as the
 * reader asks for output, so it holds a chunk or two whatever the tree's size. Directories (empty ones too)
 * and regular files are archived; symbolic links and special files are skipped, and so is a file gone
 * between its listing and its opening. A file whose size changed after its header was written is cut or
 * padded with zeros to that size.
 *
 * <p>An upload is spooled to a private temporary file on this node and checked whole ({@link TarGz#check})
 * before anything is written, so a broken archive extracts nothing; then each regular file is written through
 * {@link FileSystem#openWrite} in archive order (parents are created by the writes; empty directories and
 * links are not recreated). Reading the local spool runs on worker threads.
 */
public final class TreeArchives {
  /** Bytes of a file read per step of a download (compressed on the event loop, so kept small). */
  static final int READ_CHUNK = 64 * 1024;
  /** Bytes of an archived file written per call of an upload. */
  static final int WRITE_CHUNK = 256 * 1024;

  private TreeArchives() {}

  /** The directory at {@code op.path()} as a tar.gz; 422 when it is a file. */
  public static Future<FileReader> read(FileSystem fs, FileOp op) {
    return fs.openRead(sibling(op, "open_read", op.path(), false)).transform(ar -> {
      if (ar.succeeded()) {
        // only probed: a file is not a directory
        return ar.result().close().transform(closed -> Future.failedFuture(ApiException.invalid(
            "path is not a directory")));
      }
      if (ar.cause() instanceof ApiException e && e.status() == 422) {
        return Future.succeededFuture(new TreeReader(fs, op));
      }
      return Future.failedFuture(ar.cause());
    });
  }

  /** Receives a tar.gz to extract into the directory at {@code op.path()} once it arrived whole and was checked. */
  public static Future<FileWriter> write(FileSystem fs, FileOp op) {
    Context context = Vertx.currentContext();
    if (context == null) {
      return Future.failedFuture(new IllegalStateException("archives are written from a Vert.x context"));
    }
    Vertx vertx = context.owner();
    return SpooledWriter.open(vertx.fileSystem(), "archive-",
        (spool, size) -> new Extraction(vertx, fs, op).commit(spool));
  }

  private static FileOp sibling(FileOp op, String kind, String path, boolean executable) {
    return new FileOp(kind, op.sandboxId(), op.providerResourceId(), path, null, null, executable, false);
  }

  private static String child(String dir, String name) {
    return dir.endsWith("/") ? dir + name : dir + "/" + name;
  }

  /**
   * Runs {@code step} until its future answers false or fails. Steps that complete at once are run in this
   * loop rather than from their callbacks, so a long run of them never deepens the stack.
   */
  static Future<Void> repeat(Supplier<Future<Boolean>> step) {
    Promise<Void> done = Promise.promise();
    iterate(step, done);
    return done.future();
  }

  private static void iterate(Supplier<Future<Boolean>> step, Promise<Void> done) {
    while (true) {
      Future<Boolean> next;
      try {
        next = step.get();
      } catch (RuntimeException e) {
        done.fail(e);
        return;
      }
      if (!next.isComplete()) {
        next.onComplete(ar -> {
          if (ar.failed()) {
            done.fail(ar.cause());
          } else if (ar.result()) {
            iterate(step, done);
          } else {
            done.complete();
          }
        });
        return;
      }
      if (next.failed()) {
        done.fail(next.cause());
        return;
      }
      if (!next.result()) {
        done.complete();
        return;
      }
    }
  }

  /** A download: the tree walked depth first, each step adding to the compressed output. */
  private static final class TreeReader implements FileReader {
    private final FileSystem fs;
    private final FileOp op;
    private final ArrayDeque<Dir> dirs = new ArrayDeque<>();
    private final TarArchiveOutputStream tar;
    /** Compressed bytes not yet handed to the reader. */
    private Buffer out = Buffer.buffer();
    /**
     * The file being archived and how many bytes its header still owes; once it owes none, one more read
     * (draining) normally sees the file's end, so a download is read to its end rather than cut.
     */
    private FileReader file;
    private long owed;
    private boolean draining;
    private boolean finished;
    private boolean closed;
    private Throwable broken;

    /** A directory being walked; its entries are listed when it is first reached. */
    private static final class Dir {
      final String path;
      final String rel;
      Iterator<FileEntry> entries;

      Dir(String path, String rel) {
        this.path = path;
        this.rel = rel;
      }
    }

    TreeReader(FileSystem fs, FileOp op) {
      this.fs = fs;
      this.op = op;
      dirs.push(new Dir(op.path(), ""));
      OutputStream sink = new OutputStream() {
        @Override
        public void write(int b) {
          out.appendByte((byte) b);
        }

        @Override
        public void write(byte[] b, int off, int len) {
          out.appendBytes(b, off, len);
        }
      };
      try {
        tar = new TarArchiveOutputStream(new GzipCompressorOutputStream(sink));
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      tar.setLongFileMode(TarArchiveOutputStream.LONGFILE_POSIX);
      tar.setBigNumberMode(TarArchiveOutputStream.BIGNUMBER_POSIX);
    }

    @Override
    public long size() {
      return -1;
    }

    @Override
    public Future<Buffer> read(int max) {
      if (closed) {
        return Future.failedFuture(new IOException("download closed"));
      }
      if (broken != null) {
        return Future.failedFuture(broken);
      }
      return repeat(() -> finished || out.length() >= max ? Future.succeededFuture(false) : step().map(true))
          .transform(ar -> {
            if (ar.failed()) {
              broken = ar.cause();
              release();
              return Future.failedFuture(ar.cause());
            }
            return Future.succeededFuture(take(max));
          });
    }

    /** Up to {@code max} bytes of the output; null once it is all taken. */
    private Buffer take(int max) {
      int n = Math.min(max, out.length());
      if (n == 0) {
        return null;
      }
      Buffer chunk = out.getBuffer(0, n);
      out = n == out.length() ? Buffer.buffer() : out.getBuffer(n, out.length());
      return chunk;
    }

    /** One unit of work: a chunk of the current file, a listing, an entry, or the archive's end. */
    private Future<Void> step() {
      if (closed) {
        return Future.failedFuture(new IOException("download closed"));
      }
      if (file != null) {
        return file.read(READ_CHUNK).compose(chunk -> {
          if (closed) {
            return Future.failedFuture(new IOException("download closed"));
          }
          if (draining) {
            closeFile(); // its end, or bytes past what its header declared: left out
          } else {
            copy(chunk);
          }
          return Future.succeededFuture();
        });
      }
      Dir dir = dirs.peek();
      if (dir == null) {
        try {
          tar.finish();
          tar.close();
        } catch (IOException e) {
          throw new UncheckedIOException(e);
        }
        finished = true;
        return Future.succeededFuture();
      }
      if (dir.entries == null) {
        return fs.list(sibling(op, "list", dir.path, false)).map(list -> {
          dir.entries = list.iterator();
          return null;
        });
      }
      if (!dir.entries.hasNext()) {
        dirs.pop();
        return Future.succeededFuture();
      }
      FileEntry e = dir.entries.next();
      String name = dir.rel.isEmpty() ? e.name() : dir.rel + "/" + e.name();
      String path = child(dir.path, e.name());
      if (e.isDir()) {
        TarArchiveEntry d = new TarArchiveEntry(name + "/");
        d.setMode(040000 | (e.mode() & 0777));
        put(d);
        closeEntry();
        dirs.push(new Dir(path, name));
        return Future.succeededFuture();
      }
      if (!FileEntry.FILE.equals(e.type())) {
        return Future.succeededFuture(); // links and special files are not archived
      }
      return fs.openRead(sibling(op, "open_read", path, false)).transform(ar -> {
        if (ar.failed()) {
          // gone since it was listed: left out; anything else ends the download
          return ar.cause() instanceof ApiException a && a.status() == 404 ? Future.succeededFuture()
              : Future.failedFuture(ar.cause());
        }
        begin(ar.result(), name, e);
        return Future.succeededFuture();
      });
    }

    private void begin(FileReader in, String name, FileEntry e) {
      if (closed || in.size() < 0) {
        in.close(); // closed meanwhile, or a size the header needs is unknown: not a regular file
        return;
      }
      TarArchiveEntry f = new TarArchiveEntry(name);
      f.setSize(in.size());
      f.setMode(0100000 | (e.mode() & 0777));
      if (e.modified() != null) {
        f.setModTime(e.modified().toEpochMilli());
      }
      put(f);
      file = in;
      owed = in.size();
      if (owed == 0) {
        closeEntry();
        draining = true;
      }
    }

    /** Adds a chunk of the current file, cut to what its header declared; at its end pads up to it. */
    private void copy(Buffer chunk) {
      try {
        if (chunk == null) {
          byte[] zeros = new byte[(int) Math.min(owed, READ_CHUNK)];
          while (owed > 0) {
            int n = (int) Math.min(owed, zeros.length);
            tar.write(zeros, 0, n);
            owed -= n;
          }
          closeEntry();
          closeFile();
          return;
        }
        int n = (int) Math.min(owed, chunk.length());
        tar.write(chunk.getBytes(0, n));
        owed -= n;
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      if (owed == 0) {
        closeEntry();
        draining = true;
      }
    }

    private void closeFile() {
      FileReader done = file;
      file = null;
      draining = false;
      done.close();
    }

    private void put(TarArchiveEntry e) {
      try {
        tar.putArchiveEntry(e);
      } catch (IOException ex) {
        throw new UncheckedIOException(ex);
      }
    }

    private void closeEntry() {
      try {
        tar.closeArchiveEntry();
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }

    /** Closes the open file and the compressor (its native memory); the output is dropped. */
    private void release() {
      if (file != null) {
        file.close();
        file = null;
      }
      try {
        tar.close();
      } catch (IOException | RuntimeException ignored) {
        // an unfinished archive refuses to finish; the compressor is closed all the same
      }
      out = Buffer.buffer();
    }

    @Override
    public Future<Void> close() {
      if (!closed) {
        closed = true;
        release();
      }
      return Future.succeededFuture();
    }
  }

  /** An upload's commit: the spooled archive checked whole, then written file by file. */
  private static final class Extraction {
    private final Vertx vertx;
    private final FileSystem fs;
    private final FileOp op;

    Extraction(Vertx vertx, FileSystem fs, FileOp op) {
      this.vertx = vertx;
      this.fs = fs;
      this.op = op;
    }

    Future<FileEntry> commit(Path spool) {
      return vertx.executeBlocking(() -> {
            TarGz.check(spool);
            return TarGz.open(spool);
          }, false)
          .compose(tar -> extract(tar).eventually(() -> vertx.executeBlocking(() -> {
            tar.close();
            return null;
          }, false)))
          .compose(extracted -> fs.list(sibling(op, "list", op.path(), false)))
          .map(listed -> new FileEntry("", op.path(), true, 0, 0755,
              listed.isEmpty() ? null : listed.get(0).modified()));
    }

    /** Writes each regular file of the checked archive, in order. */
    private Future<Void> extract(TarArchiveInputStream tar) {
      return repeat(() -> vertx.executeBlocking(() -> nextFile(tar), false).compose(e -> e == null
          ? Future.succeededFuture(false)
          : writeFile(tar, e).map(true)));
    }

    /** The next regular file's entry, or null at the end. */
    private static TarArchiveEntry nextFile(TarArchiveInputStream tar) throws IOException {
      TarArchiveEntry e;
      while ((e = tar.getNextEntry()) != null) {
        if (!TarGz.relative(e.getName()).isEmpty() && e.isFile()) {
          return e;
        }
      }
      return null;
    }

    private Future<Void> writeFile(TarArchiveInputStream tar, TarArchiveEntry e) {
      String path = child(op.path(), TarGz.relative(e.getName()));
      return fs.openWrite(sibling(op, "open_write", path, (e.getMode() & 0111) != 0)).compose(w ->
          repeat(() -> vertx.executeBlocking(() -> {
            byte[] buf = new byte[WRITE_CHUNK];
            int n = tar.readNBytes(buf, 0, buf.length);
            return n == 0 ? null : Buffer.buffer(n == buf.length ? buf : Arrays.copyOf(buf, n));
          }, false).compose(chunk -> chunk == null ? Future.succeededFuture(false) : w.write(chunk).map(true)))
              .compose(written -> w.commit())
              .recover(t -> w.abort().transform(aborted -> Future.failedFuture(t)))
              .mapEmpty());
    }
  }
}
