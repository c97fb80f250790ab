package ai.bespokelabs.sandbox.adapters.e2b;

import ai.bespokelabs.sandbox.adapters.e2b.E2bProvider.Envd;
import ai.bespokelabs.sandbox.adapters.spi.FileEntry;
import ai.bespokelabs.sandbox.adapters.files.SpooledUpload;
import ai.bespokelabs.sandbox.adapters.files.ReadableFile;
import ai.bespokelabs.sandbox.adapters.files.SandboxPaths;
import ai.bespokelabs.sandbox.adapters.files.WritableFile;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecResult;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.FileOp;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError;
import ai.bespokelabs.sandbox.core.error.ProviderError.Outcome;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.file.OpenOptions;
import io.vertx.core.http.HttpClientRequest;
import io.vertx.core.http.HttpClientResponse;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The files of an E2B sandbox, through its envd: {@code filesystem.Filesystem} (Connect, JSON codec) for
 * listing, stat, move and remove, and the {@code /files} REST endpoint for content. Paths are passed as
 * given: envd resolves a relative path against the sandbox user's working directory (its home unless the
 * template sets one) and the whole VM is the sandbox, so no path escapes it.
 *
 * <p>Download: the response stays paused and is read on demand, at most {@link #WINDOW} chunks ahead of
 * the reader, so a file of any size passes through a small, fixed amount of memory. Upload: envd writes in
 * place, so chunks are spooled to a private temporary file on this node first; {@link WritableFile#commit}
 * streams the spool to a hidden name beside the target (with its Content-Length), makes it executable when
 * asked (envd has no chmod: a {@code chmod} program runs in the sandbox) and renames it over the target.
 * Until that rename nothing is visible at the path, and a failure removes the hidden file again.
 */
final class E2bFiles {
  /** Response chunks (of at most 8 KiB) a download reads ahead of its reader. */
  static final int WINDOW = 16;
  /** The slowest upload rate a commit waits for, on top of the request timeout. */
  static final long MIN_UPLOAD_BYTES_PER_SEC = 1L << 20;
  static final String TEMP_PREFIX = ".bespoke-upload-";
  private static final String FS = "/filesystem.Filesystem/";
  private static final Logger LOG = LoggerFactory.getLogger(E2bFiles.class);

  private final E2bProvider provider;

  E2bFiles(E2bProvider provider) {
    this.provider = provider;
  }

  private static String path(FileOp op) {
    String p = op.path();
    if (p == null || p.isBlank()) {
      throw SandboxPaths.required();
    }
    if (p.indexOf('\0') >= 0) {
      throw ApiException.invalid("path is not a valid path");
    }
    return p;
  }

  // ---- list, stat, delete --------------------------------------------------------------------------------

  /** A directory's entries ({@code ListDir}, depth 1), or the entry itself when the path is not a directory. */
  List<FileEntry> list(FileOp op) {
    String path = path(op);
    Envd envd = provider.envd(op.providerResourceId(), "list_files");
    JsonObject res;
    try {
      res = listDir(envd, path, "list_files");
    } catch (ProviderException e) {
      if ("invalid_argument".equals(code(e))) {
        // envd's answer for a path that is not a directory
        return List.of(stat(envd, path, "list_files"));
      }
      throw pathError(e);
    }
    List<FileEntry> out = new ArrayList<>();
    for (Object o : res.getJsonArray("entries", new JsonArray())) {
      if (o instanceof JsonObject e) {
        out.add(entry(e));
      }
    }
    out.sort(Comparator.comparing(FileEntry::name));
    return out;
  }

  private JsonObject listDir(Envd envd, String path, String op) {
    return provider.unary(envd, FS + "ListDir", new JsonObject().put("path", path).put("depth", 1), op);
  }

  private FileEntry stat(Envd envd, String path, String op) {
    try {
      JsonObject entry = provider.unary(envd, FS + "Stat", new JsonObject().put("path", path), op).getJsonObject("entry");
      if (entry == null) {
        throw E2bErrors.of(ErrorCode.COMMAND_FAILED, op, false, Outcome.FAILED);
      }
      return entry(entry);
    } catch (ProviderException e) {
      throw pathError(e);
    } catch (ClassCastException e) {
      throw E2bErrors.of(ErrorCode.COMMAND_FAILED, op, false, Outcome.FAILED);
    }
  }

  /**
   * Deletes a file or directory. envd's {@code Remove} always removes recursively and succeeds on a missing
   * path, so the path is looked at first: missing is 404, a non-empty directory without {@code recursive}
   * is 409 (a directory filled between the look and the removal is removed all the same).
   */
  void delete(FileOp op) {
    String path = path(op);
    if (path.replaceAll("/+", "/").equals("/")) {
      throw ApiException.invalid("path must name something inside the sandbox");
    }
    Envd envd = provider.envd(op.providerResourceId(), "delete_file");
    FileEntry entry = stat(envd, path, "delete_file");
    if (entry.isDir() && !op.recursive()) {
      JsonArray entries;
      try {
        entries = listDir(envd, path, "delete_file").getJsonArray("entries", new JsonArray());
      } catch (ProviderException e) {
        throw pathError(e);
      }
      if (!entries.isEmpty()) {
        throw SandboxPaths.notEmpty();
      }
    }
    try {
      provider.unary(envd, FS + "Remove", new JsonObject().put("path", path), "delete_file");
    } catch (ProviderException e) {
      throw pathError(e);
    }
  }

  private void removeQuietly(Envd envd, String path) {
    try {
      provider.unary(envd, FS + "Remove", new JsonObject().put("path", path), "upload");
    } catch (RuntimeException e) {
      LOG.warn("e2b sandbox {}: an unfinished upload could not be removed ({})", envd.sandboxId(),
          e instanceof ProviderException p ? p.error().code().wire() : e.getClass().getName());
    }
  }

  /** The Connect code of a failure envd answered, or null. */
  private static String code(ProviderException e) {
    return e.error().context().get("provider_code") instanceof String c ? c : null;
  }

  /** envd's answers about a path, as the files API's: missing is 404, unusable is 422; others stay. */
  private static RuntimeException pathError(ProviderException e) {
    String code = code(e);
    if ("not_found".equals(code)) {
      return SandboxPaths.notFound();
    }
    if ("invalid_argument".equals(code)) {
      return ApiException.invalid("path is not a valid path");
    }
    return e;
  }

  /** An {@code EntryInfo} (proto3 JSON: int64 as a string, defaults omitted) as the files API shows it. */
  static FileEntry entry(JsonObject e) {
    Object type = e.getValue("type");
    boolean dir = "FILE_TYPE_DIRECTORY".equals(type) || Integer.valueOf(2).equals(type);
    String path = e.getString("path", "");
    String name = e.getString("name", path.substring(path.lastIndexOf('/') + 1));
    Instant modified = null;
    if (e.getValue("modifiedTime") instanceof String t) {
      try {
        modified = Instant.parse(t);
      } catch (DateTimeParseException ignored) {
        // shown as unknown
      }
    }
    return new FileEntry(name, path, dir, dir ? 0 : number(e.getValue("size")), (int) (number(e.getValue("mode")) & 0777),
        modified);
  }

  private static long number(Object v) {
    if (v instanceof Number n) {
      return n.longValue();
    }
    if (v instanceof String s) {
      try {
        return Long.parseLong(s);
      } catch (NumberFormatException ignored) {
        return 0;
      }
    }
    return 0;
  }

  static String query(String value) {
    return URLEncoder.encode(value, StandardCharsets.UTF_8).replace("+", "%20");
  }

  /** A refusal by envd's REST side, mapped once off the event loop. */
  private static final class Refused extends RuntimeException {
    final int status;
    final String retryAfter;

    Refused(int status, String retryAfter) {
      super(null, null, false, false);
      this.status = status;
      this.retryAfter = retryAfter;
    }
  }

  /** Waits for {@code f} off the event loop; on timeout or interrupt {@code cut} runs (it ends the exchange). */
  private <T> T await(CompletableFuture<T> f, long waitMs, String op, Runnable cut) {
    try {
      return f.get(waitMs, TimeUnit.MILLISECONDS);
    } catch (ExecutionException e) {
      if (e.getCause() instanceof RuntimeException r && (r instanceof Refused || r instanceof ApiException
          || r instanceof ProviderException)) {
        throw r;
      }
      throw E2bErrors.transport(e.getCause(), op);
    } catch (TimeoutException e) {
      cut.run();
      throw E2bErrors.transport(e, op);
    } catch (InterruptedException e) {
      cut.run();
      Thread.currentThread().interrupt();
      throw E2bErrors.transport(new TimeoutException("interrupted"), op);
    }
  }

  // ---- download ----------------------------------------------------------------------------------------

  /**
   * Opens {@code GET /files} and returns once its headers arrived; 404 when missing, 422 for a directory.
   * The size is the response's Content-Length (envd serves plain files with one).
   */
  ReadableFile openRead(FileOp op) {
    String path = path(op);
    Envd envd = provider.envd(op.providerResourceId(), "download");
    Download d = new Download();
    long size;
    try {
      size = d.open(envd, path);
    } catch (Refused r) {
      throw switch (r.status) {
        case 404 -> SandboxPaths.notFound();
        // a directory, or a path envd cannot resolve
        case 400 -> stat(envd, path, "download").isDir() ? SandboxPaths.isDirectory()
            : ApiException.invalid("path is not a valid path");
        default -> E2bErrors.status(r.status, "download", r.retryAfter, true);
      };
    }
    if (size < 0) {
      try {
        FileEntry e = stat(envd, path, "download");
        size = e.size();
      } catch (RuntimeException e) {
        d.close();
        throw e;
      }
    }
    d.size = size;
    return d;
  }

  /** One download: the paused response read on demand by the thread calling {@link #read}. */
  final class Download implements ReadableFile {
    private static final Object END = new Object();
    private final Context context = provider.vertx().getOrCreateContext();
    /** Chunks, a failure, or {@link #END}; never more than {@link #WINDOW} chunks, as that many are asked for. */
    private final LinkedBlockingQueue<Object> inbox = new LinkedBlockingQueue<>();
    private final AtomicBoolean closed = new AtomicBoolean();
    private volatile HttpClientRequest request;
    private HttpClientResponse response;
    private long size;
    private long received;
    private Buffer current;
    private int pos;
    private int owed;
    private boolean eof;

    /** Sends the request; returns the declared size, or -1 when the answer declared none. */
    long open(Envd envd, String path) {
      RequestOptions options = provider.envdOptions(envd, HttpMethod.GET, "/files?path=" + query(path));
      CompletableFuture<HttpClientResponse> head = new CompletableFuture<>();
      context.runOnContext(v -> provider.http().request(options)
          .compose(req -> {
            request = req;
            return req.send();
          })
          .onComplete(ar -> {
            if (ar.failed()) {
              head.completeExceptionally(ar.cause());
              return;
            }
            HttpClientResponse resp = ar.result();
            resp.pause();
            if (resp.statusCode() != 200) {
              // the (small) error body is drained so the connection can be reused; its text is not kept
              Refused refused = new Refused(resp.statusCode(), resp.getHeader("Retry-After"));
              resp.resume();
              resp.body().onComplete(b -> head.completeExceptionally(refused));
              return;
            }
            resp.handler(inbox::add);
            resp.exceptionHandler(inbox::add);
            resp.endHandler(e -> inbox.add(END));
            if (closed.get()) {
              resp.request().reset();
            } else {
              resp.fetch(WINDOW);
            }
            head.complete(resp);
          }));
      response = await(head, waitMs(), "download", this::close);
      String length = response.getHeader("Content-Length");
      String encoding = response.getHeader("Content-Encoding");
      if (length != null && (encoding == null || encoding.equalsIgnoreCase("identity"))) {
        try {
          return Long.parseLong(length.trim());
        } catch (NumberFormatException ignored) {
          // sized by a stat instead
        }
      }
      return -1;
    }

    private long waitMs() {
      return provider.settings().requestTimeout().toMillis();
    }

    @Override
    public long size() {
      return size;
    }

    /** Fills {@code buf} as far as the file goes; -1 at its end. A stalled or broken answer fails. */
    @Override
    public int read(byte[] buf) throws IOException {
      if (closed.get()) {
        throw new IOException("download closed");
      }
      int n = 0;
      while (n < buf.length) {
        if (current != null && pos < current.length()) {
          int k = Math.min(buf.length - n, current.length() - pos);
          current.getBytes(pos, pos + k, buf, n);
          pos += k;
          n += k;
          continue;
        }
        current = null;
        if (eof) {
          break;
        }
        Object item = next();
        if (item == END) {
          eof = true;
          if (received != size) {
            throw E2bErrors.of(ErrorCode.COMMAND_FAILED, "download", true, Outcome.FAILED);
          }
        } else if (item instanceof Throwable t) {
          close();
          throw E2bErrors.transport(t, "download");
        } else {
          current = (Buffer) item;
          pos = 0;
          received += current.length();
          if (received > size) {
            close();
            throw E2bErrors.of(ErrorCode.COMMAND_FAILED, "download", true, Outcome.FAILED);
          }
          owed++;
        }
      }
      return n == 0 && eof ? -1 : n;
    }

    /** The next item; asks for more chunks in batches, and before waiting for one. */
    private Object next() throws IOException {
      if (owed > 0 && (owed >= WINDOW / 2 || inbox.isEmpty())) {
        int n = owed;
        owed = 0;
        HttpClientResponse resp = response;
        context.runOnContext(v -> resp.fetch(n));
      }
      try {
        Object item = inbox.poll(waitMs(), TimeUnit.MILLISECONDS);
        if (item == null) {
          close();
          throw E2bErrors.transport(new TimeoutException("download stalled"), "download");
        }
        return item;
      } catch (InterruptedException e) {
        close();
        Thread.currentThread().interrupt();
        throw new java.io.InterruptedIOException("download interrupted");
      }
    }

    /** Chunks read ahead and not yet taken (for tests). */
    int queued() {
      return inbox.size();
    }

    /** Ends the download; a response not read to its end is reset, so its connection is not reused. */
    @Override
    public void close() {
      if (!closed.compareAndSet(false, true)) {
        return;
      }
      boolean complete = eof;
      context.runOnContext(v -> {
        HttpClientRequest req = request;
        if (req != null && !complete) {
          req.reset();
        }
        inbox.clear();
        inbox.add(new IOException("download closed"));
      });
      current = null;
    }
  }

  // ---- upload ------------------------------------------------------------------------------------------

  /** Starts an upload: 422 when the path is a directory; chunks go to a spool file on this node. */
  WritableFile openWrite(FileOp op) {
    String path = path(op);
    if (path.endsWith("/")) {
      throw SandboxPaths.isDirectory();
    }
    Envd envd = provider.envd(op.providerResourceId(), "upload");
    try {
      if (stat(envd, path, "upload").isDir()) {
        throw SandboxPaths.isDirectory();
      }
    } catch (ApiException e) {
      if (e.status() != 404) {
        throw e;
      }
    }
    Upload upload = new Upload(envd, op, path);
    return SpooledUpload.open("e2b-upload-", 0, (ch, spool, size) -> {
      ch.close();
      return upload.place(spool, size);
    });
  }

  /** Places a spooled upload: beside the target, made executable if asked, then renamed into place. */
  final class Upload {
    private final Envd envd;
    private final FileOp op;
    private final String path;

    Upload(Envd envd, FileOp op, String path) {
      this.envd = envd;
      this.op = op;
      this.path = path;
    }

    FileEntry place(Path spool, long size) {
      String hidden = path.substring(0, path.lastIndexOf('/') + 1) + TEMP_PREFIX + UUID.randomUUID();
      String placed = hidden;
      try {
        placed = send(spool, hidden, size);
        if (op.executable()) {
          chmod(placed);
        }
        JsonObject moved = provider.unary(envd, FS + "Move",
            new JsonObject().put("source", placed).put("destination", path), "upload").getJsonObject("entry");
        if (moved == null) {
          throw E2bErrors.of(ErrorCode.COMMAND_FAILED, "upload", false, Outcome.UNKNOWN);
        }
        return entry(moved);
      } catch (RuntimeException e) {
        removeQuietly(envd, placed);
        throw e instanceof ProviderException p && "invalid_argument".equals(code(p))
            ? ApiException.invalid("path is not a valid path") : e;
      }
    }

    /**
     * {@code POST /files} of the spool as {@code application/octet-stream} with its length, read from disk
     * as the connection takes it; returns the path envd wrote (absolute).
     */
    private String send(Path spool, String target, long size) {
      RequestOptions options = provider.envdOptions(envd, HttpMethod.POST, "/files?path=" + query(target))
          .putHeader("Content-Type", "application/octet-stream")
          .putHeader("Content-Length", String.valueOf(size));
      Context context = provider.vertx().getOrCreateContext();
      CompletableFuture<Buffer> answered = new CompletableFuture<>();
      HttpClientRequest[] sent = new HttpClientRequest[1];
      context.runOnContext(v -> provider.vertx().fileSystem()
          .open(spool.toString(), new OpenOptions().setRead(true).setWrite(false).setCreate(false))
          .compose(file -> provider.http().request(options)
              .compose(req -> {
                sent[0] = req;
                return req.send(file);
              })
              .compose(resp -> resp.body().compose(body -> resp.statusCode() == 200 ? Future.succeededFuture(body)
                  : Future.failedFuture(new Refused(resp.statusCode(), resp.getHeader("Retry-After")))))
              .eventually(() -> file.close().otherwiseEmpty()))
          .onComplete(ar -> {
            if (ar.succeeded()) {
              answered.complete(ar.result());
            } else {
              answered.completeExceptionally(ar.cause());
            }
          }));
      long waitMs = provider.settings().requestTimeout().toMillis() + size * 1000 / MIN_UPLOAD_BYTES_PER_SEC;
      Buffer body;
      try {
        body = await(answered, waitMs, "upload", () -> context.runOnContext(v -> {
          if (sent[0] != null) {
            sent[0].reset();
          }
        }));
      } catch (Refused r) {
        throw r.status == 400 ? ApiException.invalid("path is not a valid path")
            : E2bErrors.status(r.status, "upload", r.retryAfter, true);
      }
      try {
        JsonArray written = new JsonArray(body);
        if (!written.isEmpty() && written.getValue(0) instanceof JsonObject w && w.getString("path") != null) {
          return w.getString("path");
        }
      } catch (DecodeException | ClassCastException ignored) {
        // the name we asked for is used
      }
      return target;
    }

    /** envd has no chmod: {@code chmod 0755} runs in the sandbox, from the file's directory. */
    private void chmod(String placed) {
      int slash = placed.lastIndexOf('/');
      String dir = slash < 0 ? null : slash == 0 ? "/" : placed.substring(0, slash);
      ExecResult r = provider.exec(new ExecSandbox(op.sandboxId(), "exe_upload_" + UUID.randomUUID(),
          op.providerResourceId(), null, null, "chmod", List.of("0755", "--", placed.substring(slash + 1)), Map.of(),
          dir, 30, 4096));
      if (r.exitCode() != 0) {
        throw new ProviderException(ProviderError.of(ErrorCode.COMMAND_FAILED, E2bProvider.BACKEND, "upload", false,
            Outcome.FAILED).withContext("exit_code", r.exitCode()));
      }
    }

  }
}
