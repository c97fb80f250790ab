package ai.bespokelabs.sandbox.adapters;

import ai.bespokelabs.sandbox.adapters.spi.FileEntry;
import ai.bespokelabs.sandbox.adapters.files.ReadableFile;
import ai.bespokelabs.sandbox.adapters.files.WritableFile;
import ai.bespokelabs.sandbox.core.Ids;
import ai.bespokelabs.sandbox.core.bus.Messages.FileOp;
import ai.bespokelabs.sandbox.core.bus.Messages.FileReply;
import ai.bespokelabs.sandbox.core.error.ApiException;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The file operations of one adapter. Transfers are sessions: a download is pulled chunk by chunk (the
 * HTTP side asks for the next chunk only once the client took the previous one) and an upload is pushed
 * chunk by chunk (the HTTP side reads the next chunk only once this one is written), so neither side holds
 * more than a chunk whatever the file's size. A session nobody touched for {@link #IDLE_MS} is closed (an
 * upload is then discarded). Every method blocks; callers run them on the adapter's virtual threads.
 */
final class FileSessions {
  static final int CHUNK = 256 * 1024;
  static final long IDLE_MS = 60_000;

  private final SandboxProvider provider;
  private final Map<String, Session> sessions = new ConcurrentHashMap<>();

  private static final class Session {
    final ReadableFile reader;
    final WritableFile writer;
    volatile long touched = System.currentTimeMillis();

    Session(ReadableFile reader, WritableFile writer) {
      this.reader = reader;
      this.writer = writer;
    }
  }

  FileSessions(SandboxProvider provider) {
    this.provider = provider;
  }

  FileReply handle(FileOp op) {
    try {
      return switch (op.op()) {
        case "list" -> {
          JsonArray entries = new JsonArray();
          provider.listFiles(op).forEach(e -> entries.add(e.toJson()));
          yield new FileReply(new JsonObject().put("entries", entries), null);
        }
        case "delete" -> {
          provider.deleteFile(op);
          yield new FileReply(new JsonObject(), null);
        }
        case "open_read", "open_archive_read" -> {
          ReadableFile reader = op.op().equals("open_read") ? provider.openRead(op) : provider.openArchiveRead(op);
          String id = Ids.newId("fss");
          sessions.put(id, new Session(reader, null));
          yield new FileReply(new JsonObject().put("session", id).put("size", reader.size()), null);
        }
        case "read" -> {
          Session s = session(op);
          byte[] buf = new byte[CHUNK];
          int n = s.reader.read(buf);
          if (n < 0) {
            close(op.session());
            yield new FileReply(new JsonObject().put("eof", true), new byte[0]);
          }
          yield new FileReply(new JsonObject().put("eof", false), n == buf.length ? buf : Arrays.copyOf(buf, n));
        }
        case "open_write", "open_archive_write" -> {
          WritableFile writer = op.op().equals("open_write") ? provider.openWrite(op) : provider.openArchiveWrite(op);
          String id = Ids.newId("fss");
          sessions.put(id, new Session(null, writer));
          yield new FileReply(new JsonObject().put("session", id), null);
        }
        case "write" -> {
          Session s = session(op);
          try {
            s.writer.write(op.data() == null ? new byte[0] : op.data());
          } catch (IOException | RuntimeException e) {
            close(op.session());
            throw e;
          }
          yield new FileReply(new JsonObject(), null);
        }
        case "commit" -> {
          Session s = sessions.remove(op.session());
          if (s == null || s.writer == null) {
            throw ApiException.conflict("upload session expired");
          }
          FileEntry entry;
          try {
            entry = s.writer.commit();
          } catch (IOException | RuntimeException e) {
            s.writer.abort();
            throw e;
          }
          yield new FileReply(entry.toJson(), null);
        }
        case "close", "abort" -> {
          close(op.session());
          yield new FileReply(new JsonObject(), null);
        }
        default -> throw ApiException.invalid("unsupported file operation");
      };
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private Session session(FileOp op) {
    Session s = op.session() == null ? null : sessions.get(op.session());
    boolean reading = op.op().equals("read");
    if (s == null || (reading ? s.reader == null : s.writer == null)) {
      throw ApiException.conflict("file transfer session expired");
    }
    s.touched = System.currentTimeMillis();
    return s;
  }

  /** Ends a session: closes a download, discards an unfinished upload. */
  void close(String id) {
    Session s = id == null ? null : sessions.remove(id);
    if (s == null) {
      return;
    }
    if (s.reader != null) {
      try {
        s.reader.close();
      } catch (IOException ignored) {
        // nothing more to release
      }
    }
    if (s.writer != null) {
      s.writer.abort();
    }
  }

  /** Closes the sessions idle for longer than {@link #IDLE_MS}; returns how many. */
  int expire() {
    long cutoff = System.currentTimeMillis() - IDLE_MS;
    int n = 0;
    for (Map.Entry<String, Session> e : sessions.entrySet()) {
      if (e.getValue().touched < cutoff) {
        close(e.getKey());
        n++;
      }
    }
    return n;
  }

  void closeAll() {
    sessions.keySet().forEach(this::close);
  }
}
