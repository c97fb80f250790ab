package ai.bespokelabs.sandbox.adapters.spi;

import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;

/** A download, pulled in order one chunk at a time. */
public interface FileReader {

  /** The size in bytes, -1 when unknown. */
  long size();

  /** The next chunk of at most {@code max} bytes; {@code null} at the end. */
  Future<Buffer> read(int max);

  /** Releases the download; harmless when repeated. */
  Future<Void> close();
}
