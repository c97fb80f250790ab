package ai.bespokelabs.sandbox.adapters.docker;

import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClientResponse;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;
import org.apache.commons.compress.archivers.tar.TarConstants;
import org.apache.commons.compress.archivers.tar.TarUtils;

/**
 * A tar stream read as it arrives from a paused engine response, one buffer at a time and only on demand, so
 * at most a buffer or two wait in memory whatever the archive's size. Each entry's header blocks (with any
 * PAX or GNU long-name blocks before them) are collected and parsed by commons-compress; the entry's data is
 * then handed on in chunks. Used on the response's context only.
 */
final class TarReader {
  private static final int BLOCK = 512;
  /** At most this many bytes of extended headers (long names, PAX records) before one entry. */
  private static final int MAX_META = 1 << 20;

  private final HttpClientResponse response;
  private Buffer pending = Buffer.buffer();
  private int pos;
  private boolean ended;
  private boolean closed;
  private Throwable error;
  private Promise<Void> waiting;
  private byte[] globals = new byte[0];
  /** Data bytes of the current entry not yet read, and the padding after them. */
  private long remaining;
  private long padding;

  TarReader(HttpClientResponse response) {
    this.response = response;
    response.handler(b -> {
      pending = pos == pending.length() ? b.copy() : pending.getBuffer(pos, pending.length()).appendBuffer(b);
      pos = 0;
      wake();
    });
    response.exceptionHandler(t -> {
      error = t;
      wake();
    });
    response.endHandler(v -> {
      ended = true;
      // the whole answer arrived: its connection is closed, never reused
      DockerEngine.release(response, true);
      wake();
    });
  }

  private void wake() {
    Promise<Void> w = waiting;
    waiting = null;
    if (w != null) {
      w.complete();
    }
  }

  private int available() {
    return pending.length() - pos;
  }

  /** Completes with true once {@code n} bytes are at hand, false when the stream ended first. */
  private Future<Boolean> ensure(int n) {
    if (available() >= n) {
      return Future.succeededFuture(true);
    }
    if (error != null) {
      return Future.failedFuture(new IOException("the archive broke off", error));
    }
    if (ended || closed) {
      return Future.succeededFuture(false);
    }
    Promise<Void> next = Promise.promise();
    waiting = next;
    response.fetch(1);
    return next.future().compose(v -> ensure(n));
  }

  private byte[] take(int n) {
    byte[] out = pending.getBytes(pos, pos + n);
    pos += n;
    return out;
  }

  private Future<Void> skip(long n) {
    if (n <= 0) {
      return Future.succeededFuture();
    }
    return ensure(1).compose(any -> {
      if (!any) {
        return Future.failedFuture(new EOFException("truncated archive"));
      }
      int k = (int) Math.min(n, available());
      pos += k;
      return skip(n - k);
    });
  }

  /** The next entry, its data unread; null at the end of the archive. */
  Future<TarArchiveEntry> nextEntry() {
    long skipped = remaining + padding;
    remaining = 0;
    padding = 0;
    return skip(skipped).compose(v -> header(new ByteArrayOutputStream()));
  }

  private Future<TarArchiveEntry> header(ByteArrayOutputStream group) {
    return ensure(BLOCK).compose(full -> {
      if (!full) {
        return Future.succeededFuture(null);
      }
      byte[] block = take(BLOCK);
      if (isZero(block)) {
        return Future.succeededFuture(null);
      }
      byte type = block[TarConstants.NAMELEN + TarConstants.MODELEN + TarConstants.UIDLEN + TarConstants.GIDLEN
          + TarConstants.SIZELEN + TarConstants.MODTIMELEN + TarConstants.CHKSUMLEN];
      if (type == TarConstants.LF_PAX_EXTENDED_HEADER_LC || type == TarConstants.LF_PAX_EXTENDED_HEADER_UC
          || type == TarConstants.LF_PAX_GLOBAL_EXTENDED_HEADER || type == TarConstants.LF_GNUTYPE_LONGNAME
          || type == TarConstants.LF_GNUTYPE_LONGLINK) {
        long size;
        try {
          size = TarUtils.parseOctalOrBinary(block, TarConstants.NAMELEN + TarConstants.MODELEN
              + TarConstants.UIDLEN + TarConstants.GIDLEN, TarConstants.SIZELEN);
        } catch (IllegalArgumentException e) {
          return Future.failedFuture(new IOException("bad tar header", e));
        }
        long padded = size + pad(size);
        if (size < 0 || padded + group.size() > MAX_META) {
          return Future.failedFuture(new IOException("tar extended header too large"));
        }
        return ensure((int) padded).compose(got -> {
          if (!got) {
            return Future.failedFuture(new EOFException("truncated archive"));
          }
          byte[] data = take((int) padded);
          if (type == TarConstants.LF_PAX_GLOBAL_EXTENDED_HEADER) {
            ByteArrayOutputStream g = new ByteArrayOutputStream();
            g.writeBytes(block);
            g.writeBytes(data);
            globals = g.toByteArray();
          } else {
            group.writeBytes(block);
            group.writeBytes(data);
          }
          return header(group);
        });
      }
      group.writeBytes(block);
      try {
        ByteArrayOutputStream all = new ByteArrayOutputStream();
        all.writeBytes(globals);
        all.writeBytes(group.toByteArray());
        TarArchiveEntry entry = new TarArchiveInputStream(new ByteArrayInputStream(all.toByteArray()))
            .getNextEntry();
        if (entry == null) {
          return Future.failedFuture(new IOException("bad tar header"));
        }
        remaining = Math.max(0, entry.getSize());
        padding = pad(remaining);
        return Future.succeededFuture(entry);
      } catch (IOException | IllegalArgumentException e) {
        return Future.failedFuture(new IOException("bad tar header", e));
      }
    });
  }

  /** The next chunk (at most {@code max} bytes) of the current entry's data; null at its end. */
  Future<Buffer> read(int max) {
    if (remaining == 0) {
      return Future.succeededFuture(null);
    }
    return ensure(1).compose(any -> {
      if (!any) {
        return Future.failedFuture(new EOFException("truncated archive"));
      }
      int n = (int) Math.min(Math.min(max, available()), remaining);
      Buffer chunk = pending.getBuffer(pos, pos + n);
      pos += n;
      remaining -= n;
      return Future.succeededFuture(chunk);
    });
  }

  /** Stops the transfer: the rest is not wanted (its connection is closed). Harmless when repeated. */
  void close() {
    if (closed) {
      return;
    }
    closed = true;
    if (!ended) {
      DockerEngine.release(response, false);
    }
    wake();
  }

  private static long pad(long size) {
    return (BLOCK - size % BLOCK) % BLOCK;
  }

  private static boolean isZero(byte[] block) {
    for (byte b : block) {
      if (b != 0) {
        return false;
      }
    }
    return true;
  }
}
