package ai.bespokelabs.sandbox.gateway.http;

import ai.bespokelabs.sandbox.core.bus.BusFailures;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import io.vertx.core.Handler;
import io.vertx.core.eventbus.ReplyException;
import io.vertx.core.http.HttpClosedException;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;
import io.vertx.ext.web.handler.HttpException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The one place where failures become HTTP responses, in the {@code {"detail": ...}} contract. */
public final class ErrorMapper implements Handler<RoutingContext> {
  private static final Logger LOG = LoggerFactory.getLogger(ErrorMapper.class);
  static final String INTERNAL = "Internal control-plane error.";

  /** Status and detail for a failure; pure, so it can be tested table-wise. */
  public record Mapped(int status, Object detail) {}

  public static Mapped map(Throwable t, int statusCode) {
    if (t instanceof ReplyException) {
      t = BusFailures.decode(t, "unknown", "unknown");
    }
    if (t instanceof ApiException api) {
      return new Mapped(api.status(), api.detail());
    }
    if (t instanceof ProviderException pe) {
      return new Mapped(pe.error().httpStatus(), pe.error().toJson());
    }
    if (t instanceof HttpException he) {
      return new Mapped(he.getStatusCode(), reason(he.getStatusCode()));
    }
    if (t == null && statusCode >= 400 && statusCode < 500) {
      return new Mapped(statusCode, reason(statusCode));
    }
    return new Mapped(500, INTERNAL);
  }

  static String reason(int status) {
    return switch (status) {
      case 400 -> "Bad Request";
      case 401 -> "Not authenticated";
      case 404 -> "Not Found";
      case 405 -> "Method Not Allowed";
      case 413 -> "request body is too large";
      case 415 -> "Unsupported Media Type";
      default -> "Request failed";
    };
  }

  @Override
  public void handle(RoutingContext ctx) {
    Throwable failure = ctx.failure();
    if (failure instanceof HttpClosedException || ctx.response().closed()) {
      // the client hung up (e.g. mid-body): there is nobody to answer, and nothing went wrong here
      LOG.debug("Client left during {} {}", ctx.request().method(), ctx.normalizedPath());
      return;
    }
    Mapped m = map(failure, ctx.statusCode());
    if (m.status() >= 500 && !(failure instanceof ProviderException)) {
      LOG.error("Unhandled failure on {} {}", ctx.request().method(), ctx.normalizedPath(), failure);
    }
    send(ctx, m);
  }

  static void send(RoutingContext ctx, Mapped m) {
    HttpServerResponse res = ctx.response();
    if (res.ended() || res.closed()) {
      return;
    }
    if (res.headWritten()) {
      res.reset();
      return;
    }
    res.setStatusCode(m.status()).putHeader("content-type", "application/json");
    if (m.status() == 401) {
      res.putHeader("www-authenticate", "Bearer");
    }
    res.end(new JsonObject().put("detail", m.detail()).toBuffer());
  }
}
