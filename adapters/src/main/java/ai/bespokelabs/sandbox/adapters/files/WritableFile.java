package ai.bespokelabs.sandbox.adapters.files;

import ai.bespokelabs.sandbox.core.model.FileEntry;
import java.io.IOException;

/**
 * A file being uploaded into a sandbox. Nothing is visible at its path until {@link #commit}; {@link #abort}
 * (or a failure) leaves nothing behind. Blocking.
 */
public interface WritableFile {
  void write(byte[] data) throws IOException;

  /** Puts the file in place (replacing an existing one) and describes it. */
  FileEntry commit() throws IOException;

  /** Discards what was written; harmless after commit or when repeated. */
  void abort();
}
