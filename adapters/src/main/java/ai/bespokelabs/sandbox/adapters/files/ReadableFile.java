package ai.bespokelabs.sandbox.adapters.files;

import java.io.Closeable;
import java.io.IOException;

/** A file being downloaded from a sandbox, read in order; blocking. */
public interface ReadableFile extends Closeable {
  /** The file's size in bytes. */
  long size();

  /** Reads up to {@code buf.length} bytes; returns -1 at the end. */
  int read(byte[] buf) throws IOException;

  /**
   * A download read from {@code in} ({@code size} bytes, -1 when unknown), each read filling the buffer as
   * far as the stream goes; closing it closes {@code in}.
   */
  static ReadableFile of(java.io.InputStream in, long size) {
    return new ReadableFile() {
      @Override
      public long size() {
        return size;
      }

      @Override
      public int read(byte[] buf) throws IOException {
        int n = in.readNBytes(buf, 0, buf.length);
        return n == 0 && buf.length > 0 ? -1 : n;
      }

      @Override
      public void close() throws IOException {
        in.close();
      }
    };
  }
}
