package ai.bespokelabs.sandbox.adapters.daytona;

import ai.bespokelabs.sandbox.adapters.http.ResponseDownload;
import ai.bespokelabs.sandbox.adapters.files.SandboxPaths;
import ai.bespokelabs.sandbox.adapters.files.SpooledWriter;
import ai.bespokelabs.sandbox.adapters.files.TreeArchives;
import ai.bespokelabs.sandbox.core.model.FileEntry;
import ai.bespokelabs.sandbox.adapters.spi.FileReader;
import ai.bespokelabs.sandbox.adapters.spi.FileSystem;
import ai.bespokelabs.sandbox.adapters.spi.FileWriter;
import ai.bespokelabs.sandbox.core.bus.Messages.FileOp;
import ai.bespokelabs.sandbox.core.error.ApiException;
import io.vertx.core.Future;
import io.vertx.core.MultiMap;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.UUID;
import java.util.function.Supplier;

/**
 * The files API over the Daytona toolbox's: downloads stream ({@link ResponseDownload}), uploads are spooled on
 * this node and sent whole at commit ({@link SpooledWriter}), as the toolbox takes a file only whole; directory
 * archives are built on these ({@link TreeArchives}).
 */
final class DaytonaFiles implements FileSystem {
  private static final long TRANSFER_IDLE_MS = 120_000;

  private final Vertx vertx;
  private final DaytonaClient client;
  private final DaytonaSandboxes sandboxes;

  DaytonaFiles(Vertx vertx, DaytonaClient client, DaytonaSandboxes sandboxes) {
    this.vertx = vertx;
    this.client = client;
    this.sandboxes = sandboxes;
  }

  /**
   * A path as the toolbox takes it: relative paths are under the sandbox user's home (the toolbox's working
   * directory), absolute ones anywhere in the sandbox, which is a whole machine of its own.
   */
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

  private static String child(String dir, String name) {
    return dir.equals(".") ? name : dir.endsWith("/") ? dir + name : dir + "/" + name;
  }

  private static String fileQuery(String toolbox, String endpoint, String path) {
    return toolbox + endpoint + "?path=" + DaytonaSandboxes.encode(path);
  }

  /** A path checked, and the toolbox of the op's sandbox (started when Daytona stopped it). */
  private record Target(String path, String toolbox) {}

  /** @param atRoot the answer for a path naming the root or the working directory itself; null: allowed */
  private Future<Target> target(FileOp op, Supplier<ApiException> atRoot) {
    String path;
    try {
      path = filePath(op.path());
    } catch (ApiException e) {
      return Future.failedFuture(e);
    }
    if (atRoot != null && (path.equals("/") || path.equals("."))) {
      return Future.failedFuture(atRoot.get());
    }
    return sandboxes.toolbox(op.providerResourceId(), "files").map(toolbox -> new Target(path, toolbox));
  }

  /**
   * The files API's answer for a failed toolbox call: 404 file not found, 403 permission denied inside the
   * sandbox, anything else the contract error for its status (the toolbox's message is never read).
   */
  private RuntimeException fileError(int status, MultiMap headers) {
    if (status == 404) {
      return SandboxPaths.notFound();
    }
    if (status == 403) {
      return new ApiException(403, "permission denied inside the sandbox");
    }
    return client.httpError("files", status, headers);
  }

  private RuntimeException fileError(DaytonaClient.Resp r) {
    return fileError(r.status(), r.headers());
  }

  /** {@code GET /files/info}: the entry at {@code path}, or null when there is none. */
  private Future<JsonObject> info(String toolbox, String path) {
    return client.call("files", false, HttpMethod.GET, fileQuery(toolbox, "/files/info", path), null, null,
        client.requestTimeoutMs()).map(r -> {
          if (r.status() == 404) {
            return null;
          }
          if (!r.ok()) {
            throw fileError(r);
          }
          return client.json("files", r, false);
        });
  }

  /** One toolbox file description ({@code FileInfo}) as an entry shown at {@code path}. */
  static FileEntry entry(JsonObject f, String path) {
    boolean dir = f.getBoolean("isDir", false);
    Instant modified = null;
    try {
      modified = f.getString("modifiedAt") == null ? null : Instant.parse(f.getString("modifiedAt"));
    } catch (DateTimeParseException | ClassCastException e) {
      // shown without a time
    }
    return new FileEntry(f.getString("name", ""), path, dir, dir ? 0 : f.getLong("size", 0L), mode(f), modified);
  }

  /** Permission bits from {@code permissions} ("0755") or, failing that, {@code mode} ("-rwxr-xr-x"). */
  static int mode(JsonObject f) {
    String perms = f.getString("permissions");
    if (perms != null && perms.matches("[0-7]{3,4}")) {
      return Integer.parseInt(perms, 8) & 0777;
    }
    String m = f.getString("mode");
    if (m != null && m.length() >= 9) {
      String rwx = m.substring(m.length() - 9);
      int bits = 0;
      for (int i = 0; i < 9; i++) {
        bits = bits << 1 | (rwx.charAt(i) == '-' ? 0 : 1);
      }
      return bits;
    }
    return 0;
  }

  /** {@code GET /files}; a path naming a file (the toolbox refuses to list it) is shown as its own entry. */
  @Override
  public Future<List<FileEntry>> list(FileOp op) {
    return target(op, null).compose(t -> list(t.toolbox(), t.path()));
  }

  private Future<List<FileEntry>> list(String toolbox, String path) {
    return client.call("files", false, HttpMethod.GET, fileQuery(toolbox, "/files", path), null, null,
        client.requestTimeoutMs()).compose(r -> {
          if (r.status() != 400) {
            return Future.succeededFuture(entries(r, path));
          }
          return info(toolbox, path).map(info -> {
            if (info == null) {
              throw SandboxPaths.notFound();
            }
            return info.getBoolean("isDir", false) ? entries(r, path) : List.of(entry(info, path));
          });
        });
  }

  private List<FileEntry> entries(DaytonaClient.Resp r, String path) {
    if (!r.ok()) {
      throw fileError(r);
    }
    JsonArray items;
    try {
      items = new JsonArray(r.body());
    } catch (RuntimeException e) {
      throw client.badResponse("files", false);
    }
    List<FileEntry> out = new ArrayList<>();
    for (Object o : items) {
      if (o instanceof JsonObject f && f.getString("name") != null) {
        out.add(entry(f, child(path, f.getString("name"))));
      }
    }
    out.sort(Comparator.comparing(FileEntry::name));
    return out;
  }

  /**
   * {@code GET /files/download}, read as it arrives: the toolbox's answer is paused and asked for one buffer
   * at a time as the caller reads, so nothing but a buffer or two is held whatever the file's size.
   */
  @Override
  public Future<FileReader> openRead(FileOp op) {
    return target(op, null).compose(t -> client.stream("files", fileQuery(t.toolbox(), "/files/download", t.path()),
        Math.max(client.requestTimeoutMs(), TRANSFER_IDLE_MS)).compose(s -> {
          if (s.response() != null) {
            return Future.succeededFuture(new ResponseDownload(s.response(), size(s.headers())));
          }
          if (s.status() != 400) {
            return Future.failedFuture(fileError(s.status(), s.headers()));
          }
          return info(t.toolbox(), t.path()).map(info -> {
            if (info == null) {
              throw SandboxPaths.notFound();
            }
            if (info.getBoolean("isDir", false)) {
              throw SandboxPaths.isDirectory();
            }
            throw fileError(s.status(), s.headers());
          });
        }));
  }

  /** The download's size from its Content-Length, unless it is compressed on the wire; -1 when unknown. */
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

  /**
   * Spools the upload on this node; at commit sends it whole with {@code POST /files/upload} (a multipart
   * body streamed from the spool with its exact length; the toolbox creates parent directories and replaces
   * an existing file), then sets its mode with {@code POST /files/permissions}. Nothing reaches the sandbox
   * before commit; abort deletes the spool.
   */
  @Override
  public Future<FileWriter> openWrite(FileOp op) {
    int mode = op.executable() ? 0755 : 0644;
    return target(op, SandboxPaths::isDirectory).compose(t -> SpooledWriter.open(vertx.fileSystem(),
        "daytona-upload-", (spool, size) -> upload(t.toolbox(), t.path(), spool.toString(), size)
        .compose(v -> client.call("files", true, HttpMethod.POST,
            fileQuery(t.toolbox(), "/files/permissions", t.path()) + "&mode=" + String.format("%04o", mode), null,
            null, client.requestTimeoutMs())).compose(r -> {
              if (!r.ok()) {
                // a file whose mode could not be set is not left behind
                client.send(HttpMethod.DELETE, fileQuery(t.toolbox(), "/files", t.path()), null, null,
                    client.requestTimeoutMs());
                return Future.failedFuture(fileError(r));
              }
              String name = t.path().substring(t.path().lastIndexOf('/') + 1);
              return Future.succeededFuture(new FileEntry(name, t.path(), false, size, mode, Instant.now()));
            })));
  }

  /** {@code POST /files/upload} of the spooled file as the multipart part {@code file}. */
  private Future<Void> upload(String toolbox, String path, String spool, long size) {
    String boundary = "bsk" + UUID.randomUUID().toString().replace("-", "");
    String name = path.substring(path.lastIndexOf('/') + 1).replaceAll("[^A-Za-z0-9._-]", "_");
    Buffer head = Buffer.buffer("--" + boundary + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\""
        + (name.isEmpty() ? "file" : name) + "\"\r\nContent-Type: application/octet-stream\r\n\r\n");
    Buffer tail = Buffer.buffer("\r\n--" + boundary + "--\r\n");
    return client.postFile("files", fileQuery(toolbox, "/files/upload", path),
        "multipart/form-data; boundary=" + boundary, head, spool, size, tail, transferTimeoutMs(size)).compose(r -> {
          if (r.ok()) {
            return Future.succeededFuture();
          }
          if (r.status() != 400) {
            return Future.failedFuture(fileError(r));
          }
          return info(toolbox, path).compose(info -> Future.failedFuture(info != null && info.getBoolean("isDir", false)
              ? SandboxPaths.isDirectory() : fileError(r)));
        });
  }

  private long transferTimeoutMs(long bytes) {
    // the request timeout, plus a second per MiB for large transfers
    return client.requestTimeoutMs() + (bytes >> 20) * 1_000;
  }

  /**
   * {@code DELETE /files}. The toolbox refuses every directory without {@code recursive}; for such a refusal
   * the directory is listed, and an empty one is then deleted while a non-empty one answers 409.
   */
  @Override
  public Future<Void> delete(FileOp op) {
    return target(op, () -> ApiException.invalid("path must name something inside the sandbox"))
        .compose(t -> remove(t.toolbox(), t.path(), op.recursive()).compose(r -> {
      if (r.ok()) {
        return Future.succeededFuture();
      }
      if (r.status() != 400 || op.recursive()) {
        return Future.failedFuture(fileError(r));
      }
      return info(t.toolbox(), t.path()).compose(info -> {
        if (info == null) {
          throw SandboxPaths.notFound();
        }
        if (!info.getBoolean("isDir", false)) {
          throw fileError(r);
        }
        return list(t.toolbox(), t.path()).compose(entries -> {
          if (!entries.isEmpty()) {
            throw SandboxPaths.notEmpty();
          }
          return remove(t.toolbox(), t.path(), true);
        }).map(again -> {
          if (!again.ok()) {
            throw fileError(again);
          }
          return null;
        });
      });
    }));
  }

  private Future<DaytonaClient.Resp> remove(String toolbox, String path, boolean recursive) {
    return client.call("files", true, HttpMethod.DELETE, fileQuery(toolbox, "/files", path)
        + (recursive ? "&recursive=true" : ""), null, null, client.requestTimeoutMs());
  }

  /** Daytona has no tree transfer: archives are built on the single-file operations ({@link TreeArchives}). */
  @Override
  public Future<FileReader> openArchiveRead(FileOp op) {
    return TreeArchives.read(this, op);
  }

  @Override
  public Future<FileWriter> openArchiveWrite(FileOp op) {
    return TreeArchives.write(this, op);
  }
}
