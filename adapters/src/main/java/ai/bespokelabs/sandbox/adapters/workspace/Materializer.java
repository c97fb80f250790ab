package ai.bespokelabs.sandbox.adapters.workspace;

import ai.bespokelabs.sandbox.adapters.exec.ResultSink;
import ai.bespokelabs.sandbox.adapters.files.ReadableFile;
import ai.bespokelabs.sandbox.adapters.files.TarGz;
import ai.bespokelabs.sandbox.adapters.spi.Backend;
import ai.bespokelabs.sandbox.adapters.spi.FileWriter;
import ai.bespokelabs.sandbox.core.bus.Messages.CreateSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.DestroySandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.FileOp;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import ai.bespokelabs.sandbox.core.model.Workspace;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Map;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Populates a just-created sandbox from its {@link Workspace} through the adapter SPI, so it works on every
 * backend with files: each step in order (a git repository cloned on this node and copied in as an
 * archive, an inline file, an inline tar.gz), then the setup commands. When anything fails the sandbox is
 * destroyed and the create fails with the {@code workspace} error code; {@code context.provider_code} says
 * which step kind failed ({@code git_clone_failed}, {@code git_ref_not_found}, {@code git_destination_refused},
 * {@code file_failed}, {@code archive_failed}, {@code setup_failed} with the command's {@code exit_code}), and
 * {@code cleanup_status} whether the sandbox is gone.
 */
public final class Materializer {
  private static final Logger LOG = LoggerFactory.getLogger(Materializer.class);
  static final int SETUP_TIMEOUT_SECS = 1800;
  private static final int CHUNK = 256 * 1024;

  private final GitCloner git;

  public Materializer(GitCloner git) {
    this.git = git;
  }

  /**
   * Applies the workspace of {@code request} to the sandbox {@code resourceId}, on the adapter's context;
   * destroys the sandbox on failure.
   */
  public Future<Void> apply(Backend backend, CreateSandbox request, String resourceId) {
    Workspace ws = request.workspace();
    if (ws.isEmpty()) {
      return Future.succeededFuture();
    }
    Vertx vertx = Vertx.currentContext().owner();
    Future<Void> chain = Future.succeededFuture();
    for (Workspace.Step step : ws.steps()) {
      chain = chain.compose(v -> switch (step.kind()) {
        case "file" -> copy(backend.files().openWrite(fileOp("open_write", request, resourceId, step.path(),
            step.executable())), inline(step.content()), "file_failed");
        case "archive" -> copyArchive(backend, request, resourceId, step.path(), inline(step.content()),
            "archive_failed");
        case "git" -> cloneInto(vertx, backend, request, resourceId, step);
        default -> Future.failedFuture(failed("unsupported_step", null));
      });
    }
    for (String command : ws.setup()) {
      chain = chain.compose(v -> {
        ResultSink sink = new ResultSink(64 * 1024);
        return backend.executions().start(new ExecSandbox(request.sandboxId(), "setup", resourceId, null, null,
                command, null, Map.of(), null, SETUP_TIMEOUT_SECS, 64 * 1024), sink)
            .compose(execution -> sink.result())
            .compose(r -> r.exitCode() == 0 ? Future.succeededFuture() : Future.failedFuture(
                failed("setup_failed", r.exitCode())));
      });
    }
    return chain.recover(t -> {
      StepFailed cause = t instanceof StepFailed sf ? sf : failed(kindCode(t), null);
      if (!(t instanceof StepFailed)) {
        LOG.debug("workspace of {} failed: {}", request.sandboxId(), t.getClass().getName());
      }
      return destroyed(backend, request, resourceId, cause);
    });
  }

  private static String kindCode(Throwable t) {
    return t instanceof ApiException ? "file_failed" : "workspace_failed";
  }

  private static FileOp fileOp(String op, CreateSandbox request, String resourceId, String path, boolean executable) {
    return new FileOp(op, request.sandboxId(), resourceId, path, null, null, executable, false);
  }

  /** Chunks of inline content, read in order; {@code null} at the end. */
  private static Supplier<Future<Buffer>> inline(byte[] content) {
    byte[] data = content == null ? new byte[0] : content;
    int[] off = {0};
    return () -> {
      if (off[0] >= data.length) {
        return Future.succeededFuture();
      }
      int from = off[0];
      off[0] = Math.min(data.length, from + CHUNK);
      return Future.succeededFuture(Buffer.buffer(Arrays.copyOfRange(data, from, off[0])));
    };
  }

  private static Future<Void> copyArchive(Backend backend, CreateSandbox request, String resourceId, String path,
      Supplier<Future<Buffer>> source, String code) {
    return copy(backend.files().openArchiveWrite(fileOp("open_archive_write", request, resourceId, path, false)),
        source, code);
  }

  /** Writes every chunk of {@code source} and commits; any failure aborts the upload and fails with {@code code}. */
  private static Future<Void> copy(Future<FileWriter> opened, Supplier<Future<Buffer>> source, String code) {
    return opened.recover(t -> Future.failedFuture(copyFailed(code, "opening", t)))
        .compose(w -> pump(w, source).compose(v -> w.commit()).<Void>mapEmpty()
            .recover(t -> w.abort().transform(ignored -> Future.failedFuture(copyFailed(code, "writing", t)))));
  }

  /**
   * The step's failure, its cause logged: the contract's code and context, or the exception's class (no
   * provider text, which may carry anything).
   */
  private static StepFailed copyFailed(String code, String stage, Throwable t) {
    LOG.info("Copying a workspace step into the sandbox failed while {}: {}", stage,
        t instanceof ProviderException p ? p.error().code().wire() + " " + p.error().context()
            : t instanceof ApiException a ? a.status() + " " + a.getMessage() : t.getClass().getName());
    return failed(code, null);
  }

  private static Future<Void> pump(FileWriter w, Supplier<Future<Buffer>> source) {
    return source.get().compose(chunk -> chunk == null ? Future.succeededFuture()
        : w.write(chunk).compose(v -> pump(w, source)));
  }

  /** Clones on a worker thread (git runs as a process) and copies the tree in as an archive. */
  private Future<Void> cloneInto(Vertx vertx, Backend backend, CreateSandbox request, String resourceId,
      Workspace.Step step) {
    return vertx.<Path>executeBlocking(() -> {
      Path tmp = Files.createTempDirectory("git-clone-");
      try {
        git.cloneInto(step.repo(), step.ref(), tmp.resolve("repo"));
        return tmp;
      } catch (GitCloner.CloneFailed e) {
        GitCloner.deleteTree(tmp);
        throw failed(e.code(), null);
      } catch (IOException | RuntimeException | InterruptedException e) {
        GitCloner.deleteTree(tmp);
        throw e;
      }
    }, false).compose(tmp -> {
      ReadableFile tar = TarGz.ofDirectory(tmp.resolve("repo"));
      Supplier<Future<Buffer>> chunks = () -> vertx.executeBlocking(() -> {
        byte[] buf = new byte[CHUNK];
        int n = tar.read(buf);
        return n <= 0 ? null : Buffer.buffer(n == buf.length ? buf : Arrays.copyOf(buf, n));
      }, true);
      return copyArchive(backend, request, resourceId, step.path(), chunks, "git_clone_failed")
          .eventually(() -> vertx.executeBlocking(() -> {
            try {
              tar.close();
            } finally {
              GitCloner.deleteTree(tmp);
            }
            return null;
          }, false));
    });
  }

  private static Future<Void> destroyed(Backend backend, CreateSandbox request, String resourceId,
      StepFailed cause) {
    Future<Void> gone;
    try {
      gone = backend.lifecycle().destroy(new DestroySandbox(request.sandboxId(), resourceId)).mapEmpty();
    } catch (RuntimeException e) {
      gone = Future.failedFuture(e);
    }
    return gone.transform(ar -> {
      ProviderError error = ProviderError.of(ErrorCode.WORKSPACE, request.backend(), "create", false,
              ProviderError.Outcome.FAILED)
          .withContext("provider_code", cause.code).withContext("cleanup_status", ar.succeeded() ? "deleted" : "unknown");
      if (cause.exitCode != null) {
        error = error.withContext("exit_code", cause.exitCode);
      }
      return Future.failedFuture(new ProviderException(error));
    });
  }

  private static StepFailed failed(String code, Integer exitCode) {
    return new StepFailed(code, exitCode);
  }

  /** A step that failed, by kind. */
  private static final class StepFailed extends RuntimeException {
    final String code;
    final Integer exitCode;

    StepFailed(String code, Integer exitCode) {
      super(code, null, false, false);
      this.code = code;
      this.exitCode = exitCode;
    }
  }
}
