package ai.bespokelabs.sandbox.adapters.spi;

import ai.bespokelabs.sandbox.core.model.FileEntry;
import ai.bespokelabs.sandbox.core.bus.Messages.FileOp;
import io.vertx.core.Future;
import java.util.List;

/**
 * {@link Capability#FILES}: a sandbox's file system. Paths ({@code op.path()}) are relative to the sandbox's
 * working directory or absolute inside the sandbox; one that escapes is 422, a missing one 404.
 */
public interface FileSystem {
  /**
   * File operations the adapter lets one organization have running at a time; the rest of its operations wait
   * in its own queue. A backend running file work on a bounded pool gives it at least four times as many
   * threads, so one tenant's stuck transfers leave three quarters of it to everyone else.
   */
  int PER_ORGANIZATION = Math.max(4, Runtime.getRuntime().availableProcessors());

  /** The entries of a directory. */
  Future<List<FileEntry>> list(FileOp op);

  /** Opens a file for download; 422 for a directory. */
  Future<FileReader> openRead(FileOp op);

  /** Starts an upload to {@code op.path()} (parents are created; {@code op.executable()} sets the x bits). */
  Future<FileWriter> openWrite(FileOp op);

  /** The directory at {@code op.path()} as a gzip-compressed tar of its tree (size unknown: -1). */
  Future<FileReader> openArchiveRead(FileOp op);

  /**
   * Receives a gzip-compressed tar to extract into the directory at {@code op.path()} at commit, once it
   * arrived whole and was checked: a broken archive (422) extracts nothing.
   */
  Future<FileWriter> openArchiveWrite(FileOp op);

  /** Deletes a file, or a directory when empty or {@code op.recursive()}; 404 when missing. */
  Future<Void> delete(FileOp op);
}
