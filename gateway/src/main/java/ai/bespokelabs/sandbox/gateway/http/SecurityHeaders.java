package ai.bespokelabs.sandbox.gateway.http;

import io.vertx.core.Handler;
import io.vertx.core.MultiMap;
import io.vertx.ext.web.RoutingContext;

/** The browser security headers the contract puts on every response. */
public final class SecurityHeaders implements Handler<RoutingContext> {
  static final MultiMap HEADERS = MultiMap.caseInsensitiveMultiMap()
      .add("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:;"
          + " connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none';"
          + " object-src 'none'")
      .add("X-Content-Type-Options", "nosniff")
      .add("X-Frame-Options", "DENY")
      .add("Referrer-Policy", "no-referrer")
      .add("Permissions-Policy", "camera=(), microphone=(), geolocation=()")
      .add("Cross-Origin-Opener-Policy", "same-origin")
      .add("Strict-Transport-Security", "max-age=63072000; includeSubDomains");

  @Override
  public void handle(RoutingContext ctx) {
    ctx.response().headers().addAll(HEADERS);
    ctx.next();
  }
}
