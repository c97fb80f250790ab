package ai.bespokelabs.sandbox.gateway.http;

import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.gateway.auth.Principal;
import ai.bespokelabs.sandbox.gateway.exec.ClientChannel;
import ai.bespokelabs.sandbox.gateway.exec.ExecRequest;
import ai.bespokelabs.sandbox.gateway.exec.ExecutionService;
import ai.bespokelabs.sandbox.gateway.exec.StreamSubscriber;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/**
 * Executions over Server-Sent Events: {@code execute} that streams, and watching an execution (resumable by
 * sequence number). Open streams get heartbeats while idle.
 */
final class ExecutionStreams {
  static final long HEARTBEAT_NANOS = TimeUnit.SECONDS.toNanos(15);

  private final Vertx vertx;
  private final ExecutionService executions;
  private final Set<SseChannel> openStreams = new HashSet<>();

  ExecutionStreams(Vertx vertx, ExecutionService executions) {
    this.vertx = vertx;
    this.executions = executions;
  }

  /** Heartbeats for the streams this instance serves, from its own event loop. */
  void startHeartbeats() {
    vertx.setPeriodic(TimeUnit.NANOSECONDS.toMillis(HEARTBEAT_NANOS) / 3, t -> {
      for (SseChannel c : openStreams) {
        c.heartbeat(HEARTBEAT_NANOS);
      }
    });
  }

  /** {@code execute} with {@code Accept: text/event-stream}: start and stream in one request. */
  Future<Reply> execute(RoutingContext ctx, Principal p, String sandboxId, ExecRequest req, String requestId) {
    return execute(ctx, p, sandboxId, req, requestId, (channel, executionId) -> channel);
  }

  /** How a stream's subscriber writes to the client: the SSE channel, or a channel around it. */
  @FunctionalInterface
  interface Wrap {
    ClientChannel around(SseChannel channel, java.util.function.Supplier<String> executionId);
  }

  /** {@code execute} that streams through {@code wrap}'s channel (for a caller that adds its own last event). */
  Future<Reply> execute(RoutingContext ctx, Principal p, String sandboxId, ExecRequest req, String requestId,
      Wrap wrap) {
    SseChannel channel = new SseChannel(ctx.response());
    String[] started = new String[1];
    StreamSubscriber sub = executions.subscriber(wrap.around(channel, () -> started[0]));
    return executions.prepareWatched(p, sandboxId, req, requestId, sub).compose(l -> {
      if (l.existing() != null) {
        return executions.replay(l.existing()).map(Reply::ok);
      }
      started[0] = l.executionId();
      track(ctx, channel, sub);
      channel.open();
      channel.meta("started", new JsonObject().put("type", "started").put("execution_id", l.executionId())
          .put("request_id", l.requestId()));
      return executions.send(l).map(Reply.HANDLED).recover(err -> {
        sub.failAndEnd(String.valueOf(ErrorMapper.map(err, 0).detail()));
        return Future.succeededFuture(Reply.HANDLED);
      });
    });
  }

  /** {@code GET .../stream}: the execution's events after {@code Last-Event-ID} (or {@code after}). */
  Future<Reply> attach(RoutingContext ctx, Principal p) {
    long after = after(ctx);
    return executions.locate(p, ExecutionApi.sandboxId(ctx), ExecutionApi.executionId(ctx)).map(at -> {
      SseChannel channel = new SseChannel(ctx.response());
      StreamSubscriber sub = executions.subscriber(channel);
      track(ctx, channel, sub);
      channel.open();
      executions.attach(p, at, sub, after);
      return Reply.HANDLED;
    });
  }

  /** Heartbeats while the stream is open; a client that goes away detaches its subscription. */
  private void track(RoutingContext ctx, SseChannel channel, StreamSubscriber sub) {
    openStreams.add(channel);
    ctx.response().endHandler(v -> openStreams.remove(channel));
    ctx.response().closeHandler(v -> {
      openStreams.remove(channel);
      sub.clientGone();
    });
  }

  /** Where a watcher resumes: {@code Last-Event-ID}, else the {@code after} query parameter, else 0. */
  static long after(RoutingContext ctx) {
    String raw = ctx.request().getHeader("Last-Event-ID");
    if (raw == null) {
      raw = ctx.queryParams().get("after");
    }
    if (raw == null || raw.isBlank()) {
      return 0;
    }
    try {
      long n = Long.parseLong(raw.trim());
      if (n >= 0) {
        return n;
      }
    } catch (NumberFormatException ignored) {
      // rejected below
    }
    throw ApiException.invalid("Last-Event-ID and after must be a sequence number (0 or more)");
  }
}
