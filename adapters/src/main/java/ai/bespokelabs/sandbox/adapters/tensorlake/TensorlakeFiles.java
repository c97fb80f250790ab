package ai.bespokelabs.sandbox.adapters.tensorlake;

import ai.bespokelabs.sandbox.adapters.http.ResponseDownload;
import ai.bespokelabs.sandbox.adapters.files.SandboxPaths;
import ai.bespokelabs.sandbox.adapters.files.SpooledWriter;
import ai.bespokelabs.sandbox.adapters.files.TreeArchives;
import ai.bespokelabs.sandbox.adapters.spi.FileReader;
import ai.bespokelabs.sandbox.adapters.spi.FileSystem;
import ai.bespokelabs.sandbox.adapters.spi.FileWriter;
import ai.bespokelabs.sandbox.core.bus.Messages.FileOp;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.model.FileEntry;
import io.vertx.core.Future;
import io.vertx.core.MultiMap;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * The files API over the daemon's ({@code /api/v1/files}, {@code /api/v1/files/list}): downloads stream
 * ({@link ResponseDownload}), uploads are spooled on this node and sent whole at commit with {@code PUT}
 * (executable ones then get {@code chmod 755} through a daemon process, as the daemon has no mode API);
 * directory archives are built on these ({@link TreeArchives}). The daemon reports no modes: entries show
 * 0755 for directories and 0644 for files.
 */
final class TensorlakeFiles implements FileSystem {
  private static final long TRANSFER_IDLE_MS = 120_000;

  private final Vertx vertx;
  private final TensorlakeClient client;
  private final TensorlakeSandboxes sandboxes;

  TensorlakeFiles(Vertx vertx, TensorlakeClient client, TensorlakeSandboxes sandboxes) {
    this.vertx = vertx;
    this.client = client;
    this.sandboxes = sandboxes;
  }

  private record Target(String path, TensorlakeClient.Daemon daemon) {}

  static String filePath(String path) {
    if (path == null || path.isBlank()) {
      throw SandboxPaths.required();
    }
    try {
      String p = Path.of(path).normalize().toString();
      return p.isEmpty() ? "." : p;
    } catch (InvalidPathException e) {
      throw ApiException.invalid("path is not a valid path");
    }
  }

  private Future<Target> target(FileOp op, boolean rootAllowed) {
    String path;
    try {
      path = filePath(op.path());
    } catch (ApiException e) {
      return Future.failedFuture(e);
    }
    if (!rootAllowed && (path.equals("/") || path.equals("."))) {
      return Future.failedFuture(ApiException.invalid("path must name something inside the sandbox"));
    }
    return sandboxes.daemon(op.providerResourceId(), "files").map(d -> new Target(path, d));
  }

  private static String url(TensorlakeClient.Daemon d, String endpoint, String path) {
    return d.base() + endpoint + "?path=" + TensorlakeClient.encode(path);
  }

  private RuntimeException fileError(int status, MultiMap headers) {
    if (status == 404) {
      return SandboxPaths.notFound();
    }
    if (status == 403) {
      return new ApiException(403, "permission denied inside the sandbox");
    }
    return client.httpError("files", status, headers);
  }

  private static String child(String dir, String name) {
    return dir.equals(".") ? name : dir.endsWith("/") ? dir + name : dir + "/" + name;
  }

  @Override
  public Future<List<FileEntry>> list(FileOp op) {
    return target(op, true).compose(t -> list(t.daemon(), t.path()).compose(entries -> {
      if (entries != null) {
        return Future.succeededFuture(entries);
      }
      // not a directory: shown as its own entry, from its parent's listing
      Path p = Path.of(t.path());
      String parent = p.getParent() == null ? "." : p.getParent().toString();
      String name = p.getFileName().toString();
      return list(t.daemon(), parent).map(siblings -> {
        if (siblings != null) {
          for (FileEntry e : siblings) {
            if (e.name().equals(name)) {
              return List.of(e);
            }
          }
        }
        throw SandboxPaths.notFound();
      });
    }));
  }

  /** The entries of a directory; null when the path is not one. */
  private Future<List<FileEntry>> list(TensorlakeClient.Daemon d, String path) {
    return client.call("files", false, HttpMethod.GET, url(d, "/api/v1/files/list", path), d, null, null).map(r -> {
      if (r.status() == 400) {
        return null;
      }
      if (!r.ok()) {
        throw fileError(r.status(), r.headers());
      }
      JsonArray items = client.json("files", r, false).getJsonArray("entries");
      if (items == null) {
        throw client.badResponse("files", false);
      }
      List<FileEntry> out = new ArrayList<>();
      for (Object o : items) {
        if (o instanceof JsonObject f && f.getValue("name") instanceof String name) {
          out.add(entry(f, name, child(path, name)));
        }
      }
      out.sort(Comparator.comparing(FileEntry::name));
      return out;
    });
  }

  static FileEntry entry(JsonObject f, String name, String path) {
    boolean dir = Boolean.TRUE.equals(f.getValue("is_dir"));
    Instant modified = null;
    Object at = f.getValue("modified_at");
    try {
      if (at instanceof String s) {
        modified = Instant.parse(s);
      } else if (at instanceof Number n) {
        modified = Instant.ofEpochSecond(n.longValue());
      }
    } catch (RuntimeException e) {
      // shown without a time
    }
    long size = dir || !(f.getValue("size") instanceof Number n) ? 0 : n.longValue();
    return new FileEntry(name, path, dir, size, dir ? 0755 : 0644, modified,
        dir ? FileEntry.DIRECTORY : FileEntry.FILE);
  }

  @Override
  public Future<FileReader> openRead(FileOp op) {
    return target(op, true).compose(t -> client.stream("files", HttpMethod.GET, url(t.daemon(), "/api/v1/files",
        t.path()), t.daemon(), "application/octet-stream", Math.max(client.requestTimeoutMs(), TRANSFER_IDLE_MS))
        .compose(s -> {
          if (s.response() != null) {
            return Future.succeededFuture(new ResponseDownload(s.response(), size(s.headers())));
          }
          if (s.status() != 400) {
            return Future.failedFuture(fileError(s.status(), s.headers()));
          }
          return list(t.daemon(), t.path()).compose(entries -> Future.failedFuture(entries != null
              ? SandboxPaths.isDirectory() : fileError(s.status(), s.headers())));
        }));
  }

  private static long size(MultiMap headers) {
    String encoding = headers.get("Content-Encoding");
    if (encoding != null && !encoding.equalsIgnoreCase("identity")) {
      return -1;
    }
    try {
      return Long.parseLong(headers.get("Content-Length"));
    } catch (RuntimeException e) {
      return -1;
    }
  }

  @Override
  public Future<FileWriter> openWrite(FileOp op) {
    int mode = op.executable() ? 0755 : 0644;
    return target(op, false).compose(t -> SpooledWriter.open(vertx.fileSystem(), "tensorlake-upload-",
        (spool, size) -> client.putFile("files", url(t.daemon(), "/api/v1/files", t.path()), t.daemon(),
            spool.toString(), size, client.requestTimeoutMs() + (size >> 20) * 1_000).compose(r -> {
              if (!r.ok()) {
                if (r.status() == 400) {
                  return list(t.daemon(), t.path()).compose(entries -> Future.failedFuture(entries != null
                      ? SandboxPaths.isDirectory() : fileError(r.status(), r.headers())));
                }
                return Future.failedFuture(fileError(r.status(), r.headers()));
              }
              return op.executable() ? chmod(t) : Future.succeededFuture();
            }).map(v -> new FileEntry(Path.of(t.path()).getFileName().toString(), t.path(), false, size, mode,
                Instant.now(), FileEntry.FILE))));
  }

  /** {@code chmod 755} through a daemon process, waited for; a file left without its mode is deleted. */
  private Future<Void> chmod(Target t) {
    JsonObject body = new JsonObject().put("command", "chmod").put("args", new JsonArray().add("755").add(t.path()));
    return client.expect("files", true, HttpMethod.POST, t.daemon().base() + "/api/v1/processes", t.daemon(), body)
        .compose(r -> awaitExit(t.daemon(), client.json("files", r, true).getValue("pid"),
            System.nanoTime() + client.settings().requestTimeout().toNanos()))
        .compose(code -> code == 0 ? Future.<Void>succeededFuture() : Future.failedFuture(
            new ApiException(403, "the file's mode could not be set inside the sandbox")))
        .recover(t2 -> client.call("files", true, HttpMethod.DELETE, url(t.daemon(), "/api/v1/files", t.path()),
            t.daemon(), null, null).transform(deleted -> Future.failedFuture(t2)));
  }

  private Future<Integer> awaitExit(TensorlakeClient.Daemon d, Object pid, long deadline) {
    if (!(pid instanceof Number n)) {
      return Future.failedFuture(client.badResponse("files", true));
    }
    return client.expect("files", false, HttpMethod.GET, d.base() + "/api/v1/processes/" + n.longValue(), d, null)
        .compose(r -> {
          JsonObject info = client.json("files", r, false);
          if (TensorlakeExecution.finished(info)) {
            return Future.succeededFuture(info.getValue("exit_code") instanceof Number c ? c.intValue() : -1);
          }
          if (System.nanoTime() > deadline) {
            return Future.failedFuture(client.badResponse("files", true));
          }
          return client.delay(50).compose(v -> awaitExit(d, pid, deadline));
        });
  }

  /** {@code DELETE /api/v1/files}; a non-empty directory needs {@code recursive} (checked by listing it). */
  @Override
  public Future<Void> delete(FileOp op) {
    return target(op, false).compose(t -> list(t.daemon(), t.path()).compose(entries -> {
      if (entries != null && !entries.isEmpty() && !op.recursive()) {
        return Future.failedFuture(SandboxPaths.notEmpty());
      }
      return client.call("files", true, HttpMethod.DELETE, url(t.daemon(), "/api/v1/files", t.path()), t.daemon(),
          null, null).map(r -> {
            if (!r.ok()) {
              throw fileError(r.status(), r.headers());
            }
            return null;
          });
    }));
  }

  /** The daemon has no tree transfer: archives are built on the single-file operations. */
  @Override
  public Future<FileReader> openArchiveRead(FileOp op) {
    return TreeArchives.read(this, op);
  }

  @Override
  public Future<FileWriter> openArchiveWrite(FileOp op) {
    return TreeArchives.write(this, op);
  }
}
