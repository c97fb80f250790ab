package ai.bespokelabs.sandbox.adapters.files;

import java.io.Closeable;
import java.io.IOException;

/** A file being downloaded from a sandbox, read in order; blocking. */
public interface ReadableFile extends Closeable {
  /** The file's size in bytes. */
  long size();

  /** Reads up to {@code buf.length} bytes; returns -1 at the end. */
  int read(byte[] buf) throws IOException;
}
