package ai.bespokelabs.sandbox.adapters.codecapsules;

import ai.bespokelabs.sandbox.adapters.files.SandboxPaths;
import ai.bespokelabs.sandbox.adapters.files.SpooledWriter;
import ai.bespokelabs.sandbox.adapters.files.TreeArchives;
import ai.bespokelabs.sandbox.adapters.http.WindowedDownload;
import ai.bespokelabs.sandbox.adapters.spi.FileReader;
import ai.bespokelabs.sandbox.adapters.spi.FileSystem;
import ai.bespokelabs.sandbox.adapters.spi.FileWriter;
import ai.bespokelabs.sandbox.core.bus.Messages.FileOp;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError.Outcome;
import ai.bespokelabs.sandbox.core.model.FileEntry;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.file.OpenOptions;
import io.vertx.core.http.HttpClientRequest;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import java.math.BigDecimal;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeoutException;

/**
 * The files of a CodeCapsules sandbox. Content goes through the files route ({@link WindowedDownload}; an
 * upload is spooled on this node and sent whole at commit, so nothing is visible before); listing, deleting and
 * the executable bit run {@code find}, {@code rm} and {@code chmod} through exec, CodeCapsules having no route
 * for them. Every path is made absolute before any call, a relative one under the sandbox's working directory
 * ({@link CodeCapsulesWorkdir}; a {@code ..} out of it is refused); absolute paths may name anything, the whole
 * VM being the sandbox. Directory archives are built on these single-file operations ({@link TreeArchives}).
 */
final class CodeCapsulesFiles implements FileSystem {
  /** The slowest upload rate a commit waits for, on top of the request timeout. */
  static final long MIN_UPLOAD_BYTES_PER_SEC = 1L << 20;
  /** Bound of a helper command (find, rm, chmod). */
  static final int HELPER_TIMEOUT_SECS = 60;
  /** Exit codes of the helper scripts. */
  static final int MISSING = 3;
  static final int NOT_EMPTY = 4;
  /** NUL-terminated records of type, size, mtime, mode and absolute path of the absolute path given. */
  static final String LIST = "p=$1; [ -e \"$p\" ] || [ -L \"$p\" ] || exit 3; "
      + "if [ -d \"$p\" ] && [ ! -L \"$p\" ]; then a=$(cd -- \"$p\" && pwd) || exit 5; "
      + "find \"$a\" -mindepth 1 -maxdepth 1 -printf '%y\\t%s\\t%T@\\t%m\\t%p\\0'; "
      + "else a=$(cd -- \"$(dirname -- \"$p\")\" && pwd) || exit 5; a=\"${a%/}/$(basename -- \"$p\")\"; "
      + "find \"$a\" -maxdepth 0 -printf '%y\\t%s\\t%T@\\t%m\\t%p\\0'; fi";
  static final String DELETE = "p=$1; [ -e \"$p\" ] || [ -L \"$p\" ] || exit 3; "
      + "if [ -d \"$p\" ] && [ ! -L \"$p\" ]; then "
      + "if [ \"$2\" = 1 ]; then rm -rf -- \"$p\"; else rmdir -- \"$p\" 2>/dev/null || exit 4; fi; "
      + "else rm -f -- \"$p\"; fi";

  private final CodeCapsulesClient client;
  private final CodeCapsulesWorkdir workdir;

  CodeCapsulesFiles(CodeCapsulesClient client, CodeCapsulesWorkdir workdir) {
    this.client = client;
    this.workdir = workdir;
  }

  /** The op's path as the files route takes it ({@link CodeCapsulesWorkdir#absolute}), for a known sandbox. */
  private Future<String> checked(FileOp op) {
    if (op.providerResourceId() == null || op.providerResourceId().isBlank()) {
      return Future.failedFuture(CodeCapsulesClient.of(ErrorCode.NOT_FOUND, op.op(), false, Outcome.FAILED));
    }
    return workdir.absolute(op.providerResourceId(), op.path(), op.op());
  }

  /** Runs {@code sh -c script sh args...} through exec; completes with its result. */
  private Future<CodeCapsulesWire.ExecResult> shell(String resourceId, String script, String op, String... args) {
    StringBuilder cmd = new StringBuilder("sh -c ").append(CodeCapsulesExecutions.quote(script)).append(" sh");
    for (String a : args) {
      cmd.append(' ').append(CodeCapsulesExecutions.quote(a));
    }
    return client.call(HttpMethod.POST, CodeCapsulesWire.exec(resourceId),
        CodeCapsulesWire.execBody(cmd.toString(), HELPER_TIMEOUT_SECS, Map.of(), null), op, 200).map(r -> {
          CodeCapsulesWire.ExecResult result = CodeCapsulesWire.ExecResult.of(CodeCapsulesClient.json(r, op));
          if (result == null) {
            throw CodeCapsulesClient.of(ErrorCode.COMMAND_FAILED, op, false, Outcome.FAILED);
          }
          return result;
        });
  }

  /** A directory's entries, or the entry itself when the path is not a directory. */
  @Override
  public Future<List<FileEntry>> list(FileOp op) {
    return checked(op).compose(path -> shell(op.providerResourceId(), LIST, "list_files", path)).map(r -> {
      if (r.exitCode() == MISSING) {
        throw SandboxPaths.notFound();
      }
      if (r.exitCode() != 0) {
        throw CodeCapsulesClient.of(ErrorCode.COMMAND_FAILED, "list_files", false, Outcome.FAILED);
      }
      List<FileEntry> out = new ArrayList<>();
      for (String record : r.stdout().split("\0")) {
        FileEntry e = entry(record);
        if (e != null) {
          out.add(e);
        }
      }
      out.sort(Comparator.comparing(FileEntry::name));
      return out;
    });
  }

  /** One {@code find -printf} record, or null. */
  static FileEntry entry(String record) {
    String[] f = record.split("\t", 5);
    if (f.length < 5) {
      return null;
    }
    try {
      String type = switch (f[0]) {
        case "d" -> FileEntry.DIRECTORY;
        case "f" -> FileEntry.FILE;
        case "l" -> FileEntry.SYMLINK;
        default -> FileEntry.OTHER;
      };
      String path = f[4];
      String trimmed = path.length() > 1 && path.endsWith("/") ? path.substring(0, path.length() - 1) : path;
      String name = trimmed.substring(trimmed.lastIndexOf('/') + 1);
      BigDecimal secs = new BigDecimal(f[2]);
      Instant modified = Instant.ofEpochSecond(secs.longValue(),
          secs.remainder(BigDecimal.ONE).movePointRight(9).intValue());
      return new FileEntry(name.isEmpty() ? trimmed : name, trimmed, FileEntry.DIRECTORY.equals(type),
          Long.parseLong(f[1]), Integer.parseInt(f[3], 8), modified, type);
    } catch (RuntimeException unreadable) {
      return null;
    }
  }

  @Override
  public Future<FileReader> openRead(FileOp op) {
    return checked(op).compose(path -> WindowedDownload.open(client.vertx(), client.http(),
            client.options(HttpMethod.GET, CodeCapsulesWire.files(op.providerResourceId(), path)),
            client.settings().requestTimeout().toMillis(), DOWNLOAD_FAILURES))
        .compose(d -> d.size() >= 0 ? Future.<FileReader>succeededFuture(d) : sized(d, op))
        .recover(t -> Future.failedFuture(t instanceof WindowedDownload.Refused r ? refused(r, "download") : t));
  }

  /** A download's failures in the contract: transport errors, and a size mismatch as a retryable failure. */
  private static final WindowedDownload.Failures DOWNLOAD_FAILURES = WindowedDownload.Failures.of(
      cause -> CodeCapsulesClient.transport(cause, "download"),
      () -> CodeCapsulesClient.of(ErrorCode.COMMAND_FAILED, "download", true, Outcome.FAILED));

  /** An answer without a length (archives need it): the size from a listing of the file. */
  private Future<FileReader> sized(WindowedDownload d, FileOp op) {
    return list(op).transform(ar -> {
      if (ar.succeeded() && ar.result().size() == 1 && !ar.result().get(0).isDir()) {
        d.sized(ar.result().get(0).size());
      }
      return Future.succeededFuture(d);
    });
  }

  private static RuntimeException refused(WindowedDownload.Refused r, String op) {
    String code = CodeCapsulesWire.errorCode(r.body);
    if (CodeCapsulesWire.IS_DIRECTORY.equals(code)) {
      return SandboxPaths.isDirectory();
    }
    if (r.status == 404) {
      // a missing file (a missing sandbox answers the same; the file is the likelier)
      return SandboxPaths.notFound();
    }
    return CodeCapsulesClient.status(op, r.status, r.headers.get(CodeCapsulesWire.RETRY_AFTER_HEADER), r.body);
  }

  @Override
  public Future<FileWriter> openWrite(FileOp op) {
    return checked(op).compose(path -> SpooledWriter.open(client.vertx().fileSystem(), "codecapsules-upload-",
        (spool, size) -> send(op, path, spool.toString(), size)
            .compose(info -> op.executable() ? chmod(op.providerResourceId(), info) : Future.succeededFuture(info))
            .map(info -> new FileEntry(basename(info.path()), info.path(), false,
                info.sizeBytes() >= 0 ? info.sizeBytes() : size, op.executable() ? 0755 : 0644, info.createdAt()))));
  }

  private static String basename(String path) {
    return path.substring(path.lastIndexOf('/') + 1);
  }

  /** {@code PUT .../files?path=} of the spool with its length, read from disk as the connection takes it. */
  private Future<CodeCapsulesWire.FileInfo> send(FileOp op, String path, String spool, long size) {
    long waitMs = client.settings().requestTimeout().toMillis() + size * 1000 / MIN_UPLOAD_BYTES_PER_SEC;
    Promise<Buffer> answered = Promise.promise();
    HttpClientRequest[] sent = new HttpClientRequest[1];
    long timer = client.vertx().setTimer(waitMs, id -> {
      if (answered.tryFail(CodeCapsulesClient.transport(new TimeoutException("upload stalled"), "upload"))
          && sent[0] != null) {
        sent[0].reset();
      }
    });
    client.vertx().fileSystem().open(spool, new OpenOptions().setRead(true).setWrite(false).setCreate(false))
        .compose(in -> client.http().request(client.options(HttpMethod.PUT,
                CodeCapsulesWire.files(op.providerResourceId(), path))
                .putHeader("Content-Type", CodeCapsulesWire.OCTETS)
                .putHeader("Content-Length", String.valueOf(size)))
            .compose(req -> {
              sent[0] = req;
              return req.send(in);
            })
            .compose(resp -> resp.body().compose(body -> resp.statusCode() == 200 || resp.statusCode() == 201
                ? Future.succeededFuture(body)
                : Future.failedFuture(CodeCapsulesClient.status("upload", resp.statusCode(),
                    resp.getHeader(CodeCapsulesWire.RETRY_AFTER_HEADER), body))))
            .eventually(() -> in.close().otherwiseEmpty()))
        .onComplete(ar -> {
          client.vertx().cancelTimer(timer);
          if (ar.succeeded()) {
            answered.tryComplete(ar.result());
          } else {
            Throwable t = ar.cause();
            answered.tryFail(t instanceof ApiException || t instanceof ai.bespokelabs.sandbox.core.error.ProviderException
                ? t : CodeCapsulesClient.transport(t, "upload"));
          }
        });
    return answered.future().map(body -> {
      try {
        return CodeCapsulesWire.FileInfo.of(new JsonObject(body), path);
      } catch (RuntimeException unreadable) {
        return new CodeCapsulesWire.FileInfo(path, size, null);
      }
    });
  }

  private Future<CodeCapsulesWire.FileInfo> chmod(String resourceId, CodeCapsulesWire.FileInfo info) {
    return shell(resourceId, "chmod 0755 -- \"$1\"", "upload", info.path()).map(r -> {
      if (r.exitCode() != 0) {
        throw CodeCapsulesClient.of(ErrorCode.COMMAND_FAILED, "upload", false, Outcome.FAILED);
      }
      return info;
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

  /** Deletes through {@code rm}/{@code rmdir}: missing is 404, a non-empty directory without recursive 409. */
  @Override
  public Future<Void> delete(FileOp op) {
    try {
      if (CodeCapsulesWorkdir.base(op.path())) {
        return Future.failedFuture(ApiException.invalid("path must name something inside the sandbox"));
      }
    } catch (ApiException e) {
      return Future.failedFuture(e);
    }
    return checked(op).compose(path -> shell(op.providerResourceId(), DELETE, "delete_file", path,
        op.recursive() ? "1" : "0")).map(r -> {
      switch (r.exitCode()) {
        case 0 -> {
          return null;
        }
        case MISSING -> throw SandboxPaths.notFound();
        case NOT_EMPTY -> throw SandboxPaths.notEmpty();
        default -> throw CodeCapsulesClient.of(ErrorCode.COMMAND_FAILED, "delete_file", false, Outcome.FAILED);
      }
    });
  }
}
