package ai.bespokelabs.sandbox.gateway.ops;

import ai.bespokelabs.sandbox.core.Secret;
import io.vertx.core.Handler;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.json.JsonObject;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.Optional;

/**
 * {@code GET /metrics}: the Prometheus text exposition of this node's registry; with a token configured, only
 * for {@code Authorization: Bearer <token>} (compared in constant time), else 401 in the contract's shape.
 */
public final class MetricsEndpoint implements Handler<HttpServerRequest> {
  public static final String PATH = "/metrics";
  static final String CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

  private final GatewayMetrics metrics;
  private final Optional<byte[]> token;

  public MetricsEndpoint(GatewayMetrics metrics, Optional<Secret> token) {
    this.metrics = metrics;
    this.token = token.map(t -> ("Bearer " + t.reveal()).getBytes(StandardCharsets.UTF_8));
  }

  @Override
  public void handle(HttpServerRequest req) {
    if (token.isPresent()) {
      String given = req.getHeader(HttpHeaders.AUTHORIZATION);
      if (given == null || !MessageDigest.isEqual(token.get(), given.getBytes(StandardCharsets.UTF_8))) {
        req.response().setStatusCode(401).putHeader(HttpHeaders.CONTENT_TYPE, "application/json")
            .putHeader("WWW-Authenticate", "Bearer")
            .end(new JsonObject().put("detail", "a valid metrics token is required").encode());
        return;
      }
    }
    req.response().putHeader(HttpHeaders.CONTENT_TYPE, CONTENT_TYPE).putHeader(HttpHeaders.CACHE_CONTROL, "no-store")
        .end(metrics.scrape());
  }
}
