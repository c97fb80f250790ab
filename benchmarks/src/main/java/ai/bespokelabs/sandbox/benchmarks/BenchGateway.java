package ai.bespokelabs.sandbox.benchmarks;

import ai.bespokelabs.sandbox.core.config.ConfigLoader;
import ai.bespokelabs.sandbox.core.config.GatewayConfig;
import ai.bespokelabs.sandbox.gateway.Gateway;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.Comparator;
import java.util.Map;

/**
 * A gateway started in this process on an embedded PostgreSQL (in a temporary data directory), with one
 * organization, its API key and one sandbox on the local backend.
 */
final class BenchGateway implements AutoCloseable {
  final int port;
  final String base;
  final String key;
  final String sandbox;
  final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(10)).build();
  private final Path dataDir;
  private final Gateway gateway;

  private BenchGateway(Path dataDir, int port, Map<String, String> providers) throws IOException {
    this.dataDir = dataDir;
    this.port = port;
    this.base = "http://127.0.0.1:" + port;
    Map<String, String> settings = new java.util.HashMap<>(System.getenv());
    settings.keySet().removeIf(k -> !ai.bespokelabs.sandbox.core.config.ProviderSettings.isProviderKey(k));
    settings.putAll(providers);
    settings.put("PORT", String.valueOf(port));
    settings.put("BESPOKE_DATA_DIR", dataDir.toString());
    // a benchmark's clients all connect from this one loopback address, standing for many clients, and may
    // hold a keep-alive connection unused across phases (KeepAliveClient does not reconnect)
    settings.put("BESPOKE_HTTP_MAX_CONNECTIONS_PER_CLIENT", "0");
    settings.put("BESPOKE_HTTP_IDLE_TIMEOUT_SECS", "3600");
    GatewayConfig config = ConfigLoader.fromMap(settings, System.getProperty("user.home"));
    this.gateway = Gateway.start(config, Clock.systemUTC());
    try {
      String admin = Files.readString(dataDir.resolve("admin-token")).trim();
      this.key = call("POST", "/v1/organizations", new JsonObject().put("name", "bench"), 201,
          "X-Control-Plane-Admin", admin).getJsonObject("api_key").getString("secret");
      this.sandbox = call("POST", "/v1/sandboxes", new JsonObject().put("backend", "local"), 201).getString("id");
    } catch (RuntimeException e) {
      close();
      throw e;
    }
  }

  static BenchGateway start() throws IOException {
    return start(Map.of());
  }

  /** As {@link #start()}, with provider settings (e.g. {@code DAYTONA_API_URL}) over the environment's. */
  static BenchGateway start(Map<String, String> providers) throws IOException {
    Path dataDir = Files.createTempDirectory("gateway-bench-");
    // traversable, as a data directory under /var/lib: local programs of a root gateway run as their own uids
    Files.setPosixFilePermissions(dataDir, java.nio.file.attribute.PosixFilePermissions.fromString("rwx--x--x"));
    int port;
    try (ServerSocket s = new ServerSocket(0)) {
      port = s.getLocalPort();
    }
    return new BenchGateway(dataDir, port, providers);
  }

  /** The path of this sandbox's resource {@code suffix}, e.g. {@code /execute}. */
  String sandboxPath(String suffix) {
    return "/v1/sandboxes/" + sandbox + suffix;
  }

  /**
   * A JSON call with the API key (or the given headers instead); fails with the gateway's answer when the
   * status is not {@code expected}. A 204 answer gives an empty object.
   */
  JsonObject call(String method, String path, JsonObject body, int expected, String... headers) {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(base + path)).timeout(Duration.ofSeconds(30))
        .header("Content-Type", "application/json")
        .method(method, body == null ? HttpRequest.BodyPublishers.noBody()
            : HttpRequest.BodyPublishers.ofString(body.encode()));
    if (headers.length == 0) {
      b.header("Authorization", "Bearer " + key);
    }
    for (int i = 0; i < headers.length; i += 2) {
      b.header(headers[i], headers[i + 1]);
    }
    HttpResponse<String> r;
    try {
      r = http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    } catch (IOException e) {
      throw new UncheckedIOException(method + " " + path + " failed", e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
    if (r.statusCode() != expected) {
      throw new IllegalStateException(method + " " + path + " answered " + r.statusCode() + " (expected "
          + expected + "): " + r.body());
    }
    return r.body().isEmpty() ? new JsonObject() : new JsonObject(r.body());
  }

  /**
   * Latencies (microseconds, sorted) of {@code n} one-row inserts on the gateway's own database, each one
   * statement committed on its own as the gateway's writes are: the floor of every durable step.
   */
  long[] commitLatencies(int n) throws Exception {
    long[] out = new long[n];
    for (int i = 0; i < n; i++) {
      out[i] = commitOnce();
    }
    java.util.Arrays.sort(out);
    return out;
  }

  private boolean probeTable;

  /**
   * One such insert, in microseconds, so a benchmark can interleave it with the calls it measures and see the
   * floor under the same load (the table is dropped with the gateway's data directory).
   */
  long commitOnce() throws Exception {
    var pool = gateway.pool();
    if (!probeTable) {
      await(pool.query("CREATE TABLE IF NOT EXISTS bench_commit_probe (v int)").execute());
      probeTable = true;
    }
    long t0 = System.nanoTime();
    await(pool.preparedQuery("INSERT INTO bench_commit_probe VALUES ($1)").execute(io.vertx.sqlclient.Tuple.of(1)));
    return (System.nanoTime() - t0) / 1000;
  }

  private static <T> T await(io.vertx.core.Future<T> f) throws Exception {
    return f.toCompletionStage().toCompletableFuture().get(30, java.util.concurrent.TimeUnit.SECONDS);
  }

  /** The gateway itself (its pool and Vert.x), for benchmarks that drive it below the HTTP API. */
  Gateway gateway() {
    return gateway;
  }

  /** Stops the gateway and deletes its data directory. */
  @Override
  public void close() {
    try {
      gateway.close();
    } finally {
      try (var walk = Files.walk(dataDir)) {
        walk.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
      } catch (IOException e) {
        System.err.println("could not delete " + dataDir + ": " + e);
      }
    }
  }
}
