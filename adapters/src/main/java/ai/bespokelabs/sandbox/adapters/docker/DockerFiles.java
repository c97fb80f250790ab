package ai.bespokelabs.sandbox.adapters.docker;

import ai.bespokelabs.sandbox.adapters.files.SandboxPaths;
import ai.bespokelabs.sandbox.adapters.files.SpooledWriter;
import ai.bespokelabs.sandbox.adapters.files.TarGz;
import ai.bespokelabs.sandbox.core.model.FileEntry;
import ai.bespokelabs.sandbox.adapters.spi.FileReader;
import ai.bespokelabs.sandbox.adapters.spi.FileSystem;
import ai.bespokelabs.sandbox.adapters.spi.FileWriter;
import ai.bespokelabs.sandbox.adapters.spi.OutputSink;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.FileOp;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.file.OpenOptions;
import io.vertx.core.streams.WriteStream;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;

/**
 * Files of a container sandbox. Downloads stream out of the engine's archive API (a tar of one entry, read
 * as the reader pulls it); uploads are spooled on this node and put into the container with the archive API
 * at commit (a one-entry tar for a file), so nothing appears in the container before the whole file arrived.
 * Listing and deleting run a small {@code sh} script in the container (images need {@code sh} and
 * {@code stat}). Relative paths are under the sandbox's working directory.
 */
final class DockerFiles implements FileSystem {
  private static final Duration CALL = Duration.ofMinutes(10);
  private static final int MAX_LINKS = 8;
  private static final int SCRIPT_OUTPUT = 8 << 20;
  private static final String LIST = """
      p="$1"
      [ -e "$p" ] || [ -L "$p" ] || exit 44
      if [ -d "$p" ] && [ ! -L "$p" ]; then
        cd -- "$p" || exit 45
        for f in .[!.]* ..?* *; do
          [ -e "$f" ] || [ -L "$f" ] || continue
          stat -c '%F|%s|%a|%Y|%n' -- "$f"
        done
      else
        stat -c '%F|%s|%a|%Y|%n' -- "$p"
      fi
      """;
  private static final String DELETE = """
      p="$1"
      [ -e "$p" ] || [ -L "$p" ] || exit 44
      if [ -d "$p" ] && [ ! -L "$p" ]; then
        if [ "$2" = recursive ]; then rm -rf -- "$p"; else rmdir -- "$p" 2>/dev/null || exit 46; fi
      else
        rm -f -- "$p"
      fi
      """;
  private static final String PREPARE = """
      [ -d "$1" ] && exit 45
      mkdir -p -- "$(dirname -- "$1")"
      """;
  private static final String MAKE_DIR = "[ -e \"$1\" ] && [ ! -d \"$1\" ] && exit 45; mkdir -p -- \"$1\"";

  private final DockerEngine engine;
  private final DockerExecutions executions;

  DockerFiles(DockerEngine engine, DockerExecutions executions) {
    this.engine = engine;
    this.executions = executions;
  }

  /** A container path: relative ones are under the working directory. */
  static String resolve(String path) {
    if (path == null || path.isBlank()) {
      throw SandboxPaths.required();
    }
    String p = path.startsWith("/") ? path : DockerProvider.WORKDIR + "/" + path;
    try {
      return Path.of(p).normalize().toString();
    } catch (java.nio.file.InvalidPathException e) {
      throw ApiException.invalid("path is not a valid path");
    }
  }

  /** Resolves the operation's path and continues with it; a path that does not resolve fails the future. */
  private static <T> Future<T> at(FileOp op, Function<String, Future<T>> then) {
    String p;
    try {
      p = resolve(op.path());
    } catch (ApiException e) {
      return Future.failedFuture(e);
    }
    return then.apply(p);
  }

  /** A script's end: its exit code and stdout. */
  private record Script(int exitCode, String stdout) {}

  /** Runs {@code script} with {@code sh} in the container; exit code 44 is not found. */
  private Future<Script> script(FileOp op, String script, String... args) {
    List<String> argv = new ArrayList<>(List.of("-c", script, "sh"));
    argv.addAll(List.of(args));
    Promise<Script> done = Promise.promise();
    ByteArrayOutputStream stdout = new ByteArrayOutputStream();
    OutputSink sink = new OutputSink() {
      @Override
      public synchronized Future<Void> output(Stream stream, byte[] data) {
        if (stream == Stream.STDOUT) {
          stdout.write(data, 0, Math.max(0, Math.min(SCRIPT_OUTPUT - stdout.size(), data.length)));
        }
        return Future.succeededFuture();
      }

      @Override
      public synchronized void exited(int exitCode, boolean timedOut, boolean cancelled, long durationMs) {
        done.complete(new Script(exitCode, stdout.toString(StandardCharsets.UTF_8)));
      }
    };
    return executions.start(new ExecSandbox(op.sandboxId(), "files", op.providerResourceId(), null, null, "sh", argv,
        Map.of(), "/", 120, SCRIPT_OUTPUT), sink).compose(started -> done.future()).compose(r -> r.exitCode() == 44
            ? Future.failedFuture(SandboxPaths.notFound()) : Future.succeededFuture(r));
  }

  private <T> Future<T> commandFailed() {
    return Future.failedFuture(engine.failure(ErrorCode.COMMAND_FAILED, "files", false, ProviderError.Outcome.FAILED,
        null));
  }

  @Override
  public Future<List<FileEntry>> list(FileOp op) {
    return at(op, p -> script(op, LIST, p).compose(r -> {
      if (r.exitCode() != 0) {
        return commandFailed();
      }
      List<FileEntry> out = new ArrayList<>();
      for (String line : r.stdout().split("\n")) {
        String[] f = line.split("\\|", 5);
        if (f.length < 5) {
          continue;
        }
        String name = f[4].contains("/") ? f[4].substring(f[4].lastIndexOf('/') + 1) : f[4];
        String shown = f[4].startsWith("/") ? f[4] : (p.equals("/") ? "" : p) + "/" + f[4];
        boolean dir = f[0].equals("directory");
        out.add(new FileEntry(name, shown, dir, dir ? 0 : Long.parseLong(f[1]), Integer.parseInt(f[2], 8),
            Instant.ofEpochSecond(Long.parseLong(f[3]))));
      }
      out.sort(Comparator.comparing(FileEntry::name));
      return Future.succeededFuture(out);
    }));
  }

  @Override
  public Future<Void> delete(FileOp op) {
    return at(op, p -> {
      if (p.equals("/") || p.equals(DockerProvider.WORKDIR)) {
        return Future.failedFuture(ApiException.invalid("path must name something inside the sandbox"));
      }
      return script(op, DELETE, p, op.recursive() ? "recursive" : "").compose(r -> {
        if (r.exitCode() == 46) {
          return Future.failedFuture(SandboxPaths.notEmpty());
        }
        return r.exitCode() != 0 ? commandFailed() : Future.succeededFuture();
      });
    });
  }

  /** The engine's tar archive of {@code p}, streamed; 404 is not found. The caller closes it. */
  private Future<TarReader> archive(String container, String p) {
    return engine.stream("files", "/containers/" + DockerEngine.q(container) + "/archive?path=" + DockerEngine.q(p),
        CALL).compose(s -> {
          if (s.status() == 404) {
            return Future.failedFuture(SandboxPaths.notFound());
          }
          if (s.body() == null) {
            return Future.failedFuture(engine.statusFailure("files", new DockerEngine.Response(s.status(), s.error()),
                ErrorCode.COMMAND_FAILED));
          }
          return Future.succeededFuture(new TarReader(s.body()));
        });
  }

  /** The archive's first entry (null when empty); a broken archive closes the transfer and fails. */
  private static Future<TarArchiveEntry> first(TarReader tar) {
    return tar.nextEntry().onFailure(t -> tar.close());
  }

  /** Opens the file's entry in the engine's archive of it, following symbolic links. */
  @Override
  public Future<FileReader> openRead(FileOp op) {
    return at(op, p -> engine.onContext(() -> openRead(op.providerResourceId(), p, 0)));
  }

  private Future<FileReader> openRead(String container, String p, int hop) {
    if (hop > MAX_LINKS) {
      return Future.failedFuture(ApiException.invalid("too many levels of symbolic links"));
    }
    return archive(container, p).compose(tar -> first(tar).compose(entry -> {
      if (entry == null) {
        tar.close();
        return Future.failedFuture(SandboxPaths.notFound());
      }
      if (entry.isSymbolicLink()) {
        String target = entry.getLinkName();
        tar.close();
        String next = Path.of(target.startsWith("/") ? target : Path.of(p).resolveSibling(target).toString())
            .normalize().toString();
        return openRead(container, next, hop + 1);
      }
      if (entry.isDirectory()) {
        tar.close();
        return Future.failedFuture(SandboxPaths.isDirectory());
      }
      long size = entry.getSize();
      return Future.succeededFuture(new FileReader() {
        @Override
        public long size() {
          return size;
        }

        @Override
        public Future<Buffer> read(int max) {
          return engine.onContext(() -> tar.read(max));
        }

        @Override
        public Future<Void> close() {
          return engine.onContext(() -> {
            tar.close();
            return Future.succeededFuture();
          });
        }
      });
    }));
  }

  /**
   * The directory at {@code path} as a tar.gz of its tree: the engine's archive of it, re-packed as it
   * streams with the directory's own name removed from each entry.
   */
  @Override
  public Future<FileReader> openArchiveRead(FileOp op) {
    return at(op, p -> engine.onContext(() -> archive(op.providerResourceId(), p).compose(tar -> first(tar)
        .compose(entry -> {
          if (entry == null || !entry.isDirectory()) {
            tar.close();
            return Future.failedFuture(ApiException.invalid("path is not a directory"));
          }
          String prefix = entry.getName().endsWith("/") ? entry.getName() : entry.getName() + "/";
          return Future.succeededFuture(new RepackedArchive(engine, tar, prefix));
        }))));
  }

  /**
   * Receives a tar.gz and, once whole and checked, puts it into the directory at {@code path} (created when
   * missing) with the engine's archive API, which extracts compressed archives itself.
   */
  @Override
  public Future<FileWriter> openArchiveWrite(FileOp op) {
    return at(op, p -> SpooledWriter.open(engine.vertx().fileSystem(), "upload-", (spool, size) ->
        // the check reads the whole spool: a worker's job, not the event loop's
        engine.vertx().executeBlocking(() -> TarGz.check(spool), false)
            .compose(entries -> script(op, MAKE_DIR, p))
            .compose(made -> {
              if (made.exitCode() == 45) {
                return Future.failedFuture(ApiException.invalid("path is not a directory"));
              }
              if (made.exitCode() != 0) {
                return commandFailed();
              }
              return put(op.providerResourceId(), p, size, req -> sendTo(spool, req).compose(v -> req.end()));
            })
            .map(v -> new FileEntry(Path.of(p).getFileName() == null ? "" : Path.of(p).getFileName().toString(), p,
                true, 0, 0755, Instant.now()))));
  }

  /**
   * Spools the upload on this node and, at commit, puts it into the container as a one-entry tar: its
   * 512-byte header (written once the size is known), the spooled file, the padding and the end blocks.
   */
  @Override
  public Future<FileWriter> openWrite(FileOp op) {
    return at(op, p -> {
      if (p.equals("/")) {
        return Future.failedFuture(SandboxPaths.isDirectory());
      }
      boolean executable = op.executable();
      return SpooledWriter.open(engine.vertx().fileSystem(), "docker-upload-", (spool, size) -> {
        String name = Path.of(p).getFileName().toString();
        TarArchiveEntry entry = new TarArchiveEntry(name);
        entry.setSize(size);
        entry.setMode(executable ? 0100755 : 0100644);
        Instant now = Instant.now();
        entry.setModTime(now.toEpochMilli());
        byte[] header = new byte[512];
        entry.writeEntryHeader(header);
        int padding = (int) ((512 - size % 512) % 512);
        return script(op, PREPARE, p).compose(prepared -> {
          if (prepared.exitCode() == 45) {
            return Future.failedFuture(SandboxPaths.isDirectory());
          }
          if (prepared.exitCode() != 0) {
            return commandFailed();
          }
          String parent = Path.of(p).getParent().toString();
          return put(op.providerResourceId(), parent, 512 + size + padding + 1024, req -> req.write(Buffer.buffer(header))
              .compose(v -> sendTo(spool, req)).compose(v -> req.end(Buffer.buffer(new byte[padding + 1024]))));
        }).map(v -> new FileEntry(name, p, false, size, executable ? 0755 : 0644, now));
      });
    });
  }

  /** Puts a tar stream of {@code length} bytes, written by {@code body}, into the container's {@code dir}. */
  private Future<Void> put(String container, String dir, long length,
      Function<io.vertx.core.http.HttpClientRequest, Future<Void>> body) {
    return engine.put("files", "/containers/" + DockerEngine.q(container) + "/archive?path=" + DockerEngine.q(dir),
        "application/x-tar", length, CALL, body).compose(r -> r.ok() ? Future.<Void>succeededFuture()
            : Future.failedFuture(engine.statusFailure("files", r, ErrorCode.COMMAND_FAILED)));
  }

  /** Streams the spooled bytes into {@code out} (which is not ended), at the pace it takes them. */
  private Future<Void> sendTo(Path spool, WriteStream<Buffer> out) {
    return engine.vertx().fileSystem().open(spool.toString(), new OpenOptions().setRead(true).setWrite(false))
        .compose(in -> in.pipe().endOnSuccess(false).to(out).eventually(() -> in.close().otherwiseEmpty()));
  }
}
