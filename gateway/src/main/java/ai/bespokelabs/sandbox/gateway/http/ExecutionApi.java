package ai.bespokelabs.sandbox.gateway.http;

import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.model.ExecutionRecord;
import ai.bespokelabs.sandbox.gateway.auth.Principal;
import ai.bespokelabs.sandbox.gateway.auth.Scopes;
import ai.bespokelabs.sandbox.gateway.exec.ExecRequest;
import ai.bespokelabs.sandbox.gateway.exec.ExecutionService;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;

/**
 * Executions over REST: the seed's blocking {@code execute}, started executions, their state, stdin and
 * signals. Their output streams over Server-Sent Events ({@link ExecutionStreams}) or WebSocket
 * ({@link ExecutionSockets}); the {@link ExecutionService} does the work behind every route.
 */
public final class ExecutionApi implements Endpoints {
  private final ExecutionService executions;
  private final ExecutionStreams streams;
  private final ExecutionSockets sockets;

  public ExecutionApi(Vertx vertx, ExecutionService executions) {
    this.executions = executions;
    this.streams = new ExecutionStreams(vertx, executions);
    this.sockets = new ExecutionSockets(vertx, executions);
  }

  @Override
  public void register(Api api) {
    String exec = "/v1/sandboxes/{sandbox_id}/executions/{execution_id}";
    api.authed(HttpMethod.POST, "/v1/sandboxes/{sandbox_id}/execute", Scopes.SANDBOXES_EXECUTE, this::execute);
    api.authed(HttpMethod.POST, "/v1/sandboxes/{sandbox_id}/executions", Scopes.SANDBOXES_EXECUTE, this::start);
    api.authed(HttpMethod.GET, "/v1/sandboxes/{sandbox_id}/executions/ws", Scopes.SANDBOXES_EXECUTE, sockets::start);
    api.authed(HttpMethod.GET, exec, Scopes.SANDBOXES_READ, this::get);
    api.authed(HttpMethod.GET, exec + "/stream", Scopes.SANDBOXES_READ, streams::attach);
    api.authed(HttpMethod.GET, exec + "/ws", Scopes.SANDBOXES_READ, sockets::attach);
    api.authed(HttpMethod.POST, exec + "/stdin", Scopes.SANDBOXES_EXECUTE, this::stdin);
    api.authed(HttpMethod.POST, exec + "/signal", Scopes.SANDBOXES_EXECUTE, this::signal);
    streams.startHeartbeats();
  }

  /** {@code execute}: blocking, or streamed over Server-Sent Events when the client accepts them. */
  private Future<Reply> execute(RoutingContext ctx, Principal p) {
    String sandboxId = Api.idParam(ctx, "sandbox_id", "sbx", "sandbox not found");
    ExecRequest req = ExecRequests.parse(Body.parse(Api.body(ctx)));
    String requestId = SandboxApi.idempotencyKey(ctx);
    String accept = ctx.request().getHeader("Accept");
    if (accept != null && accept.contains("text/event-stream")) {
      return streams.execute(ctx, p, sandboxId, req, requestId);
    }
    return executions.execute(p, sandboxId, req, requestId).map(Reply::ok);
  }

  private Future<Reply> start(RoutingContext ctx, Principal p) {
    String sandboxId = Api.idParam(ctx, "sandbox_id", "sbx", "sandbox not found");
    ExecRequest req = ExecRequests.parse(Body.parse(Api.body(ctx)));
    String requestId = SandboxApi.idempotencyKey(ctx);
    return executions.start(p, sandboxId, req, requestId).map(e -> Reply.of(202, executionJson(e)));
  }

  private Future<Reply> get(RoutingContext ctx, Principal p) {
    return find(ctx, p).map(e -> Reply.ok(executionJson(e)));
  }

  private Future<ExecutionRecord> find(RoutingContext ctx, Principal p) {
    return executions.find(p, sandboxId(ctx), executionId(ctx));
  }

  static String sandboxId(RoutingContext ctx) {
    return Api.idParam(ctx, "sandbox_id", "sbx", "execution not found");
  }

  static String executionId(RoutingContext ctx) {
    return Api.idParam(ctx, "execution_id", "exe", "execution not found");
  }

  /** The execution resource: status and, once finished, the stored result. */
  static JsonObject executionJson(ExecutionRecord e) {
    JsonObject j = new JsonObject()
        .put("id", e.id())
        .put("sandbox_id", e.sandboxId())
        .put("request_id", e.requestId())
        .put("status", e.status())
        .put("stdin", e.stdinOpen())
        .put("created_at", Wire.ts(e.createdAt()))
        .put("completed_at", Wire.ts(e.completedAt()));
    if (e.response() instanceof JsonObject response) {
      response.forEach(f -> {
        if (!j.containsKey(f.getKey()) && !"execution_id".equals(f.getKey())) {
          j.put(f.getKey(), f.getValue());
        }
      });
    }
    if (e.error() != null) {
      j.put("error", e.error());
    }
    return j;
  }

  // ---- stdin and signals over REST ----------------------------------------------------------------

  private Future<Reply> stdin(RoutingContext ctx, Principal p) {
    boolean eof = "true".equalsIgnoreCase(ctx.queryParams().get("eof"));
    Buffer body = Api.body(ctx);
    byte[] data = body == null ? new byte[0] : body.getBytes();
    return executions.stdin(p, sandboxId(ctx), executionId(ctx), data, eof).map(v -> Reply.noContent());
  }

  private Future<Reply> signal(RoutingContext ctx, Principal p) {
    Body body = Body.parse(Api.body(ctx));
    String sig = body.string("signal", true, 1, 8);
    body.check();
    if (!ExecutionService.isSignal(sig)) {
      throw ApiException.invalid(ExecutionService.SIGNAL_MESSAGE);
    }
    return executions.signal(p, sandboxId(ctx), executionId(ctx), sig).map(v -> Reply.noContent());
  }
}
