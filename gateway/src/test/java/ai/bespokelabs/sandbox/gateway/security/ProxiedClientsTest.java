package ai.bespokelabs.sandbox.gateway.security;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.gateway.GatewayExtension;
import ai.bespokelabs.sandbox.gateway.TestGateway;
import ai.bespokelabs.sandbox.testkit.Waits;
import ai.bespokelabs.sandbox.testkit.WsClient;
import io.vertx.core.json.JsonObject;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The per-client connection limit, for clients that connect themselves and for those behind a trusted proxy,
 * whose X-Forwarded-For counts only when the proxy is trusted; and the public URL in the OpenAPI document.
 */
@Tag("security")
class ProxiedClientsTest {
  static final int CAP = 3;
  static final String PROXY = "127.0.0.3";
  static final String PUBLIC_URL = "https://sandbox.example.com/api";
  @RegisterExtension
  static final GatewayExtension GATEWAY = new GatewayExtension(() -> Map.of(
      "BESPOKE_HTTP_MAX_CONNECTIONS_PER_CLIENT", String.valueOf(CAP),
      "BESPOKE_TRUSTED_PROXIES", "192.0.2.0/24, " + PROXY,
      "BESPOKE_PUBLIC_URL", PUBLIC_URL + "/"));
  static TestGateway gw;
  static String key;

  @BeforeAll
  static void start() {
    key = gw.bootstrap("Acme");
  }

  static Socket connectFrom(String local) throws IOException {
    int port = Integer.parseInt(gw.base.substring(gw.base.lastIndexOf(':') + 1));
    return new Socket(InetAddress.getByName("127.0.0.1"), port, InetAddress.getByName(local), 0);
  }

  static boolean closedByGateway(Socket s, int waitMillis) {
    try {
      s.setSoTimeout(waitMillis);
      return s.getInputStream().read() == -1;
    } catch (java.net.SocketTimeoutException stillOpen) {
      return false;
    } catch (IOException reset) {
      return true;
    }
  }

  /** Sends a request and reads its answer's head (the body of a stream goes on). */
  static String head(Socket s, String request) throws IOException {
    s.setSoTimeout(10_000);
    s.getOutputStream().write(request.getBytes(StandardCharsets.US_ASCII));
    s.getOutputStream().flush();
    InputStream in = s.getInputStream();
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    while (!out.toString(StandardCharsets.US_ASCII).contains("\r\n\r\n")) {
      int b = in.read();
      if (b == -1) {
        break;
      }
      out.write(b);
    }
    return out.toString(StandardCharsets.US_ASCII);
  }

  /** A long-running request (the organization's event stream) from the proxy, for {@code forwardedFor}. */
  static String events(Socket s, String forwardedFor) throws IOException {
    return head(s, "GET /v1/sandbox-events HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer " + key + "\r\n"
        + "X-Forwarded-For: " + forwardedFor + "\r\n\r\n");
  }

  /** A client holds {@code CAP} connections; the next is closed as it is accepted, whatever it would send. */
  @Test
  @Timeout(60)
  void a_client_over_its_connection_limit_is_closed_at_once() throws Exception {
    List<Socket> held = new ArrayList<>();
    try {
      for (int i = 0; i < CAP; i++) {
        Socket s = connectFrom("127.0.0.4");
        held.add(s);
        // answered: accepted and counted (the event loops accept in parallel)
        assertThat(head(s, "GET /healthz HTTP/1.1\r\nHost: gw\r\n\r\n")).startsWith("HTTP/1.1 200");
      }
      try (Socket over = connectFrom("127.0.0.4")) {
        over.getOutputStream().write("GET /healthz HTTP/1.1\r\nHost: gw\r\nX-Forwarded-For: 203.0.113.1\r\n\r\n"
            .getBytes(StandardCharsets.US_ASCII));
        assertThat(closedByGateway(over, 5000)).as("over the limit: its X-Forwarded-For counts for nothing").isTrue();
      }
      for (Socket s : held) {
        assertThat(closedByGateway(s, 1)).as("the ones it holds").isFalse();
      }
      try (Socket elsewhere = connectFrom("127.0.0.5")) {
        assertThat(head(elsewhere, "GET /healthz HTTP/1.1\r\nHost: gw\r\n\r\n")).startsWith("HTTP/1.1 200");
      }
      held.remove(0).close();
      Waits.upTo(10).alias("a closed connection frees its place").ignoreExceptions().until(() -> {
        try (Socket again = connectFrom("127.0.0.4")) {
          return head(again, "GET /healthz HTTP/1.1\r\nHost: gw\r\nConnection: close\r\n\r\n").startsWith("HTTP/1.1 200");
        }
      });
    } finally {
      for (Socket s : held) {
        s.close();
      }
    }
  }

  /**
   * A trusted proxy's connections are not limited as its own; each request counts for the client its
   * X-Forwarded-For names (the rightmost address the proxy did not write itself), and one over is 429.
   */
  @Test
  @Timeout(60)
  void behind_a_trusted_proxy_the_limit_applies_to_the_forwarded_client() throws Exception {
    List<Socket> proxy = new ArrayList<>();
    try {
      for (int i = 0; i < 3 * CAP; i++) {
        proxy.add(connectFrom(PROXY));
      }
      for (Socket s : proxy) {
        assertThat(closedByGateway(s, 1)).as("the proxy's connections are not its client's").isFalse();
      }
      for (int i = 0; i < CAP; i++) {
        // the left entry is the client's to write; the proxies' own entries are skipped
        assertThat(events(proxy.get(i), "198.51.100." + i + ", 203.0.113.7, 192.0.2.10")).startsWith("HTTP/1.1 200");
      }
      String over = events(proxy.get(CAP), "198.51.100.99, 203.0.113.7");
      assertThat(over).startsWith("HTTP/1.1 429").containsIgnoringCase("Retry-After");
      String body = new String(proxy.get(CAP).getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      assertThat(new JsonObject(body).getString("detail")).isEqualTo("too many concurrent connections from this client");
      assertThat(events(proxy.get(CAP + 1), "203.0.113.8")).as("another client").startsWith("HTTP/1.1 200");

      proxy.get(0).close(); // one of 203.0.113.7's streams ends
      Waits.upTo(10).alias("a finished request frees its place").ignoreExceptions().until(() -> {
        try (Socket s = connectFrom(PROXY)) {
          return head(s, "GET /healthz HTTP/1.1\r\nHost: gw\r\nX-Forwarded-For: 203.0.113.7\r\nConnection: close\r\n\r\n")
              .startsWith("HTTP/1.1 200");
        }
      });
    } finally {
      for (Socket s : proxy) {
        s.close();
      }
    }
  }

  /** A connection upgraded to a WebSocket gives its place back when it closes, like any other. */
  @Test
  @Timeout(120)
  void closed_websockets_give_their_place_back() throws Exception {
    String sandbox = gw.sandbox(key, null).getString("id");
    for (int i = 0; i < 2 * CAP; i++) {
      String exec = gw.post("/v1/sandboxes/" + sandbox + "/executions", key, new JsonObject().put("command", "true"))
          .json().getString("id");
      try (WsClient ws = WsClient.connect(gw.base + "/v1/sandboxes/" + sandbox + "/executions/" + exec + "/ws", key)) {
        for (JsonObject e = ws.nextJson(); !"exit".equals(e.getString("type")); e = ws.nextJson()) {
          // output until the exit event
        }
      }
    }
    Waits.upTo(10).alias("this address can still connect").ignoreExceptions().until(() -> {
      try (Socket s = connectFrom("127.0.0.1")) {
        return head(s, "GET /healthz HTTP/1.1\r\nHost: gw\r\nConnection: close\r\n\r\n").startsWith("HTTP/1.1 200");
      }
    });
  }

  @Test
  void the_openapi_document_names_the_public_url_whatever_the_host() throws Exception {
    try (Socket s = connectFrom("127.0.0.6")) {
      s.setSoTimeout(10_000);
      s.getOutputStream().write("GET /openapi.json HTTP/1.1\r\nHost: attacker.invalid\r\nConnection: close\r\n\r\n"
          .getBytes(StandardCharsets.US_ASCII));
      String answer = new String(s.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      assertThat(answer).startsWith("HTTP/1.1 200").doesNotContain("attacker.invalid");
      JsonObject doc = new JsonObject(answer.substring(answer.indexOf("\r\n\r\n") + 4));
      assertThat(doc.getJsonArray("servers").getJsonObject(0).getString("url")).isEqualTo(PUBLIC_URL);
    }
  }
}
