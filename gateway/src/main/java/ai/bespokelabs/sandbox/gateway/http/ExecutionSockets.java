package ai.bespokelabs.sandbox.gateway.http;

import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.gateway.auth.Principal;
import ai.bespokelabs.sandbox.gateway.exec.ExecRequest;
import ai.bespokelabs.sandbox.gateway.exec.ExecutionService;
import ai.bespokelabs.sandbox.gateway.exec.StreamSubscriber;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;

/**
 * Executions over WebSocket: one route starts an execution with a {@code start} frame, the other attaches to
 * one (resumable by sequence number). Frames after that are {@link WebSocketSession}'s.
 */
final class ExecutionSockets {
  private final Vertx vertx;
  private final ExecutionService executions;

  ExecutionSockets(Vertx vertx, ExecutionService executions) {
    this.vertx = vertx;
    this.executions = executions;
  }

  /** {@code GET .../executions/{execution_id}/ws}: watch an execution, and send it stdin and signals. */
  Future<Reply> attach(RoutingContext ctx, Principal p) {
    long after = ExecutionStreams.after(ctx);
    boolean binary = binaryMode(ctx);
    return executions.locate(p, ExecutionApi.sandboxId(ctx), ExecutionApi.executionId(ctx))
        .compose(at -> ctx.request().toWebSocket().map(ws -> {
          WebSocketChannel channel = new WebSocketChannel(ws, binary);
          StreamSubscriber sub = executions.subscriber(channel);
          WebSocketSession session = new WebSocketSession(executions, p, ws, channel);
          session.started(at.execution().id(), at.runner(), sub);
          executions.attach(p, at, sub, after);
          return Reply.HANDLED;
        }));
  }

  /** {@code GET .../executions/ws}: the first frame, {@code start}, starts the execution the socket watches. */
  Future<Reply> start(RoutingContext ctx, Principal p) {
    String sandboxId = Api.idParam(ctx, "sandbox_id", "sbx", "sandbox not found");
    boolean binary = binaryMode(ctx);
    return ctx.request().toWebSocket().map(ws -> {
      WebSocketChannel channel = new WebSocketChannel(ws, binary);
      WebSocketSession session = new WebSocketSession(executions, p, ws, channel);
      session.onStart(body -> {
        StreamSubscriber sub = executions.subscriber(channel);
        ExecRequest req = ExecRequests.parse(body);
        session.starting(true);
        executions.prepareWatched(p, sandboxId, req, null, sub)
            .compose(l -> {
              // announced before the program starts, so no output can precede it
              session.started(l.executionId(), l.runner(), sub);
              ws.writeTextMessage(new JsonObject().put("type", "started").put("execution_id", l.executionId())
                  .put("request_id", l.requestId()).encode());
              return executions.send(l);
            })
            .onFailure(err -> {
              session.starting(false);
              sub.clientGone();
              channel.error(ErrorMapper.map(err, 0).detail().toString());
            });
      });
      return Reply.HANDLED;
    });
  }

  private static boolean binaryMode(RoutingContext ctx) {
    String mode = ctx.queryParams().get("mode");
    if (mode == null || mode.equals("text")) {
      return false;
    }
    if (mode.equals("binary")) {
      return true;
    }
    throw ApiException.invalid("mode must be text or binary");
  }
}
