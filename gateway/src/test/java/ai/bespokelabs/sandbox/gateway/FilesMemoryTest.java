package ai.bespokelabs.sandbox.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.core.testing.TestDatabase;
import io.vertx.core.json.JsonObject;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A 200 MiB file goes in and out of a sandbox through a gateway whose whole heap is 96 MiB: if any layer
 * held the file (or a large part of it), the gateway would run out of memory. Every step has its own bound;
 * a step that fails leaves the gateway's thread dump and log in {@code target/FilesMemoryTest-gateway.txt}.
 */
class FilesMemoryTest {
  static final long SIZE = 200L << 20;
  static final Duration CALL = Duration.ofSeconds(30);
  static final Duration TRANSFER = Duration.ofSeconds(60);

  @Test
  void a_file_larger_than_the_gateways_heap_round_trips_intact() throws Exception {
    Path dataDir = Files.createTempDirectory("gateway-memory-");
    int port = TestGateway.freePort();
    GatewayProcess gateway = GatewayProcess.start(dataDir, port, Map.of("BESPOKE_DATABASE_URL",
        TestDatabase.newDatabaseUrl(), "BESPOKE_CONTROL_PLANE_ADMIN_TOKEN", TestGateway.ADMIN,
        "BESPOKE_HTTP_INSTANCES", "1"), List.of("-Xmx96m"));
    HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(CALL).build();
    String step = "create the organization";
    try {
      String key = new JsonObject(http.send(HttpRequest.newBuilder(URI.create(gateway.base + "/v1/organizations"))
              .header("X-Control-Plane-Admin", TestGateway.ADMIN).header("Content-Type", "application/json")
              .timeout(CALL).POST(HttpRequest.BodyPublishers.ofString("{\"name\":\"Big\"}")).build(),
          HttpResponse.BodyHandlers.ofString()).body()).getJsonObject("api_key").getString("secret");
      step = "create the sandbox";
      String id = new JsonObject(http.send(HttpRequest.newBuilder(URI.create(gateway.base + "/v1/sandboxes"))
              .header("Authorization", "Bearer " + key).header("Content-Type", "application/json")
              .timeout(CALL).POST(HttpRequest.BodyPublishers.ofString("{\"backend\":\"local\"}")).build(),
          HttpResponse.BodyHandlers.ofString()).body()).getString("id");
      String url = gateway.base + "/v1/sandboxes/" + id + "/files/content?path=big.bin";

      step = "upload";
      FilesTest.Generated data = new FilesTest.Generated(SIZE);
      HttpResponse<String> up = http.send(HttpRequest.newBuilder(URI.create(url)).header("Authorization", "Bearer " + key)
          .timeout(TRANSFER).PUT(HttpRequest.BodyPublishers.ofInputStream(() -> data)).build(),
          HttpResponse.BodyHandlers.ofString());
      assertThat(up.statusCode()).as(up.body()).isEqualTo(201);
      String sent = HexFormat.of().formatHex(data.sha.digest());

      step = "download";
      HttpResponse<InputStream> down = http.send(HttpRequest.newBuilder(URI.create(url))
          .header("Authorization", "Bearer " + key).timeout(TRANSFER).GET().build(),
          HttpResponse.BodyHandlers.ofInputStream());
      MessageDigest sha = MessageDigest.getInstance("SHA-256");
      long total = 0;
      try (InputStream in = down.body()) {
        byte[] buf = new byte[1 << 16];
        for (int n; (n = in.read(buf)) > 0; ) {
          sha.update(buf, 0, n);
          total += n;
        }
      }
      assertThat(total).isEqualTo(SIZE);
      assertThat(HexFormat.of().formatHex(sha.digest())).isEqualTo(sent);
      assertThat(gateway.process.isAlive()).isTrue();
      assertThat(Files.readString(dataDir.resolve("gateway.log"))).doesNotContain("OutOfMemoryError");
      step = null;
    } catch (Exception | AssertionError e) {
      throw new AssertionError(step + " failed (" + e + "); the gateway's threads and log: "
          + keepDiagnostics(gateway, dataDir), e);
    } finally {
      gateway.process.destroy();
      if (!gateway.process.waitFor(30, TimeUnit.SECONDS)) {
        gateway.process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
      }
      try (var walk = Files.walk(dataDir)) {
        walk.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
      }
    }
  }

  /** Writes the gateway's thread dump and log where the test reports are, before the data directory goes. */
  private static Path keepDiagnostics(GatewayProcess gateway, Path dataDir) {
    Path out = Path.of("target", "FilesMemoryTest-gateway.txt").toAbsolutePath();
    StringBuilder text = new StringBuilder();
    try {
      Path jcmd = Path.of(ProcessHandle.current().info().command().orElse("java")).resolveSibling("jcmd");
      Process dump = new ProcessBuilder(jcmd.toString(), String.valueOf(gateway.process.pid()), "Thread.print")
          .redirectErrorStream(true).start();
      byte[] threads = dump.getInputStream().readAllBytes();
      dump.waitFor(30, TimeUnit.SECONDS);
      text.append(new String(threads, StandardCharsets.UTF_8)).append("\n---- gateway.log ----\n")
          .append(Files.readString(dataDir.resolve("gateway.log")));
      Files.writeString(out, text);
    } catch (Exception e) {
      return Path.of("(diagnostics not kept: " + e + ")");
    }
    return out;
  }
}
