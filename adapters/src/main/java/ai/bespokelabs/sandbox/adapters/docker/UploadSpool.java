package ai.bespokelabs.sandbox.adapters.docker;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.file.AsyncFile;
import io.vertx.core.file.OpenOptions;
import io.vertx.core.streams.WriteStream;

/**
 * An upload written to a temporary file on this node (readable by its owner only) as its chunks arrive, with
 * the Vert.x file system (nothing blocks the caller), and streamed to the engine only at commit, so an aborted
 * or failed upload changes nothing in the sandbox. The file is deleted after commit, on abort, and when
 * commit fails.
 */
final class UploadSpool {
  private final Vertx vertx;
  private final String path;
  private final AsyncFile file;
  private long size;
  private boolean done;

  private UploadSpool(Vertx vertx, String path, AsyncFile file) {
    this.vertx = vertx;
    this.path = path;
    this.file = file;
  }

  static Future<UploadSpool> open(Vertx vertx, String prefix) {
    return vertx.fileSystem().createTempFile(prefix, ".part", "rw-------")
        .compose(path -> vertx.fileSystem().open(path, new OpenOptions().setWrite(true).setCreate(false))
            .map(file -> new UploadSpool(vertx, path, file))
            .recover(t -> vertx.fileSystem().delete(path).transform(ar -> Future.failedFuture(t))));
  }

  String path() {
    return path;
  }

  long size() {
    return size;
  }

  /** Appends a chunk; completes once it was written. */
  Future<Void> write(Buffer data) {
    if (done) {
      return Future.failedFuture(new IllegalStateException("upload already finished"));
    }
    size += data.length();
    return file.write(data);
  }

  /** Ends the writing (the spool is complete); the upload can then be sent. */
  Future<Void> finish() {
    if (done) {
      return Future.failedFuture(new IllegalStateException("upload already finished"));
    }
    done = true;
    return file.close();
  }

  /** Streams the spooled bytes into {@code out} (which is not ended), at the pace it takes them. */
  Future<Void> sendTo(WriteStream<Buffer> out) {
    return vertx.fileSystem().open(path, new OpenOptions().setRead(true).setWrite(false))
        .compose(in -> in.pipe().endOnSuccess(false).to(out).eventually(() -> in.close().otherwiseEmpty()));
  }

  /** Deletes the spool; harmless when repeated. */
  Future<Void> discard() {
    Future<Void> closed = done ? Future.succeededFuture() : file.close().otherwiseEmpty();
    done = true;
    return closed.compose(v -> vertx.fileSystem().exists(path))
        .compose(exists -> exists ? vertx.fileSystem().delete(path) : Future.succeededFuture())
        .otherwiseEmpty();
  }
}
