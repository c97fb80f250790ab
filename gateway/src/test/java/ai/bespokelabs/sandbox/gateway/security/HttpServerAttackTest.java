package ai.bespokelabs.sandbox.gateway.security;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.gateway.GatewayExtension;
import ai.bespokelabs.sandbox.gateway.TestGateway;
import ai.bespokelabs.sandbox.testkit.Waits;
import ai.bespokelabs.sandbox.testkit.WsClient;
import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.net.UnknownHostException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.slf4j.LoggerFactory;

/**
 * The HTTP server under attack: idle connections by the thousand, connections that never finish their request,
 * malformed Host headers, a Host aimed at the OpenAPI document, and a cross-site sign-in.
 */
@Tag("security")
class HttpServerAttackTest {
  static final int IDLE_SECS = 3;
  static final int CAP = 256;
  @RegisterExtension
  static final GatewayExtension GATEWAY = new GatewayExtension(() -> Map.of(
      "BESPOKE_HTTP_IDLE_TIMEOUT_SECS", String.valueOf(IDLE_SECS)));
  static TestGateway gw;
  static String key;
  static String sandbox;
  /** Another client, from its own address: the flood's limit on 127.0.0.1 is not its. */
  static final HttpClient OTHER = HttpClient.newBuilder().localAddress(address("127.0.0.2"))
      .version(HttpClient.Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(5)).build();

  @BeforeAll
  static void start() {
    key = gw.bootstrap("Acme");
    sandbox = gw.sandbox(key, null).getString("id");
  }

  static InetAddress address(String literal) {
    try {
      return InetAddress.getByName(literal);
    } catch (UnknownHostException e) {
      throw new IllegalStateException(e);
    }
  }

  static int port() {
    return Integer.parseInt(gw.base.substring(gw.base.lastIndexOf(':') + 1));
  }

  static Socket connect() throws IOException {
    return new Socket("127.0.0.1", port());
  }

  /** Whether the gateway closed the socket: a read sees the end of the stream (or a reset) within the wait. */
  static boolean closedByGateway(Socket s, int waitMillis) {
    try {
      s.setSoTimeout(waitMillis);
      InputStream in = s.getInputStream();
      while (true) {
        if (in.read() == -1) {
          return true;
        }
      }
    } catch (SocketTimeoutException stillOpen) {
      return false;
    } catch (IOException reset) {
      return true;
    }
  }

  static HttpResponse<String> other(String method, String path, String body) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(gw.base + path)).timeout(Duration.ofSeconds(30))
        .header("Authorization", "Bearer " + key);
    if (body != null) {
      b.header("Content-Type", "application/json");
    }
    b.method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body));
    return OTHER.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  /** Sends raw bytes and reads the whole answer (the gateway closes the connection after it). */
  static String raw(String request) throws Exception {
    try (Socket s = connect()) {
      s.setSoTimeout(10_000);
      s.getOutputStream().write(request.getBytes(StandardCharsets.UTF_8));
      s.getOutputStream().flush();
      return new String(s.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    }
  }

  static ListAppender<ILoggingEvent> captureLogs() {
    ListAppender<ILoggingEvent> logs = new ListAppender<>();
    logs.start();
    ((Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME)).addAppender(logs);
    return logs;
  }

  static void stopCapture(ListAppender<ILoggingEvent> logs) {
    ((Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME)).detachAppender(logs);
  }

  /**
   * Two thousand connections from one address that never send a request: beyond the per-client limit they are
   * closed at once, the rest after the idle timeout, and meanwhile another client's health check and execution
   * are served promptly.
   */
  @Test
  @Timeout(120)
  void an_idle_flood_from_one_address_leaves_other_clients_served() throws Exception {
    List<Socket> flood = new ArrayList<>();
    try {
      for (int i = 0; i < 2000; i++) {
        flood.add(connect());
      }
      long started = System.nanoTime();
      HttpResponse<String> health = other("GET", "/healthz", null);
      assertThat(health.statusCode()).isEqualTo(200);
      HttpResponse<String> run = other("POST", "/v1/sandboxes/" + sandbox + "/execute",
          new JsonObject().put("command", "echo served").encode());
      assertThat(run.statusCode()).as(run.body()).isEqualTo(200);
      assertThat(new JsonObject(run.body()).getString("stdout")).isEqualTo("served\n");
      assertThat(Duration.ofNanos(System.nanoTime() - started)).as("served promptly").isLessThan(Duration.ofSeconds(10));

      int open = 0;
      for (Socket s : flood) {
        if (!closedByGateway(s, 1)) {
          open++;
        }
      }
      assertThat(open).as("connections the flood still holds").isLessThanOrEqualTo(CAP);
      Waits.upTo(IDLE_SECS + 10).alias("every idle connection closed")
          .until(() -> flood.stream().allMatch(s -> closedByGateway(s, 1)));
    } finally {
      for (Socket s : flood) {
        s.close();
      }
    }
    // the address is free again once its connections are gone
    Waits.upTo(10).ignoreExceptions().until(() -> gw.get("/healthz", null).status() == 200);
  }

  /**
   * The same flood from sixteen addresses, each within its limit (the per-address cap does not stop it): all
   * 3,200 connections are held until the idle timeout, and meanwhile another client is served promptly.
   */
  @Test
  @Timeout(120)
  void an_idle_flood_from_many_addresses_leaves_other_clients_served() throws Exception {
    List<Socket> flood = new ArrayList<>();
    try {
      for (int a = 0; a < 16; a++) {
        InetAddress from = address("127.0.1." + (10 + a));
        for (int i = 0; i < 200; i++) {
          Socket s = new Socket();
          s.bind(new java.net.InetSocketAddress(from, 0));
          s.connect(new java.net.InetSocketAddress("127.0.0.1", port()), 5_000);
          flood.add(s);
        }
      }
      long started = System.nanoTime();
      assertThat(other("GET", "/healthz", null).statusCode()).isEqualTo(200);
      HttpResponse<String> run = other("POST", "/v1/sandboxes/" + sandbox + "/execute",
          new JsonObject().put("command", "echo served").encode());
      assertThat(run.statusCode()).as(run.body()).isEqualTo(200);
      assertThat(new JsonObject(run.body()).getString("stdout")).isEqualTo("served\n");
      assertThat(Duration.ofNanos(System.nanoTime() - started)).as("served promptly").isLessThan(Duration.ofSeconds(10));
      Waits.upTo(IDLE_SECS + 20).alias("every idle connection closed")
          .until(() -> flood.stream().allMatch(s -> closedByGateway(s, 1)));
    } finally {
      for (Socket s : flood) {
        s.close();
      }
    }
  }

  /**
   * A connection that sends nothing, one that never finishes its request head, and one idle after its answer
   * are closed after the idle timeout, not before; a slow answer and a quiet WebSocket are not.
   */
  @Test
  @Timeout(60)
  void connections_without_a_request_in_progress_are_closed_after_the_idle_timeout() throws Exception {
    try (Socket silent = connect(); Socket slowHead = connect(); Socket keptAlive = connect()) {
      long opened = System.nanoTime();
      slowHead.getOutputStream().write("GET /healthz HTTP/1.1\r\nHost: x\r\n".getBytes(StandardCharsets.US_ASCII));
      keptAlive.getOutputStream().write("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
      keptAlive.setSoTimeout(5000);
      byte[] answer = new byte[4096];
      int n = keptAlive.getInputStream().read(answer);
      assertThat(new String(answer, 0, n, StandardCharsets.US_ASCII)).startsWith("HTTP/1.1 200");

      long answered = System.nanoTime();
      assertThat(closedByGateway(silent, 1000)).as("open a second in").isFalse();
      assertThat(closedByGateway(slowHead, 1)).isFalse();
      assertThat(closedByGateway(keptAlive, 1)).isFalse();
      for (Socket s : List.of(silent, slowHead, keptAlive)) {
        assertThat(closedByGateway(s, (IDLE_SECS + 5) * 1000)).isTrue();
      }
      Duration sinceAnswer = Duration.ofNanos(System.nanoTime() - answered);
      assertThat(sinceAnswer).as("idle from its answer on").isGreaterThanOrEqualTo(Duration.ofMillis(IDLE_SECS * 1000 - 500))
          .isLessThan(Duration.ofMillis(IDLE_SECS * 1000 + 1500));
      assertThat(Duration.ofNanos(System.nanoTime() - opened)).isLessThan(Duration.ofMillis(IDLE_SECS * 1000 + 2000));
    }

    // an answer that takes longer than the idle timeout is not cut
    HttpResponse<String> slow = other("POST", "/v1/sandboxes/" + sandbox + "/execute",
        new JsonObject().put("command", "sleep " + (IDLE_SECS + 2) + "; echo slow").encode());
    assertThat(slow.statusCode()).as(slow.body()).isEqualTo(200);
    assertThat(new JsonObject(slow.body()).getString("stdout")).isEqualTo("slow\n");

    // nor a WebSocket with nothing to say for longer
    String exec = gw.post("/v1/sandboxes/" + sandbox + "/executions", key,
        new JsonObject().put("command", "sleep " + (IDLE_SECS + 2) + "; echo late")).json().getString("id");
    try (WsClient ws = WsClient.connect(gw.base + "/v1/sandboxes/" + sandbox + "/executions/" + exec + "/ws", key)) {
      StringBuilder out = new StringBuilder();
      for (JsonObject e = ws.nextJson(); ; e = ws.nextJson()) {
        if ("stdout".equals(e.getString("type"))) {
          out.append(e.getString("data"));
        } else if ("exit".equals(e.getString("type"))) {
          assertThat(e.getString("status")).isEqualTo("completed");
          break;
        }
      }
      assertThat(out).hasToString("late\n");
    }
  }

  /** An upload that keeps moving is not cut, however much longer than the idle timeout it takes. */
  @Test
  @Timeout(60)
  void a_slow_upload_that_keeps_sending_is_not_cut() throws Exception {
    byte[] piece = "x".repeat(100).getBytes(StandardCharsets.US_ASCII);
    int pieces = 2 * IDLE_SECS + 2;
    try (Socket s = connect()) {
      s.setSoTimeout(20_000);
      var out = s.getOutputStream();
      out.write(("PUT /v1/sandboxes/" + sandbox + "/files/content?path=slow.txt HTTP/1.1\r\nHost: x\r\n"
          + "Authorization: Bearer " + key + "\r\nContent-Length: " + (pieces * piece.length) + "\r\n\r\n")
          .getBytes(StandardCharsets.US_ASCII));
      for (int i = 0; i < pieces; i++) {
        out.write(piece);
        out.flush();
        Thread.sleep(600);
      }
      byte[] answer = new byte[4096];
      int n = s.getInputStream().read(answer);
      assertThat(new String(answer, 0, n, StandardCharsets.US_ASCII)).matches("(?s)HTTP/1\\.1 20[01] .*");
    }
    TestGateway.Resp file = gw.get("/v1/sandboxes/" + sandbox + "/files/content?path=slow.txt", key);
    assertThat(file.body()).hasSize(pieces * piece.length);
  }

  /**
   * A body that stops arriving (announced, then never sent, or stopped half way) is 408 after the idle timeout
   * and its connection closed: before sign-in, on a JSON endpoint, and in an upload, which leaves no file.
   */
  @Test
  @Timeout(60)
  void a_body_that_stops_arriving_is_408_and_its_connection_closed() throws Exception {
    String signIn = "POST /v1/dashboard/session HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        + "Content-Length: 1000\r\n\r\n{\"key\":";
    String create = "POST /v1/sandboxes HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + key + "\r\n"
        + "Content-Type: application/json\r\nContent-Length: 500\r\n\r\n{\"backend\":";
    String upload = "PUT /v1/sandboxes/" + sandbox + "/files/content?path=stalled.txt HTTP/1.1\r\nHost: x\r\n"
        + "Authorization: Bearer " + key + "\r\nContent-Length: 2000\r\n\r\n" + "x".repeat(1000);
    for (String request : List.of(signIn, create, upload)) {
      long sent = System.nanoTime();
      try (Socket s = connect()) {
        s.setSoTimeout((IDLE_SECS + 10) * 1000);
        s.getOutputStream().write(request.getBytes(StandardCharsets.US_ASCII));
        s.getOutputStream().flush();
        String answer = new String(s.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        Duration took = Duration.ofNanos(System.nanoTime() - sent);
        assertThat(answer).as(request.lines().findFirst().orElseThrow())
            .startsWith("HTTP/1.1 408 ").contains("the request body stopped arriving");
        assertThat(took).isGreaterThanOrEqualTo(Duration.ofMillis(IDLE_SECS * 1000 - 500))
            .isLessThan(Duration.ofMillis(IDLE_SECS * 1000 + 3000));
      }
    }
    assertThat(gw.get("/v1/sandboxes/" + sandbox + "/files/content?path=stalled.txt", key).status()).isEqualTo(404);
  }

  /** A missing, repeated or malformed Host is 400 in the contract's shape, with nothing in the log. */
  @Test
  void a_malformed_host_is_400_without_a_stack_trace() throws Exception {
    ListAppender<ILoggingEvent> logs = captureLogs();
    try {
      for (String host : new String[] {"[::1", "a b", "exa mple:99999", "h\u00e9llo.example", "x:99999", "x:-1",
          "x:80:80", "@evil"}) {
        for (String path : new String[] {"/healthz", "/openapi.json", "/v1/session"}) {
          String answer = raw("GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\n\r\n");
          assertThat(answer).as(host + " " + path).startsWith("HTTP/1.1 400 ")
              .contains("X-Content-Type-Options: nosniff")
              .endsWith("{\"detail\":\"missing or invalid Host header\"}");
        }
      }
      assertThat(raw("GET /healthz HTTP/1.1\r\n\r\n")).as("no Host at all").startsWith("HTTP/1.1 400 ");
      assertThat(raw("GET /healthz HTTP/1.1\r\nHost: a.example\r\nHost: b.example\r\n\r\n")).as("two")
          .startsWith("HTTP/1.1 400 ");
      assertThat(raw("GET /healthz HTTP/1.0\r\n\r\n")).as("HTTP/1.0 needs none").startsWith("HTTP/1.0 200 ");
      assertThat(raw("GET /healthz HTTP/1.1\r\nHost: gateway.example:8443\r\nConnection: close\r\n\r\n"))
          .startsWith("HTTP/1.1 200 ");
      assertThat(raw("GET /healthz HTTP/1.1\r\nHost: [::1]:8000\r\nConnection: close\r\n\r\n"))
          .startsWith("HTTP/1.1 200 ");
    } finally {
      stopCapture(logs);
    }
    assertThat(logs.list).as("nothing logged an error or a stack trace")
        .noneMatch(e -> e.getLevel().isGreaterOrEqual(Level.ERROR) || e.getThrowableProxy() != null);
  }

  /** The OpenAPI document's server is never taken from the request: a Host aimed at it changes nothing. */
  @Test
  void the_openapi_document_never_names_the_requests_host() throws Exception {
    String answer = raw("GET /openapi.json HTTP/1.1\r\nHost: attacker.invalid\r\nX-Forwarded-Host: attacker.invalid\r\n"
        + "X-Forwarded-Proto: https\r\nConnection: close\r\n\r\n");
    assertThat(answer).startsWith("HTTP/1.1 200 ").doesNotContain("attacker.invalid");
    JsonObject doc = new JsonObject(answer.substring(answer.indexOf("\r\n\r\n") + 4));
    assertThat(doc.containsKey("servers")).as("none: relative to where it was fetched").isFalse();
  }

  /**
   * The sign-in takes only JSON, as the dashboard sends it: a form or text a page elsewhere makes the browser
   * post would sign the visitor in to that page's organization. Anything else is 415, with no cookie.
   */
  @Test
  void the_dashboard_sign_in_takes_only_json() throws Exception {
    String body = new JsonObject().put("api_key", key).encode();
    for (String type : new String[] {"text/plain", "text/plain; charset=utf-8", "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x", "text/json", "application/jsonx", "application/json-patch+json", null}) {
      HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(gw.base + "/v1/dashboard/session"))
          .timeout(Duration.ofSeconds(30)).POST(HttpRequest.BodyPublishers.ofString(body));
      if (type != null) {
        b.header("Content-Type", type);
      }
      HttpResponse<String> r = gw.client.send(b.build(), HttpResponse.BodyHandlers.ofString());
      assertThat(r.statusCode()).as(String.valueOf(type)).isEqualTo(415);
      assertThat(new JsonObject(r.body()).getString("detail")).contains("application/json");
      assertThat(r.headers().firstValue("Set-Cookie")).as(String.valueOf(type)).isEmpty();
    }
    for (String type : new String[] {"application/json", "Application/JSON; charset=UTF-8"}) {
      HttpResponse<String> r = gw.client.send(HttpRequest.newBuilder(URI.create(gw.base + "/v1/dashboard/session"))
          .header("Content-Type", type).POST(HttpRequest.BodyPublishers.ofString(body)).build(),
          HttpResponse.BodyHandlers.ofString());
      assertThat(r.statusCode()).as(type).isEqualTo(200);
      assertThat(r.headers().firstValue("Set-Cookie")).isPresent();
    }
  }
}
