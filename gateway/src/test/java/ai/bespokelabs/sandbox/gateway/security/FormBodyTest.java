package ai.bespokelabs.sandbox.gateway.security;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.gateway.GatewayExtension;
import ai.bespokelabs.sandbox.gateway.TestGateway;
import ai.bespokelabs.sandbox.gateway.TestGateway.Resp;
import ai.bespokelabs.sandbox.testkit.Waits;
import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.vertx.core.json.JsonObject;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.slf4j.LoggerFactory;

/**
 * A form-encoded body (curl's default for {@code --data}) is bytes like any other: no route parses it as a
 * form, so a large one answers each route's usual status instead of a 500 with a stack trace in the log.
 */
@Tag("security")
class FormBodyTest {
  static final String FORM = "application/x-www-form-urlencoded";
  @RegisterExtension
  static final GatewayExtension GATEWAY = new GatewayExtension(() -> java.util.Map.of(
      "BESPOKE_MAX_REQUEST_BODY_BYTES", "65536"));
  static TestGateway gw;
  static String key;

  @BeforeAll
  static void start() {
    key = gw.bootstrap("Acme");
  }

  /** About 20 KB in one field, as {@code curl --data @file} sends a file's text. */
  static String form() {
    return "text=" + "x".repeat(20_000) + "&more=" + "y".repeat(100);
  }

  static Resp post(String path, String auth, String body) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(gw.base + path)).timeout(Duration.ofSeconds(30))
        .header("Content-Type", FORM).POST(HttpRequest.BodyPublishers.ofString(body));
    if (auth != null) {
      b.header("Authorization", "Bearer " + auth);
    }
    HttpResponse<String> r = gw.client.send(b.build(), HttpResponse.BodyHandlers.ofString());
    return new Resp(r.statusCode(), r);
  }

  @Test
  void a_large_form_body_gets_each_routes_usual_answer_and_no_stack_trace() throws Exception {
    ListAppender<ILoggingEvent> logs = new ListAppender<>();
    logs.start();
    Logger root = (Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
    root.addAppender(logs);
    try {
      String form = form();
      Resp health = post("/healthz", null, form);
      assertThat(health.status()).isEqualTo(405);
      assertThat(health.detail()).isEqualTo("Method Not Allowed");
      Resp unknown = post("/no/such/path", null, form);
      assertThat(unknown.status()).isEqualTo(404);
      assertThat(unknown.detail()).isEqualTo("Not Found");
      Resp anonymous = post("/v1/sandboxes", null, form);
      assertThat(anonymous.status()).isEqualTo(401);
      Resp authed = post("/v1/sandboxes", key, form);
      assertThat(authed.status()).isEqualTo(422);
      assertThat(authed.json().getJsonArray("detail").getJsonObject(0).getString("type")).isEqualTo("json_invalid");

      // stdin sent with the form content type reaches the program byte for byte
      String sandbox = gw.sandbox(key, null).getString("id");
      Resp started = gw.post("/v1/sandboxes/" + sandbox + "/executions", key,
          new JsonObject().put("command", "cat").put("stdin", true));
      assertThat(started.status()).isEqualTo(202);
      String exec = "/v1/sandboxes/" + sandbox + "/executions/" + started.json().getString("id");
      Resp stdin = post(exec + "/stdin?eof=true", key, form);
      assertThat(stdin.status()).isEqualTo(204);
      JsonObject done = Waits.upTo(10).until(() -> gw.get(exec, key).json(),
          e -> !"running".equals(e.getString("status")));
      assertThat(done.getString("status")).isEqualTo("completed");
      assertThat(done.getString("stdout")).isEqualTo(form);
      assertThat(gw.get("/healthz", null).status()).isEqualTo(200);
    } finally {
      root.detachAppender(logs);
    }
    assertThat(logs.list).as("no request above logs an error or a stack trace")
        .noneMatch(e -> e.getLevel().isGreaterOrEqual(Level.ERROR) || e.getThrowableProxy() != null);
  }

  /** A body no route reads is drained only up to the body limit; a client that sends more is disconnected. */
  @Test
  @org.junit.jupiter.api.Timeout(60)
  void an_endless_body_to_an_unknown_path_is_cut_off() throws Exception {
    int port = Integer.parseInt(gw.base.substring(gw.base.lastIndexOf(':') + 1));
    try (java.net.Socket s = new java.net.Socket("127.0.0.1", port)) {
      s.setSoTimeout(10_000);
      s.getOutputStream().write(("POST /no/such/path HTTP/1.1\r\nHost: x\r\nContent-Type: " + FORM
          + "\r\nContent-Length: 100000000\r\n\r\n").getBytes(java.nio.charset.StandardCharsets.US_ASCII));
      byte[] chunk = new byte[16_384];
      java.util.Arrays.fill(chunk, (byte) 'x');
      long sent = 0;
      try {
        for (; sent < 8_000_000; sent += chunk.length) {
          s.getOutputStream().write(chunk);
        }
      } catch (java.io.IOException closed) {
        // the gateway hung up: expected once the limit is passed
      }
      byte[] answer = s.getInputStream().readAllBytes(); // ends only when the gateway closes the connection
      assertThat(new String(answer, java.nio.charset.StandardCharsets.US_ASCII)).startsWith("HTTP/1.1 404");
      assertThat(sent).as("cut off long before the 100 MB it announced").isLessThan(8_000_000);
    }
  }

  static int port() {
    return Integer.parseInt(gw.base.substring(gw.base.lastIndexOf(':') + 1));
  }

  /** curl sends {@code Expect: 100-continue} for any body over 1 KB and waits for the interim answer. */
  @Test
  @org.junit.jupiter.api.Timeout(30)
  void a_client_expecting_100_continue_gets_it_before_it_sends_the_body() throws Exception {
    String body = new io.vertx.core.json.JsonObject().put("name", "x".repeat(150)).encode();
    try (java.net.Socket s = new java.net.Socket("127.0.0.1", port())) {
      s.setSoTimeout(2000);
      var out = s.getOutputStream();
      var in = new java.io.BufferedReader(new java.io.InputStreamReader(s.getInputStream(),
          java.nio.charset.StandardCharsets.ISO_8859_1));
      out.write(("POST /v1/organizations HTTP/1.1\r\nHost: x\r\nX-Control-Plane-Admin: " + TestGateway.ADMIN
          + "\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: " + body.length()
          + "\r\n\r\n").getBytes(java.nio.charset.StandardCharsets.ISO_8859_1));
      out.flush();
      assertThat(in.readLine()).as("the interim answer, before any body was sent").startsWith("HTTP/1.1 100");
      in.readLine();
      out.write(body.getBytes(java.nio.charset.StandardCharsets.ISO_8859_1));
      out.flush();
      assertThat(in.readLine()).startsWith("HTTP/1.1 201");
    }
  }

  /** An upload refused before its endpoint took the body gets its answer and the connection closes. */
  @Test
  @org.junit.jupiter.api.Timeout(30)
  void an_upload_refused_at_authentication_is_answered_and_closed() throws Exception {
    try (java.net.Socket s = new java.net.Socket("127.0.0.1", port())) {
      s.setSoTimeout(10_000);
      s.getOutputStream().write(("PUT /v1/sandboxes/sbx_x/files/content?path=f HTTP/1.1\r\nHost: x\r\n"
          + "Authorization: Bearer bsk_live_nope\r\nContent-Length: 100000000\r\n\r\n" + "y".repeat(4096))
          .getBytes(java.nio.charset.StandardCharsets.ISO_8859_1));
      s.getOutputStream().flush();
      String answer = new String(s.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
      assertThat(answer).startsWith("HTTP/1.1 401").contains("invalid API key");
    }
  }
}
