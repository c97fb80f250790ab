package ai.bespokelabs.sandbox.adapters.daytona;

import ai.bespokelabs.sandbox.core.model.FileEntry;
import ai.bespokelabs.sandbox.adapters.spi.FileWriter;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.file.AsyncFile;
import io.vertx.core.file.FileSystem;
import io.vertx.core.file.OpenOptions;
import java.io.IOException;

/**
 * An upload spooled on this node with Vert.x's asynchronous file system (a temporary file readable by its
 * owner only), because the toolbox takes a file only whole, as one multipart request. Nothing reaches the
 * sandbox before {@link #commit}, which hands the spool to {@link Send}; the spool is deleted after commit,
 * when commit fails, and on abort.
 */
final class DaytonaUpload implements FileWriter {
  /** What commit does with the spooled bytes. */
  @FunctionalInterface
  interface Send {
    Future<FileEntry> send(String spool, long size);
  }

  static final String PREFIX = "daytona-upload-";

  private final FileSystem fs;
  private final String spool;
  private final AsyncFile file;
  private final Send send;
  private long size;
  private boolean done;

  private DaytonaUpload(FileSystem fs, String spool, AsyncFile file, Send send) {
    this.fs = fs;
    this.spool = spool;
    this.file = file;
    this.send = send;
  }

  /** A new, empty spool. */
  static Future<FileWriter> open(FileSystem fs, Send send) {
    return fs.createTempFile(PREFIX, ".part", "rw-------").compose(spool -> fs.open(spool,
            new OpenOptions().setWrite(true).setRead(false).setCreate(false))
        .<FileWriter>map(file -> new DaytonaUpload(fs, spool, file, send))
        .recover(t -> fs.delete(spool).transform(ignored -> Future.failedFuture(t))));
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
    return file.close().compose(v -> send.send(spool, size)).eventually(this::deleteSpool);
  }

  @Override
  public Future<Void> abort() {
    if (done) {
      return Future.succeededFuture();
    }
    done = true;
    return file.close().eventually(this::deleteSpool).recover(t -> Future.succeededFuture());
  }

  /** Deletes the spool; a temporary file that could not be deleted changes no outcome. */
  private Future<Void> deleteSpool() {
    return fs.delete(spool).recover(t -> Future.succeededFuture());
  }
}
