package ai.bespokelabs.sandbox.gateway.http;

import ai.bespokelabs.sandbox.core.model.FileEntry;
import ai.bespokelabs.sandbox.core.bus.RuntimeClient;
import ai.bespokelabs.sandbox.core.bus.Messages.FileOp;
import ai.bespokelabs.sandbox.core.bus.Messages.FileReply;
import ai.bespokelabs.sandbox.core.config.GatewayConfig;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.model.SandboxRecord;
import ai.bespokelabs.sandbox.core.repo.SandboxRepository;
import ai.bespokelabs.sandbox.gateway.auth.Principal;
import ai.bespokelabs.sandbox.gateway.auth.Scopes;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;

/**
 * Files inside a sandbox, on every backend that implements the adapter's file methods: list, download,
 * upload and delete. Transfers stream in chunks over the event bus with one chunk in flight: a download
 * asks the adapter for the next chunk only when the client's connection has room, an upload reads the
 * next chunk from the client only when the adapter has written the previous one. An upload over
 * {@code BESPOKE_MAX_UPLOAD_BYTES} or cut short is discarded and leaves nothing behind.
 */
public final class FilesApi implements Endpoints {
  static final String CONTENT = "/v1/sandboxes/{sandbox_id}/files/content";
  /** Set once an upload's endpoint has taken its body (it answers and closes on its own from then on). */
  static final String BODY_TAKEN = "files.bodyTaken";
  static final String ARCHIVE = "/v1/sandboxes/{sandbox_id}/files/archive";
  private static final int UPLOAD_CHUNK = 256 * 1024;
  private static final long LINGER_MS = 2_000;

  private final Vertx vertx;
  private final RuntimeClient runtime;
  private final GatewayConfig config;
  private final SandboxRepository sandboxes;

  public FilesApi(Vertx vertx, RuntimeClient runtime, GatewayConfig config, SandboxRepository sandboxes) {
    this.vertx = vertx;
    this.runtime = runtime;
    this.config = config;
    this.sandboxes = sandboxes;
  }

  /** True for the request whose body this API streams itself (the body handler must leave it alone). */
  static boolean streamsBody(HttpServerRequest req) {
    return req.method() == HttpMethod.PUT && (req.path().endsWith("/files/content")
        || req.path().endsWith("/files/archive"));
  }

  public void register(Api api) {
    api.authed(HttpMethod.GET, "/v1/sandboxes/{sandbox_id}/files", Scopes.SANDBOXES_READ, this::list);
    api.authed(HttpMethod.DELETE, "/v1/sandboxes/{sandbox_id}/files", Scopes.SANDBOXES_EXECUTE, this::delete);
    api.authed(HttpMethod.GET, CONTENT, Scopes.SANDBOXES_READ, (ctx, p) -> download(ctx, p, false));
    api.authed(HttpMethod.PUT, CONTENT, Scopes.SANDBOXES_EXECUTE, (ctx, p) -> upload(ctx, p, false));
    api.authed(HttpMethod.GET, ARCHIVE, Scopes.SANDBOXES_READ, (ctx, p) -> download(ctx, p, true));
    api.authed(HttpMethod.PUT, ARCHIVE, Scopes.SANDBOXES_EXECUTE, (ctx, p) -> upload(ctx, p, true));
  }

  private Future<SandboxRecord> running(RoutingContext ctx, Principal p) {
    String id = Api.idParam(ctx, "sandbox_id", "sbx", "sandbox not found");
    return sandboxes.find(p.organizationId(), id).map(o -> {
      SandboxRecord sbx = o.orElseThrow(() -> ApiException.notFound("sandbox not found"));
      if (!"running".equals(sbx.status())) {
        throw ApiException.conflict("sandbox is " + sbx.status());
      }
      return sbx;
    });
  }

  private static String path(RoutingContext ctx) {
    return checkedPath(ctx.queryParams().get("path"));
  }

  /** A sandbox path as the files routes take it (the adapter resolves it and refuses escapes). */
  public static String checkedPath(String path) {
    if (path == null || path.isEmpty()) {
      throw ApiException.invalid("path is required");
    }
    if (path.length() > 4096 || path.indexOf('\0') >= 0) {
      throw ApiException.invalid("path is not a valid path");
    }
    return path;
  }

  private static boolean flag(RoutingContext ctx, String name) {
    String v = ctx.queryParams().get(name);
    if (v == null || v.equals("false") || v.equals("0")) {
      return false;
    }
    if (v.equals("true") || v.equals("1") || v.isEmpty()) {
      return true;
    }
    throw ApiException.invalid(name + " must be true or false");
  }

  private Future<FileReply> call(SandboxRecord sbx, FileOp op) {
    return runtime.files(sbx.backend(), sbx.nodeId(), sbx.organizationId(), op);
  }

  private static FileOp op(String name, SandboxRecord sbx, String path, String session, byte[] data) {
    return new FileOp(name, sbx.id(), sbx.providerResourceId(), path, session, data, false, false);
  }

  // ---- list and delete -------------------------------------------------------------------------------

  private Future<Reply> list(RoutingContext ctx, Principal p) {
    String path = path(ctx);
    return running(ctx, p).compose(sbx -> call(sbx, op("list", sbx, path, null, null)))
        .map(r -> Reply.ok(new JsonObject().put("path", path).put("entries",
            new JsonArray(r.entries().stream().map(FileEntry::toJson).toList()))));
  }

  private Future<Reply> delete(RoutingContext ctx, Principal p) {
    String path = path(ctx);
    boolean recursive = flag(ctx, "recursive");
    return running(ctx, p)
        .compose(sbx -> call(sbx, new FileOp("delete", sbx.id(), sbx.providerResourceId(), path, null, null, false,
            recursive)))
        .map(r -> Reply.of(204, null));
  }

  // ---- download --------------------------------------------------------------------------------------

  private Future<Reply> download(RoutingContext ctx, Principal p, boolean archive) {
    String path = path(ctx);
    return running(ctx, p).compose(sbx -> call(sbx, op(archive ? "open_archive_read" : "open_read", sbx, path, null,
        null)).map(opened -> {
      String session = opened.session();
      HttpServerResponse res = ctx.response();
      long size = opened.size();
      res.setStatusCode(200).putHeader("Content-Type", archive ? "application/gzip" : "application/octet-stream");
      if (size >= 0) {
        res.putHeader("Content-Length", String.valueOf(size));
      } else {
        res.setChunked(true);
      }
      res.closeHandler(v -> call(sbx, op("close", sbx, null, session, null)));
      pump(sbx, session, res);
      return Reply.HANDLED;
    }));
  }

  /** Sends chunk after chunk while the connection takes them; closes the session however it ends. */
  private void pump(SandboxRecord sbx, String session, HttpServerResponse res) {
    if (res.closed()) {
      call(sbx, op("close", sbx, null, session, null));
      return;
    }
    call(sbx, op("read", sbx, null, session, null)).onComplete(ar -> {
      if (ar.failed()) {
        // headers are out: the only honest signal left is a cut connection
        call(sbx, op("close", sbx, null, session, null));
        res.reset();
        return;
      }
      FileReply chunk = ar.result();
      if (chunk.eof()) {
        res.end();
        return;
      }
      res.write(Buffer.buffer(chunk.data()));
      if (res.writeQueueFull()) {
        res.drainHandler(v -> pump(sbx, session, res));
      } else {
        pump(sbx, session, res);
      }
    });
  }

  // ---- upload ----------------------------------------------------------------------------------------

  /**
   * A refused or failed upload answers and then closes the connection: the rest of the body is never read,
   * so the connection cannot carry another request.
   */
  private Future<Reply> upload(RoutingContext ctx, Principal p, boolean archive) {
    ctx.put(BODY_TAKEN, true);
    Future<Reply> f;
    try {
      f = receive(ctx, p, archive);
    } catch (RuntimeException e) {
      f = Future.failedFuture(e);
    }
    return f.onFailure(t -> {
      HttpServerResponse res = ctx.response();
      if (!res.headWritten()) {
        res.putHeader("Connection", "close");
        res.endHandler(v -> lingeringClose(ctx.request()));
      }
    });
  }

  /**
   * Closes the connection of a refused upload once the client had a moment to read the answer: the rest of
   * the body is read and dropped for up to {@link #LINGER_MS} (a client still sending would otherwise see the
   * connection reset before the answer).
   */
  private void lingeringClose(HttpServerRequest req) {
    io.vertx.core.http.HttpConnection conn = req.connection();
    long timer = vertx.setTimer(LINGER_MS, t -> conn.close());
    req.handler(b -> { });
    req.exceptionHandler(t -> { });
    req.endHandler(v -> {
      vertx.cancelTimer(timer);
      conn.close();
    });
    req.resume();
  }

  private Future<Reply> receive(RoutingContext ctx, Principal p, boolean archive) {
    HttpServerRequest req = ctx.request();
    String path = path(ctx);
    boolean executable = flag(ctx, "executable");
    long limit = config.http().maxUploadBytes();
    String declared = req.getHeader("Content-Length");
    if (declared != null) {
      try {
        if (Long.parseLong(declared.trim()) > limit) {
          throw new ApiException(413, "file exceeds the upload limit of " + limit + " bytes");
        }
      } catch (NumberFormatException e) {
        throw ApiException.invalid("Content-Length is not a number");
      }
    }
    return running(ctx, p).compose(sbx -> call(sbx, new FileOp(archive ? "open_archive_write" : "open_write", sbx.id(),
        sbx.providerResourceId(), path, null, null, executable, false)).compose(opened -> {
          Promise<Reply> done = Promise.promise();
          new Upload(sbx, opened.session(), ctx, limit, done).start();
          return done.future();
        }));
  }

  /** Moves one upload from the request to the adapter, a chunk at a time. */
  private final class Upload {
    private final SandboxRecord sbx;
    private final String session;
    private final HttpServerRequest req;
    private final long limit;
    private final Promise<Reply> done;
    /** Runs while the upload waits on the client, never while it waits on the sandbox. */
    private final BodyDeadline deadline;
    private Buffer pending = Buffer.buffer();
    private long received;
    private boolean writing;
    private boolean ended;
    private boolean finished;
    private Throwable failure;

    Upload(SandboxRecord sbx, String session, RoutingContext ctx, long limit, Promise<Reply> done) {
      this.sbx = sbx;
      this.session = session;
      this.req = ctx.request();
      this.deadline = new BodyDeadline(vertx, ctx, config.http().idleTimeoutSecs() * 1000L, this::fail);
      this.limit = limit;
      this.done = done;
    }

    void start() {
      if ("100-continue".equalsIgnoreCase(req.getHeader("Expect"))) {
        req.response().writeContinue();
      }
      req.handler(this::data);
      req.endHandler(v -> {
        ended = true;
        deadline.stop();
        flush();
      });
      req.exceptionHandler(t -> fail(ApiException.invalid("the upload was interrupted")));
      req.response().closeHandler(v -> fail(ApiException.invalid("the upload was interrupted")));
      done.future().onComplete(ar -> deadline.stop());
      deadline.waiting();
      req.resume();
    }

    private void data(Buffer b) {
      if (finished) {
        return;
      }
      deadline.waiting();
      received += b.length();
      if (received > limit) {
        fail(new ApiException(413, "file exceeds the upload limit of " + limit + " bytes"));
        return;
      }
      pending.appendBuffer(b);
      if (pending.length() >= UPLOAD_CHUNK) {
        req.pause();
        deadline.stop();
        flush();
      }
    }

    private void flush() {
      if (writing || finished) {
        return;
      }
      if (pending.length() > 0) {
        byte[] chunk = pending.getBytes();
        pending = Buffer.buffer();
        writing = true;
        call(sbx, op("write", sbx, null, session, chunk)).onComplete(ar -> {
          writing = false;
          if (failure != null) {
            abort(failure);
            return;
          }
          if (ar.failed()) {
            fail(ar.cause());
            return;
          }
          if (ended) {
            flush();
          } else {
            deadline.waiting();
            req.resume();
          }
        });
        return;
      }
      if (ended) {
        finished = true;
        call(sbx, op("commit", sbx, null, session, null))
            .onSuccess(r -> done.tryComplete(Reply.of(201, r.entry().toJson())))
            .onFailure(done::tryFail);
      }
    }

    /** Discards the upload, then answers: once the client hears of the failure, nothing is left. */
    private void fail(Throwable t) {
      if (finished) {
        return;
      }
      finished = true;
      req.pause();
      if (writing) {
        failure = t;
      } else {
        abort(t);
      }
    }

    private void abort(Throwable t) {
      call(sbx, op("abort", sbx, null, session, null)).onComplete(ar -> done.tryFail(t));
    }
  }
}
