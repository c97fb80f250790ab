package ai.bespokelabs.sandbox.adapters.e2b;

import ai.bespokelabs.sandbox.adapters.e2b.E2bClient.Envd;
import ai.bespokelabs.sandbox.adapters.files.SpooledWriter;
import ai.bespokelabs.sandbox.core.model.FileEntry;
import ai.bespokelabs.sandbox.adapters.spi.FileWriter;
import ai.bespokelabs.sandbox.adapters.spi.OutputSink;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.FileOp;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError;
import ai.bespokelabs.sandbox.core.error.ProviderError.Outcome;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.file.OpenOptions;
import io.vertx.core.http.HttpClientRequest;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeoutException;

/**
 * One upload. envd writes in place, so chunks are spooled to a private temporary file on this node first
 * ({@link SpooledWriter}); at commit the spool is streamed to a hidden name beside the target ({@code POST
 * /files} with its Content-Length, read from disk as the connection takes it), made executable when asked (envd
 * has no chmod: a {@code chmod} program runs in the sandbox) and renamed over the target. Until that rename
 * nothing is visible at the path, and a failure removes the hidden file again; the spool is deleted after
 * commit, on abort, and when commit fails.
 */
final class E2bUpload {
  /** The slowest upload rate a commit waits for, on top of the request timeout. */
  static final long MIN_UPLOAD_BYTES_PER_SEC = 1L << 20;
  static final String TEMP_PREFIX = ".bespoke-upload-";

  private final E2bClient client;
  private final Vertx vertx;
  private final E2bFiles files;
  private final E2bExecutions executions;
  private final Envd envd;
  private final FileOp op;

  private E2bUpload(E2bClient client, E2bFiles files, E2bExecutions executions, Envd envd, FileOp op) {
    this.client = client;
    this.vertx = client.vertx();
    this.files = files;
    this.executions = executions;
    this.envd = envd;
    this.op = op;
  }

  /** A new upload to {@code op.path()}, its spool created. */
  static Future<FileWriter> open(E2bClient client, E2bFiles files, E2bExecutions executions, Envd envd, FileOp op) {
    E2bUpload upload = new E2bUpload(client, files, executions, envd, op);
    return SpooledWriter.open(client.vertx().fileSystem(), "e2b-upload-",
        (spool, size) -> upload.place(spool.toString(), size));
  }

  /** Places the spool: beside the target, made executable if asked, then renamed into place. */
  private Future<FileEntry> place(String spool, long size) {
    String path = op.path();
    String hidden = path.substring(0, path.lastIndexOf('/') + 1) + TEMP_PREFIX + UUID.randomUUID();
    String[] placed = {hidden};
    return send(spool, size, hidden)
        .compose(written -> {
          placed[0] = written;
          return op.executable() ? chmod(written) : Future.succeededFuture();
        })
        .compose(executable -> client.unary(envd, E2bFiles.FS + "Move",
            new JsonObject().put("source", placed[0]).put("destination", path), "upload"))
        .map(moved -> {
          JsonObject entry = moved.getJsonObject("entry");
          if (entry == null) {
            throw E2bErrors.of(ErrorCode.COMMAND_FAILED, "upload", false, Outcome.UNKNOWN);
          }
          return E2bFiles.entry(entry);
        })
        .recover(e -> files.removeQuietly(envd, placed[0]).transform(removed -> Future.failedFuture(
            e instanceof ProviderException p && "invalid_argument".equals(E2bFiles.code(p))
                ? ApiException.invalid("path is not a valid path") : e)));
  }

  /**
   * {@code POST /files} of the spool as {@code application/octet-stream} with its length, read from disk
   * as the connection takes it; completes with the path envd wrote (absolute).
   */
  private Future<String> send(String spool, long size, String target) {
    RequestOptions options = client.envdOptions(envd, HttpMethod.POST, "/files?path=" + E2bFiles.query(target))
        .putHeader("Content-Type", "application/octet-stream")
        .putHeader("Content-Length", String.valueOf(size));
    long waitMs = client.settings().requestTimeout().toMillis() + size * 1000 / MIN_UPLOAD_BYTES_PER_SEC;
    Promise<Buffer> answered = Promise.promise();
    HttpClientRequest[] sent = new HttpClientRequest[1];
    long timer = vertx.setTimer(waitMs, id -> {
      if (answered.tryFail(E2bErrors.transport(new TimeoutException("upload stalled"), "upload")) && sent[0] != null) {
        sent[0].reset();
      }
    });
    vertx.fileSystem().open(spool, new OpenOptions().setRead(true).setWrite(false).setCreate(false))
        .compose(in -> client.http().request(options)
            .compose(req -> {
              sent[0] = req;
              return req.send(in);
            })
            .compose(resp -> resp.body().compose(body -> resp.statusCode() == 200 ? Future.succeededFuture(body)
                : Future.failedFuture(refused(resp.statusCode(), resp.getHeader("Retry-After")))))
            .eventually(() -> in.close().otherwiseEmpty()))
        .onComplete(ar -> {
          vertx.cancelTimer(timer);
          if (ar.succeeded()) {
            answered.tryComplete(ar.result());
          } else {
            Throwable t = ar.cause();
            answered.tryFail(t instanceof ApiException || t instanceof ProviderException ? t
                : E2bErrors.transport(t, "upload"));
          }
        });
    return answered.future().map(body -> {
      try {
        JsonArray written = new JsonArray(body);
        if (!written.isEmpty() && written.getValue(0) instanceof JsonObject w && w.getString("path") != null) {
          return w.getString("path");
        }
      } catch (DecodeException | ClassCastException ignored) {
        // the name we asked for is used
      }
      return target;
    });
  }

  private static RuntimeException refused(int status, String retryAfter) {
    return status == 400 ? ApiException.invalid("path is not a valid path")
        : E2bErrors.status(status, "upload", retryAfter, true);
  }

  /** envd has no chmod: {@code chmod 0755} runs in the sandbox, from the file's directory. */
  private Future<Void> chmod(String placed) {
    int slash = placed.lastIndexOf('/');
    String dir = slash < 0 ? null : slash == 0 ? "/" : placed.substring(0, slash);
    Promise<Integer> exited = Promise.promise();
    OutputSink discard = new OutputSink() {
      @Override
      public Future<Void> output(Stream stream, byte[] data) {
        return Future.succeededFuture();
      }

      @Override
      public void exited(int exitCode, boolean timedOut, boolean cancelled, long durationMs) {
        exited.tryComplete(exitCode);
      }
    };
    ExecSandbox chmod = new ExecSandbox(op.sandboxId(), "exe_upload_" + UUID.randomUUID(), op.providerResourceId(),
        null, null, "chmod", List.of("0755", "--", placed.substring(slash + 1)), Map.of(), dir, 30, 4096);
    return executions.start(chmod, discard).compose(started -> exited.future()).compose(code -> code == 0
        ? Future.succeededFuture()
        : Future.failedFuture(new ProviderException(ProviderError.of(ErrorCode.COMMAND_FAILED, E2bProvider.BACKEND,
            "upload", false, Outcome.FAILED).withContext("exit_code", code))));
  }
}
