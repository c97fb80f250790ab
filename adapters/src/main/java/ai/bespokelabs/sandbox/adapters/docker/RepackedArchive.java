package ai.bespokelabs.sandbox.adapters.docker;

import ai.bespokelabs.sandbox.adapters.spi.FileReader;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.buffer.Buffer;
import java.io.IOException;
import java.io.OutputStream;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.apache.commons.compress.compressors.gzip.GzipCompressorOutputStream;

/**
 * A directory download: the engine's tar of the directory re-packed, as the reader pulls it, into a tar.gz
 * with the directory's own name removed from each entry. Only as much of the engine's answer is read as the
 * next chunk needs. Files, directories and symbolic links are kept; anything else is left out. A transfer
 * that breaks off ends the download where it stands.
 */
final class RepackedArchive implements FileReader {
  private static final int CHUNK = 64 * 1024;

  private final DockerEngine engine;
  private final TarReader in;
  private final String prefix;
  private Buffer out = Buffer.buffer();
  private final TarArchiveOutputStream tar;
  private boolean inFile;
  private boolean finished;

  RepackedArchive(DockerEngine engine, TarReader in, String prefix) {
    this.engine = engine;
    this.in = in;
    this.prefix = prefix;
    OutputStream sink = new OutputStream() {
      @Override
      public void write(int b) {
        out.appendByte((byte) b);
      }

      @Override
      public void write(byte[] b, int off, int len) {
        out.appendBytes(b, off, len);
      }
    };
    try {
      this.tar = new TarArchiveOutputStream(new GzipCompressorOutputStream(sink));
    } catch (IOException e) {
      throw new IllegalStateException(e); // never: the sink is memory
    }
    tar.setLongFileMode(TarArchiveOutputStream.LONGFILE_POSIX);
    tar.setBigNumberMode(TarArchiveOutputStream.BIGNUMBER_POSIX);
  }

  @Override
  public long size() {
    return -1;
  }

  @Override
  public Future<Buffer> read(int max) {
    return engine.onContext(() -> {
      Promise<Void> filled = Promise.promise();
      fill(max, filled);
      return filled.future().map(v -> {
        if (out.length() == 0) {
          return null;
        }
        int n = Math.min(max, out.length());
        Buffer chunk = out.getBuffer(0, n);
        out = out.getBuffer(n, out.length());
        return chunk;
      });
    });
  }

  /** Advances until {@code max} bytes are ready or the archive is done, without deep recursion. */
  private void fill(int max, Promise<Void> filled) {
    while (out.length() < max && !finished) {
      Future<Void> step = step();
      if (!step.isComplete()) {
        step.onComplete(ar -> {
          if (ar.failed()) {
            brokeOff();
          }
          fill(max, filled);
        });
        return;
      }
      if (step.failed()) {
        brokeOff();
      }
    }
    filled.complete();
  }

  private void brokeOff() {
    finished = true;
    in.close();
  }

  /** One step: a chunk of the current file, or the next entry, or the archive's end. */
  private Future<Void> step() {
    if (inFile) {
      return in.read(CHUNK).compose(chunk -> {
        try {
          if (chunk == null) {
            tar.closeArchiveEntry();
            inFile = false;
          } else {
            tar.write(chunk.getBytes());
          }
          return Future.succeededFuture();
        } catch (IOException e) {
          return Future.failedFuture(e);
        }
      });
    }
    return in.nextEntry().compose(e -> {
      try {
        if (e == null) {
          tar.finish();
          tar.close();
          finished = true;
          in.close();
        } else {
          add(e);
        }
        return Future.succeededFuture();
      } catch (IOException ex) {
        return Future.failedFuture(ex);
      }
    });
  }

  private void add(TarArchiveEntry e) throws IOException {
    if (!e.getName().startsWith(prefix) || e.getName().length() == prefix.length()) {
      return;
    }
    TarArchiveEntry entry = e.isSymbolicLink()
        ? new TarArchiveEntry(e.getName().substring(prefix.length()), TarArchiveEntry.LF_SYMLINK)
        : new TarArchiveEntry(e.getName().substring(prefix.length()));
    entry.setMode(e.getMode());
    entry.setModTime(e.getModTime());
    if (e.isSymbolicLink()) {
      entry.setLinkName(e.getLinkName());
      tar.putArchiveEntry(entry);
      tar.closeArchiveEntry();
    } else if (e.isDirectory()) {
      tar.putArchiveEntry(entry);
      tar.closeArchiveEntry();
    } else if (e.isFile()) {
      entry.setSize(e.getSize());
      tar.putArchiveEntry(entry);
      inFile = true;
    }
  }

  @Override
  public Future<Void> close() {
    return engine.onContext(() -> {
      finished = true;
      in.close();
      return Future.succeededFuture();
    });
  }
}
