package ai.bespokelabs.sandbox.adapters.e2b;

import ai.bespokelabs.sandbox.adapters.e2b.E2bClient.Envd;
import ai.bespokelabs.sandbox.adapters.files.SandboxPaths;
import ai.bespokelabs.sandbox.adapters.files.TreeArchives;
import ai.bespokelabs.sandbox.adapters.http.WindowedDownload;
import ai.bespokelabs.sandbox.core.model.FileEntry;
import ai.bespokelabs.sandbox.adapters.spi.FileReader;
import ai.bespokelabs.sandbox.adapters.spi.FileSystem;
import ai.bespokelabs.sandbox.adapters.spi.FileWriter;
import ai.bespokelabs.sandbox.core.bus.Messages.FileOp;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError.Outcome;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import io.vertx.core.Future;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The files of an E2B sandbox, through its envd: {@code filesystem.Filesystem} (Connect, JSON codec) for
 * listing, stat, move and remove, and the {@code /files} REST endpoint for content ({@link WindowedDownload},
 * {@link E2bUpload}). Paths are passed as given: envd resolves a relative path against the sandbox user's
 * working directory (its home unless the template sets one) and the whole VM is the sandbox, so no path
 * escapes it. Directory archives are built on these single-file operations ({@link TreeArchives}).
 */
final class E2bFiles implements FileSystem {
  static final String FS = "/filesystem.Filesystem/";
  private static final Logger LOG = LoggerFactory.getLogger(E2bFiles.class);

  private final E2bClient client;
  private final E2bExecutions executions;

  E2bFiles(E2bClient client, E2bExecutions executions) {
    this.client = client;
    this.executions = executions;
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

  /** The sandbox's envd and the operation's checked path, handed to {@code work}. */
  private <T> Future<T> at(FileOp op, String name, Function<Envd, Future<T>> work) {
    try {
      path(op);
    } catch (ApiException e) {
      return Future.failedFuture(e);
    }
    return client.envd(op.providerResourceId(), name).compose(work);
  }

  // ---- list, stat, delete --------------------------------------------------------------------------------

  /** A directory's entries ({@code ListDir}, depth 1), or the entry itself when the path is not a directory. */
  @Override
  public Future<List<FileEntry>> list(FileOp op) {
    return at(op, "list_files", envd -> listDir(envd, op.path(), "list_files").transform(ar -> {
      if (ar.failed()) {
        if (ar.cause() instanceof ProviderException e && "invalid_argument".equals(code(e))) {
          // envd's answer for a path that is not a directory
          return stat(envd, op.path(), "list_files").map(List::of);
        }
        return Future.failedFuture(pathError(ar.cause()));
      }
      List<FileEntry> out = new ArrayList<>();
      for (Object o : ar.result().getJsonArray("entries", new JsonArray())) {
        if (o instanceof JsonObject e) {
          out.add(entry(e));
        }
      }
      out.sort(Comparator.comparing(FileEntry::name));
      return Future.succeededFuture(out);
    }));
  }

  private Future<JsonObject> listDir(Envd envd, String path, String op) {
    return client.unary(envd, FS + "ListDir", new JsonObject().put("path", path).put("depth", 1), op);
  }

  Future<FileEntry> stat(Envd envd, String path, String op) {
    return client.unary(envd, FS + "Stat", new JsonObject().put("path", path), op).transform(ar -> {
      if (ar.failed()) {
        return Future.failedFuture(pathError(ar.cause()));
      }
      try {
        JsonObject entry = ar.result().getJsonObject("entry");
        if (entry == null) {
          throw E2bErrors.of(ErrorCode.COMMAND_FAILED, op, false, Outcome.FAILED);
        }
        return Future.succeededFuture(entry(entry));
      } catch (ClassCastException e) {
        throw E2bErrors.of(ErrorCode.COMMAND_FAILED, op, false, Outcome.FAILED);
      }
    });
  }

  /**
   * Deletes a file or directory. envd's {@code Remove} always removes recursively and succeeds on a missing
   * path, so the path is looked at first: missing is 404, a non-empty directory without {@code recursive}
   * is 409 (a directory filled between the look and the removal is removed all the same).
   */
  @Override
  public Future<Void> delete(FileOp op) {
    return at(op, "delete_file", envd -> {
      String path = op.path();
      if (path.replaceAll("/+", "/").equals("/")) {
        return Future.failedFuture(ApiException.invalid("path must name something inside the sandbox"));
      }
      return stat(envd, path, "delete_file").compose(entry -> {
        if (!entry.isDir() || op.recursive()) {
          return Future.succeededFuture();
        }
        return listDir(envd, path, "delete_file").recover(t -> Future.failedFuture(pathError(t))).map(listed -> {
          if (!listed.getJsonArray("entries", new JsonArray()).isEmpty()) {
            throw SandboxPaths.notEmpty();
          }
          return null;
        });
      }).compose(checked -> remove(envd, path, "delete_file").recover(t -> Future.failedFuture(pathError(t))));
    });
  }

  Future<Void> remove(Envd envd, String path, String op) {
    return client.unary(envd, FS + "Remove", new JsonObject().put("path", path), op).mapEmpty();
  }

  /** Removes what an unfinished upload left; a failure is only logged. */
  Future<Void> removeQuietly(Envd envd, String path) {
    return remove(envd, path, "upload").recover(e -> {
      LOG.warn("e2b sandbox {}: an unfinished upload could not be removed ({})", envd.sandboxId(),
          e instanceof ProviderException p ? p.error().code().wire() : e.getClass().getName());
      return Future.succeededFuture();
    });
  }

  /** The Connect code of a failure envd answered, or null. */
  static String code(ProviderException e) {
    return e.error().context().get("provider_code") instanceof String c ? c : null;
  }

  /** envd's answers about a path, as the files API's: missing is 404, unusable is 422; others stay. */
  private static Throwable pathError(Throwable t) {
    if (!(t instanceof ProviderException e)) {
      return t;
    }
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

  // ---- content -----------------------------------------------------------------------------------------

  /**
   * Opens {@code GET /files} and completes once its headers arrived; 404 when missing, 422 for a directory.
   * The size is the response's Content-Length (envd serves plain files with one), else a stat's.
   */
  @Override
  public Future<FileReader> openRead(FileOp op) {
    return at(op, "download", envd -> download(envd, op.path()).transform(ar -> {
      if (ar.failed()) {
        if (!(ar.cause() instanceof WindowedDownload.Refused r)) {
          return Future.failedFuture(ar.cause());
        }
        return switch (r.status) {
          case 404 -> Future.failedFuture(SandboxPaths.notFound());
          // a directory, or a path envd cannot resolve
          case 400 -> stat(envd, op.path(), "download").compose(e -> Future.failedFuture(e.isDir()
              ? SandboxPaths.isDirectory() : ApiException.invalid("path is not a valid path")));
          default -> Future.failedFuture(E2bErrors.status(r.status, "download", r.headers.get("Retry-After"), true));
        };
      }
      WindowedDownload d = ar.result();
      if (d.size() >= 0) {
        return Future.succeededFuture(d);
      }
      return stat(envd, op.path(), "download").transform(stat -> {
        if (stat.failed()) {
          d.close();
          return Future.failedFuture(stat.cause());
        }
        d.sized(stat.result().size());
        return Future.succeededFuture(d);
      });
    }));
  }

  private Future<WindowedDownload> download(Envd envd, String path) {
    return WindowedDownload.open(client.vertx(), client.http(),
        client.envdOptions(envd, HttpMethod.GET, "/files?path=" + query(path)),
        client.settings().requestTimeout().toMillis(), DOWNLOAD_FAILURES);
  }

  /** A download's failures in the contract: transport errors, and a size mismatch as a retryable failure. */
  static final WindowedDownload.Failures DOWNLOAD_FAILURES = WindowedDownload.Failures.of(
      cause -> E2bErrors.transport(cause, "download"),
      () -> E2bErrors.of(ErrorCode.COMMAND_FAILED, "download", true, Outcome.FAILED));

  /** Starts an upload: 422 when the path is a directory; chunks go to a spool file on this node. */
  @Override
  public Future<FileWriter> openWrite(FileOp op) {
    if (op.path() != null && op.path().endsWith("/")) {
      return Future.failedFuture(SandboxPaths.isDirectory());
    }
    return at(op, "upload", envd -> stat(envd, op.path(), "upload")
        .transform(ar -> {
          if (ar.succeeded() && ar.result().isDir()) {
            return Future.failedFuture(SandboxPaths.isDirectory());
          }
          if (ar.failed() && !(ar.cause() instanceof ApiException e && e.status() == 404)) {
            return Future.failedFuture(ar.cause());
          }
          return E2bUpload.open(client, this, executions, envd, op);
        }));
  }

  @Override
  public Future<FileReader> openArchiveRead(FileOp op) {
    return TreeArchives.read(this, op);
  }

  @Override
  public Future<FileWriter> openArchiveWrite(FileOp op) {
    return TreeArchives.write(this, op);
  }
}
