package ai.bespokelabs.sandbox.adapters.files;

import ai.bespokelabs.sandbox.core.model.FileEntry;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;

/**
 * An upload written to a temporary file on this node (readable by its owner only) as its chunks arrive, and
 * handed to the backend only at commit, so an aborted or failed upload changes nothing in the sandbox. The
 * file is deleted after commit, on abort, and when commit fails.
 */
public final class SpooledUpload implements WritableFile {
  /** What commit does with the spooled bytes; the channel is still open (positioned after them). */
  @FunctionalInterface
  public interface OnCommit {
    FileEntry commit(FileChannel channel, Path spool, long size) throws IOException;
  }

  private final Path spool;
  private final FileChannel channel;
  private final OnCommit onCommit;
  private long size;
  private boolean done;

  private SpooledUpload(Path spool, FileChannel channel, OnCommit onCommit) {
    this.spool = spool;
    this.channel = channel;
    this.onCommit = onCommit;
  }

  /** A new, empty spool named {@code prefix…}. */
  public static SpooledUpload open(String prefix, OnCommit onCommit) {
    Path spool;
    try {
      spool = Files.createTempFile(prefix, ".part",
          PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    try {
      FileChannel ch = FileChannel.open(spool, StandardOpenOption.WRITE);
      return new SpooledUpload(spool, ch, onCommit);
    } catch (IOException e) {
      deleteQuietly(spool);
      throw new UncheckedIOException(e);
    }
  }

  /** The spool file (for tests). */
  public Path spool() {
    return spool;
  }

  @Override
  public void write(byte[] data) throws IOException {
    ByteBuffer buf = ByteBuffer.wrap(data);
    while (buf.hasRemaining()) {
      channel.write(buf);
    }
    size += data.length;
  }

  @Override
  public FileEntry commit() throws IOException {
    if (done) {
      throw new IOException("upload already finished");
    }
    try {
      return onCommit.commit(channel, spool, size);
    } finally {
      abort();
    }
  }

  @Override
  public void abort() {
    if (done) {
      return;
    }
    done = true;
    try {
      channel.close();
    } catch (IOException ignored) {
      // the spool is deleted below all the same
    }
    deleteQuietly(spool);
  }

  private static void deleteQuietly(Path p) {
    try {
      Files.deleteIfExists(p);
    } catch (IOException ignored) {
      // a temporary file left behind is removed with the temporary directory
    }
  }
}
