package ai.bespokelabs.sandbox.adapters;

import ai.bespokelabs.sandbox.adapters.spi.FileReader;
import ai.bespokelabs.sandbox.adapters.spi.FileSystem;
import ai.bespokelabs.sandbox.adapters.spi.FileWriter;
import ai.bespokelabs.sandbox.core.Ids;
import ai.bespokelabs.sandbox.core.bus.Messages.FileOp;
import ai.bespokelabs.sandbox.core.bus.Messages.FileReply;
import ai.bespokelabs.sandbox.core.error.ApiException;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The file operations of one adapter. Transfers are sessions: a download is pulled chunk by chunk (the
 * HTTP side asks for the next chunk only once the client took the previous one) and an upload is pushed
 * chunk by chunk (the HTTP side reads the next chunk only once this one is written), so neither side holds
 * more than a chunk whatever the file's size. A session nobody touched for {@link #IDLE_MS} is closed (an
 * upload is then discarded).
 */
final class FileSessions {
  static final int CHUNK = 256 * 1024;
  static final long IDLE_MS = 60_000;

  private final FileSystem files;
  private final Map<String, Session> sessions = new ConcurrentHashMap<>();

  private static final class Session {
    final FileReader reader;
    final FileWriter writer;
    volatile long touched = System.currentTimeMillis();

    Session(FileReader reader, FileWriter writer) {
      this.reader = reader;
      this.writer = writer;
    }
  }

  FileSessions(FileSystem files) {
    this.files = files;
  }

  Future<FileReply> handle(FileOp op) {
    return switch (op.op()) {
      case "list" -> files.list(op).map(FileReply::listing);
      case "delete" -> files.delete(op).map(FileReply.done());
      case "open_read", "open_archive_read" ->
          (op.op().equals("open_read") ? files.openRead(op) : files.openArchiveRead(op)).map(reader -> {
            String id = Ids.newId("fss");
            sessions.put(id, new Session(reader, null));
            return FileReply.opened(id, reader.size());
          });
      case "read" -> {
        Session s = session(op);
        yield s.reader.read(CHUNK).map(chunk -> {
          if (chunk == null) {
            close(op.session());
            return FileReply.end();
          }
          return FileReply.chunk(chunk.getBytes());
        });
      }
      case "open_write", "open_archive_write" ->
          (op.op().equals("open_write") ? files.openWrite(op) : files.openArchiveWrite(op)).map(writer -> {
            String id = Ids.newId("fss");
            sessions.put(id, new Session(null, writer));
            return FileReply.opened(id, -1);
          });
      case "write" -> {
        Session s = session(op);
        yield s.writer.write(Buffer.buffer(op.data() == null ? new byte[0] : op.data()))
            .onFailure(t -> close(op.session())).map(FileReply.done());
      }
      case "commit" -> {
        Session s = sessions.remove(op.session());
        if (s == null || s.writer == null) {
          throw ApiException.conflict("upload session expired");
        }
        yield s.writer.commit().onFailure(t -> s.writer.abort()).map(FileReply::written);
      }
      case "close", "abort" -> {
        close(op.session());
        yield Future.succeededFuture(FileReply.done());
      }
      default -> throw ApiException.invalid("unsupported file operation");
    };
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
      s.reader.close();
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
