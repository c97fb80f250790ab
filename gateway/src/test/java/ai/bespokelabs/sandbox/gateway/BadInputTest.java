package ai.bespokelabs.sandbox.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.gateway.TestGateway.Resp;
import ai.bespokelabs.sandbox.testkit.Waits;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Bad input gets a documented 4xx, writes nothing, and never a 500; secrets never leave the server. */
class BadInputTest {
  @RegisterExtension
  static final GatewayExtension GATEWAY = new GatewayExtension(() -> Map.of("BESPOKE_MAX_REQUEST_BODY_BYTES", "4096"));
  static TestGateway gw;
  static String key;

  @BeforeAll
  static void start() {
    key = gw.bootstrap("Acme");
  }

  static int sandboxCount() {
    return gw.get("/v1/sandboxes", key).array().size();
  }

  @Test
  void malformed_or_mistyped_create_bodies_are_422_and_write_nothing() {
    int before = sandboxCount();
    Resp malformed = gw.send("POST", "/v1/sandboxes", key, "{\"backend\": ");
    assertThat(malformed.status()).isEqualTo(422);
    assertThat(malformed.json().getJsonArray("detail").getJsonObject(0).getString("type")).isEqualTo("json_invalid");
    Resp array = gw.send("POST", "/v1/sandboxes", key, "[1,2]");
    assertThat(array.status()).isEqualTo(422);
    Resp empty = gw.send("POST", "/v1/sandboxes", key, "");
    assertThat(empty.status()).isEqualTo(422);
    Resp types = gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "local").put("cpu", "fast")
        .put("memory_mb", -5).put("allow_internet", "perhaps").put("env_vars", new JsonArray()));
    assertThat(types.status()).isEqualTo(422);
    JsonArray errors = types.json().getJsonArray("detail");
    assertThat(errors).hasSize(4);
    assertThat(errors.getJsonObject(0).getJsonArray("loc")).isEqualTo(new JsonArray().add("body").add("cpu"));
    Resp missing = gw.post("/v1/sandboxes", key, new JsonObject());
    assertThat(missing.json().getJsonArray("detail").getJsonObject(0).getString("type")).isEqualTo("missing");
    Resp unknown = gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "local")
        .put("volumes", new JsonObject()).put("backend_options", new JsonObject()).put("files", (Object) null));
    assertThat(unknown.status()).isEqualTo(422);
    assertThat(unknown.detail()).isEqualTo("unsupported sandbox configuration: backend_options, volumes");
    Resp backend = gw.post("/v1/sandboxes", key, new JsonObject().put("backend", " NoSuch "));
    assertThat(backend.detail()).isEqualTo("backend is not enabled: nosuch");
    Resp env = gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "local")
        .put("env_vars", new JsonObject().put("BAD NAME", "x")));
    assertThat(env.status()).isEqualTo(422);
    assertThat(sandboxCount()).isEqualTo(before);
  }

  @Test
  void oversized_bodies_are_413() {
    String big = new JsonObject().put("backend", "local").put("image", "x".repeat(10_000)).encode();
    Resp r = gw.send("POST", "/v1/sandboxes", key, big);
    assertThat(r.status()).isEqualTo(413);
    assertThat(r.detail()).isEqualTo("request body is too large");
  }

  @Test
  void bad_ids_and_bad_execute_bodies() {
    assertThat(gw.get("/v1/sandboxes/sbx_nothex", key).detail()).isEqualTo("sandbox not found");
    assertThat(gw.get("/v1/sandboxes/%2e%2e", key).status()).isEqualTo(404);
    String id = gw.sandbox(key, null).getString("id");
    Resp both = gw.post("/v1/sandboxes/" + id + "/execute", key, new JsonObject().put("code", "1").put("command", "x"));
    assertThat(both.status()).isEqualTo(422);
    assertThat(both.json().getJsonArray("detail").getJsonObject(0).getString("msg"))
        .isEqualTo("Value error, provide exactly one of code or command");
    Resp neither = gw.post("/v1/sandboxes/" + id + "/execute", key, new JsonObject());
    assertThat(neither.json().getJsonArray("detail").getJsonObject(0).getString("type")).isEqualTo("value_error");
    Resp args = gw.post("/v1/sandboxes/" + id + "/execute", key,
        new JsonObject().put("command", "echo").put("args", "not-a-list"));
    assertThat(args.status()).isEqualTo(422);
    Resp lang = gw.post("/v1/sandboxes/" + id + "/execute", key,
        new JsonObject().put("code", "x").put("language", "../../bin/sh"));
    assertThat(lang.status()).isEqualTo(422);
    Resp missingProgram = gw.post("/v1/sandboxes/" + id + "/execute", key,
        new JsonObject().put("command", "/no/such/program").put("args", new JsonArray().add("x")));
    assertThat(missingProgram.status()).isEqualTo(502);
    assertThat(missingProgram.json().getJsonObject("detail").getString("code")).isEqualTo("execution_failed");
    assertThat(missingProgram.json().getJsonObject("detail").fieldNames())
        .containsExactlyInAnyOrder("message", "code", "backend", "op", "retryable", "outcome", "context");
  }

  @Test
  void a_client_that_disconnects_mid_request_leaks_nothing() throws Exception {
    int before = sandboxCount();
    ch.qos.logback.core.read.ListAppender<ch.qos.logback.classic.spi.ILoggingEvent> logs =
        new ch.qos.logback.core.read.ListAppender<>();
    logs.start();
    ch.qos.logback.classic.Logger root =
        (ch.qos.logback.classic.Logger) org.slf4j.LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
    root.addAppender(logs);
    ch.qos.logback.classic.Logger errors = (ch.qos.logback.classic.Logger) org.slf4j.LoggerFactory.getLogger(
        ai.bespokelabs.sandbox.gateway.http.ErrorMapper.class);
    ch.qos.logback.classic.Level level = errors.getLevel();
    errors.setLevel(ch.qos.logback.classic.Level.DEBUG);
    try (Socket s = new Socket("127.0.0.1", Integer.parseInt(gw.base.substring(gw.base.lastIndexOf(':') + 1)))) {
      OutputStream out = s.getOutputStream();
      out.write(("POST /v1/sandboxes HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + key
          + "\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{\"backend\":\"loc")
          .getBytes(StandardCharsets.UTF_8));
      out.flush();
    }
    String id = gw.sandbox(key, null).getString("id");
    Waits.upTo(5).until(() -> logs.list.stream().anyMatch(e -> e.getFormattedMessage().startsWith("Client left")));
    errors.setLevel(level);
    root.detachAppender(logs);
    assertThat(logs.list).anyMatch(e -> e.getFormattedMessage().equals("Client left during POST /v1/sandboxes"));
    assertThat(logs.list).as("a client hanging up is not an error of the gateway")
        .noneMatch(e -> e.getLevel().isGreaterOrEqual(ch.qos.logback.classic.Level.WARN));
    var pending = java.util.concurrent.CompletableFuture.runAsync(() -> {
      try (Socket s = new Socket("127.0.0.1", Integer.parseInt(gw.base.substring(gw.base.lastIndexOf(':') + 1)))) {
        String body = "{\"command\":\"sleep 1; echo finished\"}";
        s.getOutputStream().write(("POST /v1/sandboxes/" + id + "/execute HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
            + key + "\r\nIdempotency-Key: gone-client\r\nContent-Type: application/json\r\nContent-Length: "
            + body.length() + "\r\n\r\n" + body).getBytes(StandardCharsets.UTF_8));
        s.getOutputStream().flush();
        Thread.sleep(200);
      } catch (Exception e) {
        throw new IllegalStateException(e);
      }
    });
    pending.get();
    Resp replay = Waits.upTo(10).until(() -> gw.post("/v1/sandboxes/" + id + "/execute", key,
        new JsonObject().put("command", "sleep 1; echo finished"), "Idempotency-Key", "gone-client"),
        r -> r.status() == 200);
    assertThat(replay.status()).isEqualTo(200);
    assertThat(replay.json().getString("stdout")).isEqualTo("finished\n");
    assertThat(sandboxCount()).isEqualTo(before + 1);
    assertThat(gw.get("/healthz", null).status()).isEqualTo(200);
  }

  @Test
  void no_secret_reaches_a_response_or_the_database() {
    String k = gw.key(key, "sandboxes:read", "sandboxes:create", "sandboxes:execute");
    JsonObject sbx = gw.sandbox(k, new JsonObject().put("env_vars", new JsonObject().put("TOKEN", "tok-very-secret")));
    gw.post("/v1/sandboxes/" + sbx.getString("id") + "/execute", k, new JsonObject().put("command", "true"));
    String responses = sbx.encode() + gw.get("/v1/sandboxes", k).body() + gw.get("/v1/api-keys", key).body()
        + gw.get("/v1/sandboxes/" + sbx.getString("id") + "/detail", k).body() + gw.get("/v1/session", k).body();
    String db = DatabaseDump.of(gw);
    for (String secret : new String[] {TestGateway.PEPPER, TestGateway.ADMIN, key, k, "tok-very-secret"}) {
      assertThat(responses).doesNotContain(secret);
      assertThat(db).doesNotContain(secret);
    }
    assertThat(db).contains("api_keys");
  }

  /** Sends raw bytes and reads the whole answer (the gateway closes the connection after a refused request). */
  static String raw(String request) throws Exception {
    try (Socket s = new Socket("127.0.0.1", Integer.parseInt(gw.base.substring(gw.base.lastIndexOf(':') + 1)))) {
      s.setSoTimeout(10_000);
      s.getOutputStream().write(request.getBytes(StandardCharsets.ISO_8859_1));
      s.getOutputStream().flush();
      return new String(s.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    }
  }

  /** What the HTTP codec refuses gets the same {"detail": ...} body as every other error, never an empty one. */
  @Test
  void requests_the_http_codec_refuses_get_a_detail_body() throws Exception {
    String badHeader = raw("GET /healthz HTTP/1.1\r\nHost: x\r\nX-B\u0001d: v\r\n\r\n");
    assertThat(badHeader).matches("(?s)HTTP/1\\.[01] 400 .*").endsWith("{\"detail\":\"malformed HTTP request\"}");
    String longUri = raw("GET /" + "a".repeat(10_000) + " HTTP/1.1\r\nHost: x\r\n\r\n");
    assertThat(longUri).matches("(?s)HTTP/1\\.[01] 414 .*").endsWith("{\"detail\":\"request line is too long\"}");
    String bigHeaders = raw("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + "b".repeat(20_000) + "\r\n\r\n");
    assertThat(bigHeaders).matches("(?s)HTTP/1\\.[01] 431 .*").endsWith("{\"detail\":\"request headers are too large\"}");
    assertThat(gw.get("/healthz", null).status()).isEqualTo(200);
  }
}
