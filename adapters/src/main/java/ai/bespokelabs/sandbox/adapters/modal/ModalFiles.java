package ai.bespokelabs.sandbox.adapters.modal;

import ai.bespokelabs.sandbox.adapters.files.SandboxPaths;
import ai.bespokelabs.sandbox.adapters.files.SpooledWriter;
import ai.bespokelabs.sandbox.adapters.files.TreeArchives;
import ai.bespokelabs.sandbox.adapters.modal.ModalClient.Router;
import ai.bespokelabs.sandbox.adapters.spi.FileReader;
import ai.bespokelabs.sandbox.adapters.spi.FileSystem;
import ai.bespokelabs.sandbox.adapters.spi.FileWriter;
import ai.bespokelabs.sandbox.core.bus.Messages.FileOp;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError;
import ai.bespokelabs.sandbox.core.error.ProviderError.Outcome;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import ai.bespokelabs.sandbox.core.model.FileEntry;
import com.google.protobuf.ByteString;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.file.AsyncFile;
import io.vertx.core.file.OpenOptions;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.nio.charset.StandardCharsets;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.UUID;
import modal.client.Api;
import modal.client.Api.SystemErrorCode;

/**
 * The files API over Modal's published file calls: {@code ContainerFilesystemExec} (open, read, write, close, ls,
 * mkdir, rm on the sandbox's task) and {@code ContainerFilesystemExecGetOutput} for each one's output or error.
 * Downloads are read one {@code file_read_request} of at most the asked size per pull, so nothing but a chunk is
 * held. Uploads are spooled on this node ({@link SpooledWriter}) and at commit written to a temporary name beside
 * the target, then given their mode and renamed into place by one helper program ({@link ModalCommand}), so a
 * failed upload leaves nothing at the path. A listing's names come from {@code ls}; their type, size, mode and
 * time (which {@code ls} does not give) from {@code stat} run as a helper program. Directory archives are built
 * on these ({@link TreeArchives}): Modal has no tree transfer.
 */
final class ModalFiles implements FileSystem {
  static final String OP = "files";
  /** The most bytes one {@code file_read_request} asks for. */
  static final int MAX_READ = 4 << 20;
  /** Bytes per {@code file_write_request} (Modal takes at most 16 MiB in one). */
  static final int WRITE_CHUNK = 1 << 20;
  /** Names per {@code stat} helper, well inside the argument limit. */
  static final int STAT_BATCH = 256;
  static final float OUTPUT_TIMEOUT_SECS = 55;
  /** The helper's exit status for an upload whose target is a directory. */
  static final int TARGET_IS_DIRECTORY = 21;
  /** Sets the mode of the uploaded temporary file and renames it over the target, unless that is a directory. */
  static final String PLACE = "chmod \"$1\" -- \"$2\" && if [ -d \"$3\" ] && [ ! -L \"$3\" ]; then rm -f -- \"$2\"; "
      + "exit " + TARGET_IS_DIRECTORY + "; fi && mv -f -- \"$2\" \"$3\"";

  private final ModalClient client;

  ModalFiles(ModalClient client) {
    this.client = client;
  }

  /** A failure Modal reported inside a file operation's output. */
  static final class FsError extends RuntimeException {
    final SystemErrorCode code;

    FsError(SystemErrorCode code) {
      super(code.name(), null, false, false);
      this.code = code;
    }
  }

  /** The files API's answer for a file operation Modal refused; other failures pass unchanged. */
  static Throwable mapped(Throwable t) {
    if (!(t instanceof FsError e)) {
      return t;
    }
    return switch (e.code) {
      case SYSTEM_ERROR_CODE_NOENT, SYSTEM_ERROR_CODE_NOTDIR -> SandboxPaths.notFound();
      case SYSTEM_ERROR_CODE_ISDIR -> SandboxPaths.isDirectory();
      case SYSTEM_ERROR_CODE_ACCES, SYSTEM_ERROR_CODE_PERM -> new ApiException(403,
          "permission denied inside the sandbox");
      case SYSTEM_ERROR_CODE_EXIST -> ApiException.conflict("path already exists");
      default -> new ProviderException(ProviderError.of(ErrorCode.COMMAND_FAILED, ModalProvider.BACKEND, OP, false,
          Outcome.FAILED).withContext("provider_code", e.code.name().toLowerCase(Locale.ROOT)));
    };
  }

  private static <T> Future<T> answer(Future<T> f) {
    return f.recover(t -> Future.failedFuture(mapped(t)));
  }

  /** A path as Modal takes it: normalized; relative ones are left relative. */
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

  static String child(String dir, String name) {
    return dir.equals(".") ? name : dir.endsWith("/") ? dir + name : dir + "/" + name;
  }

  /** The directory holding {@code path}: {@code "."} for a bare relative name. */
  static String parent(String path) {
    int slash = path.lastIndexOf('/');
    return slash < 0 ? "." : slash == 0 ? "/" : path.substring(0, slash);
  }

  static String name(String path) {
    return path.substring(path.lastIndexOf('/') + 1);
  }

  private record Target(String path, Router router, String sandboxId) {}

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
    return client.router(op.providerResourceId(), OP).map(r -> new Target(path, r, op.providerResourceId()));
  }

  /** One file operation: its exec id and descriptor, then its whole output (or its error, as {@link FsError}). */
  private record Done(String fd, Buffer output) {}

  private Future<Done> exec(Router router, Api.ContainerFilesystemExecRequest.Builder req) {
    return client.call("ContainerFilesystemExec", req.setTaskId(router.taskId()).build(),
        Api.ContainerFilesystemExecResponse.getDefaultInstance(), OP).compose(started -> client.collect(
            "ContainerFilesystemExecGetOutput", Api.ContainerFilesystemExecGetOutputRequest.newBuilder()
                .setExecId(started.getExecId()).setTimeout(OUTPUT_TIMEOUT_SECS).build(),
            Api.FilesystemRuntimeOutputBatch.getDefaultInstance(), b -> b.getEof() || b.hasError(),
            (long) (OUTPUT_TIMEOUT_SECS * 1000) + client.settings().requestTimeout().toMillis(), OP)
        .compose(batches -> {
          Buffer out = Buffer.buffer();
          for (Api.FilesystemRuntimeOutputBatch b : batches) {
            if (b.hasError()) {
              return Future.failedFuture(new FsError(b.getError().getErrorCode()));
            }
            b.getOutputList().forEach(bytes -> out.appendBytes(bytes.toByteArray()));
          }
          return Future.succeededFuture(new Done(started.hasFileDescriptor() ? started.getFileDescriptor() : null,
              out));
        }));
  }

  private Future<String> open(Router router, String path, String mode) {
    return exec(router, Api.ContainerFilesystemExecRequest.newBuilder().setFileOpenRequest(
        Api.ContainerFileOpenRequest.newBuilder().setPath(path).setMode(mode))).compose(d -> d.fd() == null
            ? Future.failedFuture(ModalErrors.of(ErrorCode.COMMAND_FAILED, OP, false, Outcome.FAILED))
            : Future.succeededFuture(d.fd()));
  }

  private Future<Void> close(Router router, String fd) {
    return exec(router, Api.ContainerFilesystemExecRequest.newBuilder().setFileCloseRequest(
        Api.ContainerFileCloseRequest.newBuilder().setFileDescriptor(fd))).mapEmpty();
  }

  private Future<Void> rm(Router router, String path, boolean recursive) {
    return exec(router, Api.ContainerFilesystemExecRequest.newBuilder().setFileRmRequest(
        Api.ContainerFileRmRequest.newBuilder().setPath(path).setRecursive(recursive))).mapEmpty();
  }

  /** {@code ls}: the names in a directory (Modal answers {@code {"paths": [...]}}). */
  private Future<List<String>> ls(Router router, String path) {
    return exec(router, Api.ContainerFilesystemExecRequest.newBuilder().setFileLsRequest(
        Api.ContainerFileLsRequest.newBuilder().setPath(path))).map(d -> {
          JsonArray paths;
          try {
            paths = new JsonObject(d.output().toString(StandardCharsets.UTF_8)).getJsonArray("paths");
          } catch (RuntimeException e) {
            throw ModalErrors.of(ErrorCode.COMMAND_FAILED, OP, false, Outcome.FAILED);
          }
          List<String> names = new ArrayList<>();
          for (Object o : paths == null ? List.of() : paths) {
            String n = o instanceof String s ? name(s.endsWith("/") ? s.substring(0, s.length() - 1) : s) : "";
            if (!n.isEmpty() && !n.equals(".") && !n.equals("..")) {
              names.add(n);
            }
          }
          return names;
        });
  }

  /** The directory's entries; a path naming something else is shown as its own entry. */
  @Override
  public Future<List<FileEntry>> list(FileOp op) {
    return answer(target(op, true).compose(t -> ls(t.router(), t.path())
        .compose(names -> describe(t.sandboxId(), t.path(), names, 0, new ArrayList<>()))
        .recover(e -> {
          if (!(e instanceof FsError f) || f.code != SystemErrorCode.SYSTEM_ERROR_CODE_NOTDIR) {
            return Future.failedFuture(e);
          }
          return describe(t.sandboxId(), parent(t.path()), List.of(name(t.path())), 0, new ArrayList<>())
              .map(one -> one.stream().map(x -> new FileEntry(x.name(), t.path(), x.isDir(), x.size(), x.mode(),
                  x.modified(), x.type())).toList());
        }))).map(entries -> entries.stream().sorted(Comparator.comparing(FileEntry::name)).toList());
  }

  /** {@code stat} of {@code names} in {@code dir}, in batches; a name gone meanwhile is left out. */
  private Future<List<FileEntry>> describe(String sandboxId, String dir, List<String> names, int from,
      List<FileEntry> out) {
    if (from >= names.size()) {
      return Future.succeededFuture(out);
    }
    List<String> batch = names.subList(from, Math.min(names.size(), from + STAT_BATCH));
    List<String> argv = new ArrayList<>(List.of("stat", "-c", "%s/%a/%Y/%F/%n", "--"));
    argv.addAll(batch);
    return ModalCommand.run(client, sandboxId, argv, dir, OP).compose(r -> {
      Set<String> asked = Set.copyOf(batch);
      for (String line : r.stdout().toString(StandardCharsets.UTF_8).split("\n")) {
        FileEntry e = statLine(dir, line);
        if (e != null && asked.contains(e.name())) {
          out.add(e);
        }
      }
      return describe(sandboxId, dir, names, from + STAT_BATCH, out);
    });
  }

  /** One {@code stat -c %s/%a/%Y/%F/%n} line as an entry of {@code dir}; null when it does not parse. */
  static FileEntry statLine(String dir, String line) {
    String[] f = line.split("/", 5);
    if (f.length != 5 || f[4].isEmpty()) {
      return null;
    }
    try {
      String type = switch (f[3]) {
        case "directory" -> FileEntry.DIRECTORY;
        case "regular file", "regular empty file" -> FileEntry.FILE;
        case "symbolic link" -> FileEntry.SYMLINK;
        default -> FileEntry.OTHER;
      };
      boolean dirEntry = type.equals(FileEntry.DIRECTORY);
      return new FileEntry(f[4], child(dir, f[4]), dirEntry, dirEntry ? 0 : Long.parseLong(f[0]),
          Integer.parseInt(f[1].isEmpty() ? "0" : f[1], 8), Instant.ofEpochSecond(Long.parseLong(f[2])), type);
    } catch (RuntimeException e) {
      return null;
    }
  }

  /**
   * Opens the file ({@code rb}) and reads its size ({@code stat}); each pull is then one {@code file_read_request}
   * of at most the asked size.
   */
  @Override
  public Future<FileReader> openRead(FileOp op) {
    return answer(target(op, true).compose(t -> open(t.router(), t.path(), "rb").compose(fd ->
        describe(t.sandboxId(), parent(t.path()), List.of(name(t.path())), 0, new ArrayList<>())
            .<FileReader>map(found -> new Download(t.router(), fd, found.isEmpty() ? -1 : found.get(0).size()))
            .recover(e -> close(t.router(), fd).transform(closed -> Future.failedFuture(e))))));
  }

  private final class Download implements FileReader {
    private final Router router;
    private final String fd;
    private final long size;
    private boolean eof;
    private boolean closed;

    Download(Router router, String fd, long size) {
      this.router = router;
      this.fd = fd;
      this.size = size;
    }

    @Override
    public long size() {
      return size;
    }

    @Override
    public Future<Buffer> read(int max) {
      if (eof || closed) {
        return Future.succeededFuture(null);
      }
      return answer(exec(router, Api.ContainerFilesystemExecRequest.newBuilder().setFileReadRequest(
          Api.ContainerFileReadRequest.newBuilder().setFileDescriptor(fd).setN(Math.max(1, Math.min(max, MAX_READ)))))
          .map(d -> {
            if (d.output().length() == 0) {
              eof = true;
              return null;
            }
            return d.output();
          }));
    }

    @Override
    public Future<Void> close() {
      if (closed) {
        return Future.succeededFuture();
      }
      closed = true;
      return ModalFiles.this.close(router, fd).otherwiseEmpty();
    }
  }

  /**
   * Spools the upload; at commit creates the parent directories ({@code mkdir} with parents), writes the spool
   * to a temporary name beside the target, then sets its mode and renames it into place. A failed commit removes
   * the temporary file.
   */
  @Override
  public Future<FileWriter> openWrite(FileOp op) {
    int mode = op.executable() ? 0755 : 0644;
    String path;
    try {
      path = filePath(op.path());
    } catch (ApiException e) {
      return Future.failedFuture(e);
    }
    if (path.equals("/") || path.equals(".")) {
      return Future.failedFuture(SandboxPaths.isDirectory());
    }
    return SpooledWriter.open(client.vertx().fileSystem(), "modal-upload-", (spool, size) ->
        answer(target(op, false).compose(t -> upload(t, spool, size, mode))));
  }

  private Future<FileEntry> upload(Target t, Path spool, long size, int mode) {
    Router router = t.router();
    String path = t.path();
    String dir = parent(path);
    String temp = "." + name(path) + ".bsk-" + UUID.randomUUID().toString().substring(0, 8) + ".part";
    Future<Void> parents = dir.equals(".") || dir.equals("/") ? Future.succeededFuture()
        : exec(router, Api.ContainerFilesystemExecRequest.newBuilder().setFileMkdirRequest(
            Api.ContainerFileMkdirRequest.newBuilder().setPath(dir).setMakeParents(true))).mapEmpty();
    return parents.compose(v -> open(router, child(dir, temp), "wb")).compose(fd -> client.vertx().fileSystem()
        .open(spool.toString(), new OpenOptions().setRead(true).setWrite(false).setCreate(false))
        .compose(file -> send(router, fd, file, 0, size).eventually(file::close))
        .eventually(() -> close(router, fd))
        .compose(sent -> ModalCommand.run(client, t.sandboxId(), List.of("sh", "-c", PLACE, "bsk",
            String.format("%04o", mode), temp, name(path)), dir, OP))
        .compose(placed -> {
          if (placed.exitCode() == TARGET_IS_DIRECTORY) {
            return Future.failedFuture(SandboxPaths.isDirectory());
          }
          if (placed.exitCode() != 0) {
            return Future.failedFuture(ModalErrors.of(ErrorCode.COMMAND_FAILED, OP, false, Outcome.FAILED));
          }
          return Future.succeededFuture(new FileEntry(name(path), path, false, size, mode, Instant.now()));
        })
        .recover(e -> rm(router, child(dir, temp), false).transform(any -> Future.failedFuture(e))));
  }

  /** The spool from {@code pos} on, one {@code file_write_request} after the other. */
  private Future<Void> send(Router router, String fd, AsyncFile file, long pos, long size) {
    if (pos >= size) {
      return Future.succeededFuture();
    }
    int n = (int) Math.min(WRITE_CHUNK, size - pos);
    return file.read(Buffer.buffer(n), 0, pos, n).compose(chunk -> exec(router, Api.ContainerFilesystemExecRequest
        .newBuilder().setFileWriteRequest(Api.ContainerFileWriteRequest.newBuilder().setFileDescriptor(fd)
            .setData(ByteString.copyFrom(chunk.getBytes()))))
        .compose(v -> chunk.length() == 0 ? Future.failedFuture(new IllegalStateException("spool shorter than its size"))
            : send(router, fd, file, pos + chunk.length(), size)));
  }

  /**
   * {@code rm}; without {@code recursive} the path is listed first: a non-empty directory is 409, an empty one
   * is removed, anything else removed as a file.
   */
  @Override
  public Future<Void> delete(FileOp op) {
    return answer(target(op, false).compose(t -> {
      if (op.recursive()) {
        return rm(t.router(), t.path(), true);
      }
      return ls(t.router(), t.path()).transform(ar -> {
        if (ar.succeeded()) {
          return ar.result().isEmpty() ? rm(t.router(), t.path(), true)
              : Future.failedFuture(SandboxPaths.notEmpty());
        }
        if (ar.cause() instanceof FsError f && f.code == SystemErrorCode.SYSTEM_ERROR_CODE_NOTDIR) {
          return rm(t.router(), t.path(), false);
        }
        return Future.failedFuture(ar.cause());
      });
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
