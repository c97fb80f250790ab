package ai.bespokelabs.sandbox.gateway.ops;

import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.core.json.JsonObject;

/** {@code /metrics} on a port of its own ({@code BESPOKE_METRICS_PORT}); every other request is 404. */
public final class MetricsServer extends VerticleBase {
  private final String host;
  private final int port;
  private final MetricsEndpoint endpoint;
  private HttpServer server;

  public MetricsServer(String host, int port, MetricsEndpoint endpoint) {
    this.host = host;
    this.port = port;
    this.endpoint = endpoint;
  }

  @Override
  public Future<?> start() {
    server = vertx.createHttpServer(new HttpServerOptions().setHost(host).setPort(port)).requestHandler(req -> {
      if (req.method() == HttpMethod.GET && MetricsEndpoint.PATH.equals(req.path())) {
        endpoint.handle(req);
      } else {
        req.response().setStatusCode(404).putHeader("Content-Type", "application/json")
            .end(new JsonObject().put("detail", "Not Found").encode());
      }
    });
    return server.listen();
  }

  /** The port it listens on (the chosen one when configured as 0). */
  public int actualPort() {
    return server.actualPort();
  }

  @Override
  public Future<?> stop() {
    return server == null ? Future.succeededFuture() : server.close();
  }
}
