package ai.bespokelabs.sandbox.gateway.http;

import ai.bespokelabs.sandbox.core.error.ApiException;
import io.vertx.core.Vertx;
import io.vertx.ext.web.RoutingContext;
import java.util.function.Consumer;

/**
 * Times out a request body the gateway is waiting for: when no byte of it arrives for the idle timeout while
 * the gateway reads, the request fails with 408 and its connection is closed once that is answered. Time the
 * gateway itself holds the body back (an upload paused while the sandbox writes) does not count, so only a
 * client that stops sending is cut. Confined to the request's event loop.
 */
final class BodyDeadline {
  /** Set on a request whose body stalled: its connection cannot carry another request. */
  static final String STALLED = "http.bodyStalled";

  private final Vertx vertx;
  private final RoutingContext ctx;
  private final long millis;
  private final Consumer<ApiException> expired;
  private long timer = -1;
  private boolean over;

  BodyDeadline(Vertx vertx, RoutingContext ctx, long millis, Consumer<ApiException> expired) {
    this.vertx = vertx;
    this.ctx = ctx;
    this.millis = millis;
    this.expired = expired;
  }

  /** The gateway reads (again), or a chunk just arrived: the client has the whole timeout for the next. */
  void waiting() {
    stop();
    if (!over && millis > 0) {
      timer = vertx.setTimer(millis, t -> expire());
    }
  }

  /** The gateway holds the body back, or is done with it. */
  void stop() {
    if (timer != -1) {
      vertx.cancelTimer(timer);
      timer = -1;
    }
  }

  private void expire() {
    timer = -1;
    over = true;
    if (ctx.response().headWritten()) {
      return; // answered already (a body over the limit, say): the router drains or closes the rest
    }
    ctx.put(STALLED, true);
    ctx.response().putHeader("Connection", "close");
    ctx.addBodyEndHandler(v -> ctx.request().connection().close());
    expired.accept(new ApiException(408,
        "the request body stopped arriving: nothing came for " + millis / 1000 + " s"));
  }
}
