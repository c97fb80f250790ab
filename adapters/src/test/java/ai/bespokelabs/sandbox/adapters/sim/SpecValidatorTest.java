package ai.bespokelabs.sandbox.adapters.sim;

import static org.assertj.core.api.Assertions.assertThat;

import io.vertx.core.Vertx;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.json.JsonObject;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

class SpecValidatorTest {
  static Vertx vertx;
  static HttpServer server;
  static HttpClient client;
  static io.vertx.core.Context context;

  @BeforeAll
  static void start() throws Exception {
    vertx = Vertx.vertx();
    SpecValidator e2b = SpecValidator.load(vertx, "e2b/openapi.yml").await(30, TimeUnit.SECONDS);
    server = vertx.createHttpServer().requestHandler(req -> e2b.validate(req).onComplete(ar -> {
      if (ar.succeeded()) {
        req.response().setStatusCode(201).end(ar.result().getBody().getJsonObject().getString("templateID"));
      } else {
        req.response().setStatusCode(400).end(ar.cause().getMessage());
      }
    })).listen(0).await(10, TimeUnit.SECONDS);
    client = vertx.createHttpClient();
    context = vertx.getOrCreateContext();
  }

  @AfterAll
  static void stop() throws Exception {
    vertx.close().await(10, TimeUnit.SECONDS);
  }

  private String send(HttpMethod method, String uri, String body) throws Exception {
    // issued on a Vert.x context: a request issued straight from a foreign thread now and then never completed
    return ai.bespokelabs.sandbox.adapters.http.ClientContext.run(context, () -> client.request(new RequestOptions()
                .setMethod(method).setPort(server.actualPort()).setHost("127.0.0.1").setURI(uri)
                .putHeader("Content-Type", "application/json").putHeader("X-API-Key", "k"))
            .compose(r -> body == null ? r.send() : r.send(body))
            .compose(resp -> resp.body().map(b -> resp.statusCode() + " " + b)))
        // generous: the first validation of an operation compiles its schemas, slow on a loaded machine
        .await(60, TimeUnit.SECONDS);
  }

  @Test
  void a_conforming_request_passes_and_its_body_is_parsed() throws Exception {
    assertThat(send(HttpMethod.POST, "/sandboxes", new JsonObject().put("templateID", "base").put("timeout", 60)
        .put("metadata", new JsonObject().put("org", "o")).encode())).isEqualTo("201 base");
  }

  @Test
  void what_the_provider_would_reject_is_refused() throws Exception {
    assertThat(send(HttpMethod.POST, "/sandboxes", new JsonObject().put("timeout", 60).encode())).startsWith("400 ");
    assertThat(send(HttpMethod.POST, "/sandboxes", new JsonObject().put("templateID", "base").put("timeout", "soon")
        .encode())).startsWith("400 ");
    assertThat(send(HttpMethod.POST, "/no-such-route", "{}")).startsWith("400 ").contains("not in the spec");
  }

  @Test
  void the_daytona_specs_load() throws Exception {
    assertThat(SpecValidator.load(vertx, "daytona/api/openapi.yaml").await(60, TimeUnit.SECONDS)).isNotNull();
    assertThat(SpecValidator.load(vertx, "daytona/toolbox/openapi.yaml").await(60, TimeUnit.SECONDS)).isNotNull();
    assertThat(SpecValidator.load(vertx, "e2b/envd/envd.yaml").await(60, TimeUnit.SECONDS)).isNotNull();
  }
}
