package ai.bespokelabs.sandbox.adapters.spi;

import ai.bespokelabs.sandbox.core.model.FileEntry;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;

/**
 * An upload, pushed in order one chunk at a time. Nothing is visible at its path until {@link #commit};
 * {@link #abort} (or a failure) leaves nothing behind.
 */
public interface FileWriter {

  /** Completes once the chunk was taken; the next is written only then. */
  Future<Void> write(Buffer data);

  /** Puts the file in place (replacing an existing one) and describes it. */
  Future<FileEntry> commit();

  /** Discards what was written; harmless after commit or when repeated. */
  Future<Void> abort();
}
