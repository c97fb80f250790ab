package ai.bespokelabs.sandbox.benchmarks;

import ai.bespokelabs.sandbox.adapters.e2b.E2bSimulator;
import ai.bespokelabs.sandbox.core.config.ConfigLoader;
import ai.bespokelabs.sandbox.gateway.Gateway;
import ai.bespokelabs.sandbox.testkit.ClusterCertificates;
import io.vertx.core.json.JsonObject;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Three clustered gateway nodes on this machine (one process, one external PostgreSQL server, the cluster on
 * loopback with mutual TLS from certificates made for the run): executions per second with concurrent clients all through one node against the same clients
 * spread over the three, on a cloud backend's simulator (e2b) so process spawning does not dominate; and what
 * a cross-node exec adds: a local sandbox hosted by node A executed through A, and through B (the bus carries
 * the call and the output to A and back).
 *
 * <p>Usage: {@code bin/benchmark cluster [--seconds S] [--clients C] [--iterations N]}
 */
public final class ClusterBenchmark {
  private static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(10)).build();

  private ClusterBenchmark() {}

  public static void main(String[] args) throws Exception {
    int seconds = 15;
    int clients = 16;
    int iterations = 200;
    for (int i = 0; i + 1 < args.length; i += 2) {
      switch (args[i]) {
        case "--seconds" -> seconds = Integer.parseInt(args[i + 1]);
        case "--clients" -> clients = Integer.parseInt(args[i + 1]);
        case "--iterations" -> iterations = Integer.parseInt(args[i + 1]);
        default -> throw new IllegalArgumentException("unknown argument " + args[i]);
      }
    }
    List<Gateway> nodes = new ArrayList<>();
    try (EmbeddedPostgres pg = EmbeddedPostgres.builder().setServerConfig("max_connections", "200").start();
        E2bSimulator e2b = E2bSimulator.start()) {
      try {
        String db = "postgresql://postgres@localhost:" + pg.getPort() + "/postgres";
        int[] ports = {free(), free(), free()};
        int[] cluster = {free(), free(), free()};
        String members = "127.0.0.1:" + cluster[0] + ",127.0.0.1:" + cluster[1] + ",127.0.0.1:" + cluster[2];
        ClusterCertificates certs = ClusterCertificates.newCa(Files.createTempDirectory("cluster-bench-certs-"),
            "cluster-bench-ca");
        for (int i = 0; i < 3; i++) {
          Path data = Files.createTempDirectory("cluster-bench-");
          Files.setPosixFilePermissions(data, java.nio.file.attribute.PosixFilePermissions.fromString("rwx--x--x"));
          Map<String, String> env = new HashMap<>(e2b.env());
          env.putAll(Map.of("PORT", String.valueOf(ports[i]), "BESPOKE_DATA_DIR", data.toString(),
              "BESPOKE_DATABASE_URL", db, "BESPOKE_NODE_ID", "node-" + (char) ('a' + i),
              "BESPOKE_API_KEY_PEPPER", "cluster-bench-pepper-0123456789abcdef",
              "BESPOKE_CONTROL_PLANE_ADMIN_TOKEN", "cluster-bench-admin-0123456789",
              "BESPOKE_CLUSTER", "true", "BESPOKE_CLUSTER_HOST", "127.0.0.1",
              "BESPOKE_CLUSTER_PORT", String.valueOf(cluster[i]), "BESPOKE_CLUSTER_MEMBERS", members));
          env.putAll(certs.node("node-" + (char) ('a' + i), "ip:127.0.0.1"));
          nodes.add(Gateway.start(ConfigLoader.fromMap(env, System.getProperty("user.home")), Clock.systemUTC()));
        }
        String[] bases = Arrays.stream(ports).mapToObj(p -> "http://127.0.0.1:" + p).toArray(String[]::new);
        String key = call("POST", bases[0] + "/v1/organizations", null, new JsonObject().put("name", "bench"), 201,
            "X-Control-Plane-Admin", "cluster-bench-admin-0123456789").getJsonObject("api_key").getString("secret");
        String cloud = call("POST", bases[0] + "/v1/sandboxes", key, new JsonObject().put("backend", "e2b"), 201)
            .getString("id");
        String local = call("POST", bases[0] + "/v1/sandboxes", key, new JsonObject().put("backend", "local"), 201)
            .getString("id");

        System.out.printf("%nThree clustered nodes in one process on %d cores, one PostgreSQL; e2b simulator%n",
            Runtime.getRuntime().availableProcessors());
        throughput(new String[] {bases[0]}, key, cloud, clients, 3); // warm-up
        double one = throughput(new String[] {bases[0]}, key, cloud, clients, seconds);
        double three = throughput(bases, key, cloud, clients, seconds);
        System.out.printf("  %-46s %10.1f execs/s%n", clients + " clients through node A", one);
        System.out.printf("  %-46s %10.1f execs/s  (ratio %.2f)%n", clients + " clients over nodes A, B, C", three,
            three / one);

        latencies(bases[0], key, local, 20);
        latencies(bases[1], key, local, 20); // warm-up
        long[] same = new long[iterations];
        long[] cross = new long[iterations];
        for (int i = 0; i < iterations; i++) { // interleaved, so both see the same machine
          same[i] = once(bases[0], key, local);
          cross[i] = once(bases[1], key, local);
        }
        Arrays.sort(same);
        Arrays.sort(cross);
        int n = iterations;
        System.out.printf("%n  local sandbox hosted by A, exec of true (%d interleaved rounds), microseconds%n", n);
        System.out.printf("  %-46s %10s %10s%n", "", "p50", "p99");
        System.out.printf("  %-46s %10d %10d%n", "through A (same node)", same[n / 2], same[n * 99 / 100]);
        System.out.printf("  %-46s %10d %10d%n", "through B (cross-node)", cross[n / 2], cross[n * 99 / 100]);
        System.out.printf("  %-46s %10d            (ratio p50 %.2f)%n", "added by the cross-node hop",
            cross[n / 2] - same[n / 2], (double) cross[n / 2] / same[n / 2]);
      } finally {
        for (Gateway g : nodes) { // before the database they use goes
          g.close();
        }
      }
    }
    System.exit(0);
  }

  private static double throughput(String[] bases, String key, String sandbox, int clients, int seconds)
      throws Exception {
    AtomicBoolean stop = new AtomicBoolean();
    ExecutorService pool = Executors.newVirtualThreadPerTaskExecutor();
    List<Future<Integer>> done = new ArrayList<>();
    long t0 = System.nanoTime();
    for (int c = 0; c < clients; c++) {
      String base = bases[c % bases.length];
      done.add(pool.submit(() -> {
        int count = 0;
        while (!stop.get()) {
          call("POST", base + "/v1/sandboxes/" + sandbox + "/execute", key, new JsonObject().put("command", "true"),
              200);
          count++;
        }
        return count;
      }));
    }
    Thread.sleep(seconds * 1000L);
    stop.set(true);
    int total = 0;
    for (Future<Integer> f : done) {
      total += f.get();
    }
    pool.shutdown();
    return total / ((System.nanoTime() - t0) / 1e9);
  }

  private static void latencies(String base, String key, String sandbox, int n) {
    for (int i = 0; i < n; i++) {
      once(base, key, sandbox);
    }
  }

  private static long once(String base, String key, String sandbox) {
    long t0 = System.nanoTime();
    call("POST", base + "/v1/sandboxes/" + sandbox + "/execute", key, new JsonObject().put("command", "true"), 200);
    return (System.nanoTime() - t0) / 1000;
  }

  private static JsonObject call(String method, String url, String key, JsonObject body, int expected,
      String... headers) {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(60))
        .header("Content-Type", "application/json")
        .method(method, HttpRequest.BodyPublishers.ofString(body.encode()));
    if (key != null) {
      b.header("Authorization", "Bearer " + key);
    }
    for (int i = 0; i < headers.length; i += 2) {
      b.header(headers[i], headers[i + 1]);
    }
    try {
      HttpResponse<String> r = HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
      if (r.statusCode() != expected) {
        throw new IllegalStateException(method + " " + url + " answered " + r.statusCode() + ": " + r.body());
      }
      return new JsonObject(r.body());
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  private static int free() throws java.io.IOException {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }
}
