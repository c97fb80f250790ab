package ai.bespokelabs.sandbox.gateway.http;

import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.repo.LifecycleFeedRepository;
import ai.bespokelabs.sandbox.core.repo.LifecycleFeedRepository.Change;
import ai.bespokelabs.sandbox.core.repo.LifecycleFeedRepository.Cursor;
import ai.bespokelabs.sandbox.gateway.auth.Principal;
import ai.bespokelabs.sandbox.gateway.auth.Scopes;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.ext.web.RoutingContext;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * {@code GET /v1/sandbox-events}: the organization's sandbox lifecycle changes (requested, running, stopping,
 * destroyed, failed, ...) as Server-Sent Events, from now on, or after {@code Last-Event-ID} when a client
 * resumes. Each stream reads the outbox once a second while the client keeps up; a comment line keeps an idle
 * stream open.
 */
public final class SandboxEvents implements Endpoints {
  static final long POLL_MS = 1000;
  static final long HEARTBEAT_MS = 15_000;
  static final int BATCH = 200;
  private static final Pattern ID = Pattern.compile("(\\d{1,20})\\.(\\d{1,19})");

  private final Vertx vertx;
  private final LifecycleFeedRepository feed;

  public SandboxEvents(Vertx vertx, LifecycleFeedRepository feed) {
    this.vertx = vertx;
    this.feed = feed;
  }

  @Override
  public void register(Api api) {
    api.authed(HttpMethod.GET, "/v1/sandbox-events", Scopes.SANDBOXES_READ, this::stream);
  }

  private Future<Reply> stream(RoutingContext ctx, Principal p) {
    String last = ctx.request().getHeader("Last-Event-ID");
    Future<Cursor> start;
    if (last == null || last.isBlank()) {
      start = feed.head();
    } else {
      Matcher m = ID.matcher(last.trim());
      if (!m.matches()) {
        throw ApiException.invalid("Last-Event-ID must be an id this stream sent");
      }
      start = Future.succeededFuture(new Cursor(m.group(1), Long.parseLong(m.group(2))));
    }
    return start.map(cursor -> {
      HttpServerResponse res = ctx.response().setChunked(true)
          .putHeader("Content-Type", "text/event-stream; charset=utf-8")
          .putHeader("Cache-Control", "no-cache")
          .putHeader("X-Accel-Buffering", "no");
      res.write(": sandbox lifecycle events\n\n");
      new Follower(res, p.organizationId(), cursor).start();
      return Reply.HANDLED;
    });
  }

  /** One open stream: its cursor, its poll timer, and nothing after its client left. */
  private final class Follower {
    private final HttpServerResponse res;
    private final String organizationId;
    private Cursor cursor;
    private long timer;
    private boolean polling;
    private long lastWrite = System.currentTimeMillis();

    Follower(HttpServerResponse res, String organizationId, Cursor cursor) {
      this.res = res;
      this.organizationId = organizationId;
      this.cursor = cursor;
    }

    void start() {
      timer = vertx.setPeriodic(1, POLL_MS, t -> poll());
      res.closeHandler(v -> vertx.cancelTimer(timer));
      res.endHandler(v -> vertx.cancelTimer(timer));
    }

    private void poll() {
      if (polling || res.closed() || res.ended()) {
        return;
      }
      if (res.writeQueueFull()) {
        return; // the client is not keeping up: read on once it does
      }
      polling = true;
      feed.after(organizationId, cursor, BATCH).onComplete(ar -> {
        polling = false;
        if (ar.failed() || res.closed() || res.ended()) {
          return; // a failed read is retried at the next tick
        }
        List<Change> changes = ar.result();
        long now = System.currentTimeMillis();
        if (changes.isEmpty()) {
          if (now - lastWrite >= HEARTBEAT_MS) {
            res.write(": keep-alive\n\n");
            lastWrite = now;
          }
          return;
        }
        StringBuilder out = new StringBuilder();
        for (Change c : changes) {
          out.append("id: ").append(c.at().txid()).append('.').append(c.at().seq()).append('\n')
              .append("event: lifecycle\ndata: ").append(LifecycleFeedRepository.json(c).encode()).append("\n\n");
          cursor = c.at();
        }
        res.write(out.toString());
        lastWrite = now;
      });
    }
  }
}
