package ai.bespokelabs.sandbox.adapters.files;

import ai.bespokelabs.sandbox.adapters.spi.FileWriter;
import ai.bespokelabs.sandbox.core.model.FileEntry;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.file.AsyncFile;
import io.vertx.core.file.FileSystem;
import io.vertx.core.file.OpenOptions;
import java.io.IOException;
import java.nio.file.Path;

/**
 * An upload written, as its chunks arrive, to a temporary file on this node (readable by its owner only) with
 * Vert.x's asynchronous file system, each write completing once the bytes are in the file. Nothing reaches the
 * backend before {@link #commit}, which closes the file and hands it to the backend's {@link Commit} step, so an
 * aborted or failed upload changes nothing in the sandbox. The spool is deleted after commit (whether it
 * succeeded or not) and on abort.
 */
public final class SpooledWriter implements FileWriter {
  /** What commit does with the spooled bytes (the file is closed and complete; it is deleted afterwards). */
  @FunctionalInterface
  public interface Commit {
    Future<FileEntry> commit(Path spool, long size);
  }

  private final FileSystem fs;
  private final Path spool;
  private final AsyncFile file;
  private final Commit commit;
  private long size;
  private boolean done;

  private SpooledWriter(FileSystem fs, Path spool, AsyncFile file, Commit commit) {
    this.fs = fs;
    this.spool = spool;
    this.file = file;
    this.commit = commit;
  }

  /** A new, empty spool named {@code prefix…}; a spool that could not be opened is deleted again. */
  public static Future<FileWriter> open(FileSystem fs, String prefix, Commit commit) {
    return fs.createTempFile(prefix, ".part", "rw-------").compose(spool ->
        fs.open(spool, new OpenOptions().setRead(false).setWrite(true).setCreate(false).setTruncateExisting(true))
            .<FileWriter>map(file -> new SpooledWriter(fs, Path.of(spool), file, commit))
            .recover(t -> fs.delete(spool).transform(deleted -> Future.failedFuture(t))));
  }

  /** The spool file (for tests). */
  public Path spool() {
    return spool;
  }

  /** The bytes written so far. */
  public long size() {
    return size;
  }

  @Override
  public Future<Void> write(Buffer data) {
    if (done) {
      return Future.failedFuture(new IOException("upload already finished"));
    }
    size += data.length();
    return file.write(data);
  }

  @Override
  public Future<FileEntry> commit() {
    if (done) {
      return Future.failedFuture(new IOException("upload already finished"));
    }
    done = true;
    return file.close().compose(closed -> commit.commit(spool, size)).eventually(this::deleteSpool);
  }

  @Override
  public Future<Void> abort() {
    if (done) {
      return Future.succeededFuture();
    }
    done = true;
    return file.close().transform(closed -> deleteSpool());
  }

  /** Deletes the spool; a temporary file that could not be deleted changes no outcome. */
  private Future<Void> deleteSpool() {
    return fs.delete(spool.toString()).otherwiseEmpty();
  }
}
