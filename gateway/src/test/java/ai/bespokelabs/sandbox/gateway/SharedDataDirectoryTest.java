package ai.bespokelabs.sandbox.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.core.db.DataDirectoryLock;
import ai.bespokelabs.sandbox.testkit.Waits;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.awaitility.core.ConditionTimeoutException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A data directory belongs to one gateway at a time (embedded database included): a second start on it exits at
 * once naming the running one and leaves it serving; a gateway killed with SIGKILL frees it, and the next start
 * stops the database server it left behind.
 */
class SharedDataDirectoryTest {
  private static final Map<String, String> ENV = Map.of("BESPOKE_CONTROL_PLANE_ADMIN_TOKEN", TestGateway.ADMIN);

  @TempDir
  Path dataDir;

  private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

  private int createOrganization(String base) throws Exception {
    return http.send(HttpRequest.newBuilder(URI.create(base + "/v1/organizations"))
        .header("X-Control-Plane-Admin", TestGateway.ADMIN)
        .POST(HttpRequest.BodyPublishers.ofString("{\"name\":\"Acme\"}")).build(),
        HttpResponse.BodyHandlers.ofString()).statusCode();
  }

  private long serverPid() throws Exception {
    return Long.parseLong(Files.readAllLines(dataDir.resolve("postgres/postmaster.pid")).get(0).trim());
  }

  /** Whether process {@code pid} is gone, or goes within a few seconds. */
  private static boolean stopped(long pid) {
    try {
      Waits.upTo(10).until(() -> !ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false));
      return true;
    } catch (ConditionTimeoutException stillAlive) {
      return false;
    }
  }

  @Test
  void a_second_gateway_on_a_data_directory_in_use_exits_at_once_and_the_first_keeps_serving() throws Exception {
    int port = TestGateway.freePort();
    GatewayProcess first = GatewayProcess.start(dataDir, port, ENV);
    long server;
    try {
      server = serverPid();
      String javaBin = ProcessHandle.current().info().command().orElse("java");
      ProcessBuilder pb = new ProcessBuilder(List.of(javaBin, "--enable-native-access=ALL-UNNAMED", "-cp",
          System.getProperty("java.class.path"), Main.class.getName(), "--port",
          String.valueOf(TestGateway.freePort()))).redirectErrorStream(true);
      pb.environment().put("BESPOKE_DATA_DIR", dataDir.toString());
      pb.environment().putAll(ENV);
      long started = System.nanoTime();
      Process second = pb.start();
      try {
        String out = new String(second.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(second.waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(second.exitValue()).as(out).isEqualTo(2);
        assertThat(TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - started)).as("exits at once").isLessThan(20);
        assertThat(out.strip().lines()).as(out).singleElement().asString()
            .startsWith("sandbox-gateway: the data directory " + dataDir + " is in use by another gateway (pid "
                + first.process.pid() + " on host ")
            .contains(", port " + port + ", started ")
            .endsWith("stop that one first, or give this one another directory with BESPOKE_DATA_DIR");
      } finally {
        second.destroyForcibly();
      }

      assertThat(ProcessHandle.of(server).map(ProcessHandle::isAlive)).as("the first's database still runs")
          .contains(true);
      assertThat(createOrganization(first.base)).isEqualTo(201);
    } finally {
      first.process.destroy();
      assertThat(first.process.waitFor(60, TimeUnit.SECONDS)).isTrue();
    }
    assertThat(stopped(server)).as("stopped with its gateway").isTrue();
    assertThat(dataDir.resolve("postgres/postmaster.pid")).doesNotExist();
    assertThat(Files.readString(dataDir.resolve("gateway.log"))).doesNotContain("ERROR").doesNotContain("57P03")
        .doesNotContain("Exception");
    assertThat(Files.readString(dataDir.resolve(DataDirectoryLock.FILE))).as("emptied when released").isEmpty();
  }

  @Test
  void a_gateway_killed_with_sigkill_frees_the_directory_and_the_next_start_stops_its_server() throws Exception {
    int port = TestGateway.freePort();
    GatewayProcess first = GatewayProcess.start(dataDir, port, ENV);
    long server = serverPid();
    first.process.destroyForcibly();
    assertThat(first.process.waitFor(30, TimeUnit.SECONDS)).isTrue();
    assertThat(ProcessHandle.of(server).map(ProcessHandle::isAlive)).as("the server outlived its gateway")
        .contains(true);

    GatewayProcess next = null;
    try {
      next = GatewayProcess.start(dataDir, port, ENV);
      assertThat(stopped(server)).isTrue();
      assertThat(serverPid()).isNotEqualTo(server);
      assertThat(createOrganization(next.base)).isEqualTo(201);
      assertThat(Files.readString(dataDir.resolve(DataDirectoryLock.FILE)))
          .contains("pid=" + next.process.pid()).contains("port=" + port);
    } finally {
      if (next != null) {
        next.process.destroy();
        assertThat(next.process.waitFor(60, TimeUnit.SECONDS)).isTrue();
      }
      ProcessHandle.of(server).ifPresent(ProcessHandle::destroy);
    }
    assertThat(Files.readString(dataDir.resolve("gateway.log")))
        .contains("Stopping an embedded PostgreSQL (pid " + server + ")");
  }
}
