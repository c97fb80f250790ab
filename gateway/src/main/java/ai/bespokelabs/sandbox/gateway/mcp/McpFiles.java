package ai.bespokelabs.sandbox.gateway.mcp;

import ai.bespokelabs.sandbox.core.bus.Messages.FileOp;
import ai.bespokelabs.sandbox.core.bus.Messages.FileReply;
import ai.bespokelabs.sandbox.core.bus.RuntimeClient;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.model.FileEntry;
import ai.bespokelabs.sandbox.core.model.SandboxRecord;
import ai.bespokelabs.sandbox.core.repo.SandboxRepository;
import ai.bespokelabs.sandbox.gateway.auth.Principal;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * The file tools' work: the same adapter operations as the files routes (list; open, read and close a download;
 * open, write and commit an upload), for contents small enough for a tool answer. A session opened here is
 * closed (or aborted) on every path.
 */
final class McpFiles {
  /** The most a tool reads or writes in one call. */
  static final int MAX_BYTES = 1 << 20;
  private static final int CHUNK = 256 * 1024;
  private final RuntimeClient runtime;
  private final SandboxRepository sandboxes;

  McpFiles(RuntimeClient runtime, SandboxRepository sandboxes) {
    this.runtime = runtime;
    this.sandboxes = sandboxes;
  }

  Future<JsonObject> list(Principal p, String sandboxId, String path) {
    return running(p, sandboxId).compose(sbx -> call(sbx, op("list", sbx, path, null, null)))
        .map(r -> new JsonObject().put("path", path)
            .put("entries", new JsonArray(r.entries().stream().map(FileEntry::toJson).toList())));
  }

  /** The file's bytes; a file over {@link #MAX_BYTES} is refused (the content route streams any size). */
  Future<byte[]> read(Principal p, String sandboxId, String path) {
    return running(p, sandboxId).compose(sbx -> call(sbx, op("open_read", sbx, path, null, null)).compose(opened -> {
      if (opened.size() > MAX_BYTES) {
        return close(sbx, opened.session()).compose(v -> Future.failedFuture(new ApiException(413,
            "file is larger than " + MAX_BYTES + " bytes: download it from the files/content route")));
      }
      Buffer into = Buffer.buffer();
      return readAll(sbx, opened.session(), into).transform(ar -> close(sbx, opened.session())
          .transform(v -> ar.succeeded() ? Future.succeededFuture(into.getBytes()) : Future.failedFuture(ar.cause())));
    }));
  }

  private Future<Void> readAll(SandboxRecord sbx, String session, Buffer into) {
    return call(sbx, op("read", sbx, null, session, null)).compose(chunk -> {
      if (chunk.eof()) {
        return Future.succeededFuture();
      }
      into.appendBytes(chunk.data());
      if (into.length() > MAX_BYTES) {
        return Future.failedFuture(new ApiException(413, "file is larger than " + MAX_BYTES
            + " bytes: download it from the files/content route"));
      }
      return readAll(sbx, session, into);
    });
  }

  private Future<Void> close(SandboxRecord sbx, String session) {
    return call(sbx, op("close", sbx, null, session, null)).<Void>mapEmpty().otherwiseEmpty();
  }

  /** Writes {@code content} to {@code path} (replacing it) and answers the entry written. */
  Future<JsonObject> write(Principal p, String sandboxId, String path, String content) {
    byte[] bytes = content.getBytes(StandardCharsets.UTF_8);
    if (bytes.length > MAX_BYTES) {
      return Future.failedFuture(new ApiException(413, "content is larger than " + MAX_BYTES
          + " bytes: upload it to the files/content route"));
    }
    return running(p, sandboxId).compose(sbx -> call(sbx, new FileOp("open_write", sbx.id(),
        sbx.providerResourceId(), path, null, null, false, false)).compose(opened -> writeFrom(sbx, opened.session(),
            bytes, 0).compose(v -> call(sbx, op("commit", sbx, null, opened.session(), null)))
        .recover(t -> call(sbx, op("abort", sbx, null, opened.session(), null)).transform(ignored ->
            Future.<FileReply>failedFuture(t)))))
        .map(done -> done.entry() == null ? new JsonObject().put("path", path) : done.entry().toJson());
  }

  private Future<Void> writeFrom(SandboxRecord sbx, String session, byte[] bytes, int from) {
    if (from >= bytes.length) {
      return Future.succeededFuture();
    }
    int to = Math.min(bytes.length, from + CHUNK);
    return call(sbx, op("write", sbx, null, session, Arrays.copyOfRange(bytes, from, to)))
        .compose(v -> writeFrom(sbx, session, bytes, to));
  }

  private Future<SandboxRecord> running(Principal p, String sandboxId) {
    return sandboxes.find(p.organizationId(), sandboxId).map(o -> {
      SandboxRecord sbx = o.orElseThrow(() -> ApiException.notFound("sandbox not found"));
      if (!"running".equals(sbx.status())) {
        throw ApiException.conflict("sandbox is " + sbx.status());
      }
      return sbx;
    });
  }

  private Future<FileReply> call(SandboxRecord sbx, FileOp op) {
    return runtime.files(sbx.backend(), sbx.nodeId(), sbx.organizationId(), op);
  }

  private static FileOp op(String name, SandboxRecord sbx, String path, String session, byte[] data) {
    return new FileOp(name, sbx.id(), sbx.providerResourceId(), path, session, data, false, false);
  }

  /** A path argument as the files routes take it. */
  static String path(Object value) {
    return ai.bespokelabs.sandbox.gateway.http.FilesApi.checkedPath(value instanceof String s ? s : null);
  }
}
