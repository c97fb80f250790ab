package ai.bespokelabs.sandbox.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Retries against a small local HTTP stub: only retryable errors, after the provider's retry_after_ms. */
class RetryTest {
  private static final String RETRYABLE = """
      {"detail":{"message":"Provider operation failed.","code":"unknown","backend":"e2b","op":"execute",
      "retryable":true,"outcome":"failed","context":{"provider_status":503,"retry_after_ms":700,
      "retry_after_secs":1}}}""";
  private static final String RESULT = """
      {"request_id":"r","execution_id":"exe_00000000000000000000000000000001","status":"completed","stdout":"ok\\n",
      "stderr":"","exit_code":0,"stdout_truncated":false,"stderr_truncated":false,"timed_out":false,
      "duration_ms":5,"last_seq":1,"usage":{"runtime_seconds":"0.005","provider_cost_usd":"0",
      "customer_cost_usd":"0"}}""";

  private HttpServer server;
  private final List<Long> arrivals = new CopyOnWriteArrayList<>();
  private final List<String> keys = new CopyOnWriteArrayList<>();
  private final AtomicInteger failuresLeft = new AtomicInteger();
  private volatile String failure = RETRYABLE;
  private volatile int failureStatus = 503;

  @BeforeEach
  void start() throws IOException {
    server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    server.createContext("/", exchange -> {
      arrivals.add(System.nanoTime());
      keys.add(exchange.getRequestHeaders().getFirst("Idempotency-Key"));
      exchange.getRequestBody().readAllBytes();
      boolean fail = failuresLeft.getAndDecrement() > 0;
      byte[] body = (fail ? failure : RESULT).getBytes(StandardCharsets.UTF_8);
      exchange.getResponseHeaders().add("Content-Type", "application/json");
      exchange.sendResponseHeaders(fail ? failureStatus : 200, body.length);
      exchange.getResponseBody().write(body);
      exchange.close();
    });
    server.start();
  }

  @AfterEach
  void stop() {
    server.stop(0);
  }

  private SandboxClient client() {
    return SandboxClient.builder().url("http://127.0.0.1:" + server.getAddress().getPort()).apiKey("k")
        .retry(new Retry(3, Duration.ofMillis(10), Duration.ofMillis(20))).build();
  }

  @Test
  void aRetryableErrorIsRepeatedAfterRetryAfterMsWithTheSameIdempotencyKey() {
    failuresLeft.set(1);
    ExecutionResult r = client().execute("sbx_1", ExecuteRequest.shell("echo ok"));

    assertThat(r.stdout()).isEqualTo("ok\n");
    assertThat(arrivals).hasSize(2);
    long waitedMs = (arrivals.get(1) - arrivals.get(0)) / 1_000_000;
    assertThat(waitedMs).isGreaterThanOrEqualTo(700);
    assertThat(keys.get(0)).startsWith("idem_").isEqualTo(keys.get(1));
  }

  @Test
  void retriesStopAtMaxAttemptsAndSurfaceTheTypedError() {
    failuresLeft.set(10);
    failure = RETRYABLE.replace("700", "1");

    assertThatThrownBy(() -> client().execute("sbx_1", ExecuteRequest.shell("echo ok")))
        .isInstanceOfSatisfying(ProviderException.class, e -> {
          assertThat(e.status()).isEqualTo(503);
          assertThat(e.code()).isEqualTo("unknown");
          assertThat(e.backend()).isEqualTo("e2b");
          assertThat(e.op()).isEqualTo("execute");
          assertThat(e.retryable()).isTrue();
          assertThat(e.outcome()).isEqualTo("failed");
          assertThat(e.retryAfterMs()).isEqualTo(1);
          assertThat(e.context()).containsEntry("provider_status", 503);
        });
    assertThat(arrivals).hasSize(3);
  }

  @Test
  void aNonRetryableErrorIsNotRepeated() {
    failuresLeft.set(1);
    failureStatus = 504;
    failure = RETRYABLE.replace("\"retryable\":true", "\"retryable\":false").replace("\"unknown\"", "\"timeout\"");

    assertThatThrownBy(() -> client().execute("sbx_1", ExecuteRequest.shell("echo ok")))
        .isInstanceOfSatisfying(ProviderException.class, e -> {
          assertThat(e.status()).isEqualTo(504);
          assertThat(e.code()).isEqualTo("timeout");
          assertThat(e.retryable()).isFalse();
        });
    assertThat(arrivals).hasSize(1);
  }

  @Test
  void aPlainDetailIsASandboxExceptionWithItsStatusAndMessage() {
    failuresLeft.set(1);
    failureStatus = 404;
    failure = "{\"detail\":\"sandbox not found\"}";

    assertThatThrownBy(() -> client().get("sbx_1")).isExactlyInstanceOf(SandboxException.class)
        .hasMessage("sandbox not found").satisfies(e -> {
          assertThat(((SandboxException) e).status()).isEqualTo(404);
          assertThat(((SandboxException) e).code()).isNull();
        });
    assertThat(arrivals).hasSize(1);
  }

  @Test
  void aValidationListJoinsItsMessages() {
    failuresLeft.set(1);
    failureStatus = 422;
    failure = """
        {"detail":[{"type":"int_parsing","loc":["body","timeout_secs"],"msg":"Input should be a valid integer",
        "input":"x"}]}""";

    assertThatThrownBy(() -> client().create(CreateSandbox.on("local")))
        .isExactlyInstanceOf(SandboxException.class)
        .hasMessage("Input should be a valid integer ([\"body\",\"timeout_secs\"])")
        .satisfies(e -> {
          assertThat(((SandboxException) e).status()).isEqualTo(422);
          assertThat(((SandboxException) e).code()).isNull();
          assertThat(((SandboxException) e).detail().isArray()).isTrue();
        });
  }

  @Test
  void aPolicyRefusalIsAPolicyDeniedException() {
    failuresLeft.set(1);
    failureStatus = 403;
    failure = """
        {"detail":{"message":"Concurrent sandbox limit has been reached.","code":"policy_denied",
        "policy":"max_concurrent_sandboxes","retryable":false,"current":3,"limit":3}}""";

    assertThatThrownBy(() -> client().create(CreateSandbox.on("local")))
        .isInstanceOfSatisfying(PolicyDeniedException.class, e -> {
          assertThat(e.status()).isEqualTo(403);
          assertThat(e.code()).isEqualTo("policy_denied");
          assertThat(e.policy()).isEqualTo("max_concurrent_sandboxes");
          assertThat(e.current()).isEqualTo("3");
          assertThat(e.limit()).isEqualTo("3");
        });
  }
}
