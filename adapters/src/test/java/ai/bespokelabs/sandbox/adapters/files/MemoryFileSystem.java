package ai.bespokelabs.sandbox.adapters.files;

import ai.bespokelabs.sandbox.core.model.FileEntry;
import ai.bespokelabs.sandbox.adapters.spi.FileReader;
import ai.bespokelabs.sandbox.adapters.spi.FileSystem;
import ai.bespokelabs.sandbox.adapters.spi.FileWriter;
import ai.bespokelabs.sandbox.core.bus.Messages.FileOp;
import ai.bespokelabs.sandbox.core.error.ApiException;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import java.io.ByteArrayOutputStream;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A file system in memory, with absolute paths, for tests of code built on {@link FileSystem}. With
 * {@code async} every answer completes later on the calling context, as a remote backend's would; otherwise
 * at once. A file may report a size other than its content's ({@link #reportSize}).
 */
final class MemoryFileSystem implements FileSystem {
  static final Instant MODIFIED = Instant.parse("2025-01-02T03:04:05Z");

  final Map<String, byte[]> files = new TreeMap<>();
  final Set<String> dirs = new TreeSet<>(Set.of("/"));
  final Set<String> links = new TreeSet<>();
  final Set<String> executables = new TreeSet<>();
  final Map<String, Long> reportedSizes = new ConcurrentHashMap<>();
  final AtomicInteger openReaders = new AtomicInteger();
  /** Readers closed before they answered their end. */
  final AtomicInteger cutReaders = new AtomicInteger();
  private final boolean async;

  MemoryFileSystem(boolean async) {
    this.async = async;
  }

  void mkdirs(String path) {
    for (String p = norm(path); !p.equals("/"); p = parent(p)) {
      dirs.add(p);
    }
  }

  void put(String path, byte[] content) {
    mkdirs(parent(norm(path)));
    files.put(norm(path), content);
  }

  void reportSize(String path, long size) {
    reportedSizes.put(norm(path), size);
  }

  static String norm(String path) {
    String p = path.replaceAll("/+", "/");
    return p.length() > 1 && p.endsWith("/") ? p.substring(0, p.length() - 1) : p;
  }

  static String parent(String path) {
    int i = path.lastIndexOf('/');
    return i <= 0 ? "/" : path.substring(0, i);
  }

  private <T> Future<T> answer(java.util.concurrent.Callable<T> work) {
    T value;
    try {
      value = work.call();
    } catch (Exception e) {
      return later(Future.failedFuture(e));
    }
    return later(Future.succeededFuture(value));
  }

  private <T> Future<T> later(Future<T> result) {
    Context context = Vertx.currentContext();
    if (!async || context == null) {
      return result;
    }
    Promise<T> p = Promise.promise();
    context.runOnContext(v -> result.onComplete(p));
    return p.future();
  }

  private FileEntry entry(String path) {
    String name = path.substring(path.lastIndexOf('/') + 1);
    if (dirs.contains(path)) {
      return new FileEntry(name, path, true, 0, 0755, MODIFIED);
    }
    if (links.contains(path)) {
      return new FileEntry(name, path, false, 0, 0777, MODIFIED, FileEntry.SYMLINK);
    }
    return new FileEntry(name, path, false, files.get(path).length, executables.contains(path) ? 0755 : 0644,
        MODIFIED);
  }

  @Override
  public Future<List<FileEntry>> list(FileOp op) {
    return answer(() -> {
      String path = norm(op.path());
      if (files.containsKey(path) || links.contains(path)) {
        return List.of(entry(path));
      }
      if (!dirs.contains(path)) {
        throw ApiException.notFound("path not found");
      }
      List<FileEntry> out = new ArrayList<>();
      Set<String> all = new TreeSet<>(dirs);
      all.addAll(files.keySet());
      all.addAll(links);
      for (String p : all) {
        if (!p.equals(path) && parent(p).equals(path)) {
          out.add(entry(p));
        }
      }
      return out;
    });
  }

  @Override
  public Future<FileReader> openRead(FileOp op) {
    return answer(() -> {
      String path = norm(op.path());
      if (dirs.contains(path)) {
        throw ApiException.invalid("path is a directory");
      }
      byte[] content = files.get(path);
      if (content == null) {
        throw ApiException.notFound("path not found");
      }
      openReaders.incrementAndGet();
      long size = reportedSizes.getOrDefault(path, (long) content.length);
      return new FileReader() {
        int pos;
        boolean closed;
        boolean ended;

        @Override
        public long size() {
          return size;
        }

        @Override
        public Future<Buffer> read(int max) {
          return answer(() -> {
            if (closed) {
              throw new IllegalStateException("read after close");
            }
            if (pos == content.length) {
              ended = true;
              return null;
            }
            int n = Math.min(max, content.length - pos);
            Buffer b = Buffer.buffer().appendBytes(content, pos, n);
            pos += n;
            return b;
          });
        }

        @Override
        public Future<Void> close() {
          if (!closed) {
            closed = true;
            openReaders.decrementAndGet();
            if (!ended) {
              cutReaders.incrementAndGet();
            }
          }
          return later(Future.succeededFuture());
        }
      };
    });
  }

  @Override
  public Future<FileWriter> openWrite(FileOp op) {
    return answer(() -> {
      String path = norm(op.path());
      if (dirs.contains(path)) {
        throw ApiException.invalid("path is a directory");
      }
      ByteArrayOutputStream data = new ByteArrayOutputStream();
      return new FileWriter() {
        @Override
        public Future<Void> write(Buffer chunk) {
          return answer(() -> {
            data.writeBytes(chunk.getBytes());
            return null;
          });
        }

        @Override
        public Future<FileEntry> commit() {
          return answer(() -> {
            put(path, data.toByteArray());
            if (op.executable()) {
              executables.add(path);
            }
            return entry(path);
          });
        }

        @Override
        public Future<Void> abort() {
          return later(Future.succeededFuture());
        }
      };
    });
  }

  @Override
  public Future<FileReader> openArchiveRead(FileOp op) {
    return TreeArchives.read(this, op);
  }

  @Override
  public Future<FileWriter> openArchiveWrite(FileOp op) {
    return TreeArchives.write(this, op);
  }

  @Override
  public Future<Void> delete(FileOp op) {
    return answer(() -> {
      String path = norm(op.path());
      if (files.remove(path) == null && !dirs.remove(path)) {
        throw ApiException.notFound("path not found");
      }
      return null;
    });
  }
}
