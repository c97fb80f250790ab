package ai.bespokelabs.sandbox.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.adapters.e2b.E2bSimulator;
import ai.bespokelabs.sandbox.core.testing.TestDatabase;
import ai.bespokelabs.sandbox.testkit.ClusterCertificates;
import ai.bespokelabs.sandbox.testkit.SseClient;
import ai.bespokelabs.sandbox.testkit.Waits;
import ai.bespokelabs.sandbox.testkit.WsClient;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Three gateway JVMs on loopback, clustered over TLS with certificates of a test CA, on one external PostgreSQL (the test's, a plain
 * server): a local sandbox made through node A is executed and streamed through B, with stdin and signals
 * through C; a cloud sandbox is served by any node; A killed with SIGKILL mid-stream ends B's watcher with a
 * failed exit within the take-over bound, the sandbox failed with reason node_lost and its cost ending at
 * A's last heartbeat; A restarted kills what its failed sandbox left running; C stopped with SIGTERM drains
 * (readiness 503, no new local sandboxes) while its running execution finishes.
 */
class ClusterTest {
  static final String PEPPER = "cluster-test-pepper-0123456789abcdef";
  static final long TAKE_OVER_SECS = 15;

  @TempDir
  static Path dirs;

  static E2bSimulator sim;
  static String database;
  static Map<String, String> env;
  static final List<String> NODES = List.of("a", "b", "c");
  static final Map<String, Integer> HTTP_PORTS = new HashMap<>();
  static final Map<String, Integer> CLUSTER_PORTS = new HashMap<>();
  static final Map<String, GatewayProcess> GW = new HashMap<>();
  static final Map<String, Map<String, String>> NODE_CERTS = new HashMap<>();
  static ClusterCertificates certs;
  static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

  @BeforeAll
  static void start() throws Exception {
    sim = E2bSimulator.start();
    database = TestDatabase.newDatabaseUrl();
    List<String> members = new ArrayList<>();
    for (String n : NODES) {
      HTTP_PORTS.put(n, TestGateway.freePort());
      CLUSTER_PORTS.put(n, freePair());
      members.add("127.0.0.1:" + CLUSTER_PORTS.get(n));
    }
    Path catalog = dirs.resolve("pricing.json");
    Files.writeString(catalog, """
        {"last_updated": "2026-11-01", "backends": {
          "local": {"vcpu_per_hour_usd": 0.036, "ram_gib_per_hour_usd": 0.018}}}""");
    env = new HashMap<>(sim.env());
    env.put("BESPOKE_PRICING_FILE", catalog.toString());
    env.putAll(Map.of("BESPOKE_DATABASE_URL", database, "BESPOKE_CONTROL_PLANE_ADMIN_TOKEN", TestGateway.ADMIN,
        "BESPOKE_API_KEY_PEPPER", PEPPER, "BESPOKE_SUPERVISION_INTERVAL_SECS", "1", "BESPOKE_CLUSTER", "true",
        "BESPOKE_CLUSTER_HOST", "127.0.0.1", "BESPOKE_CLUSTER_MEMBERS", String.join(",", members),
        "BESPOKE_DRAIN_SECS", "20"));
    certs = ClusterCertificates.newCa(dirs.resolve("certs"), "cluster-test-ca");
    for (String n : NODES) {
      NODE_CERTS.put(n, certs.node(n, "ip:127.0.0.1"));
    }
    for (String n : NODES) { // one after the other: each start is CPU-bound
      GW.put(n, startNode(n));
    }
  }

  @AfterAll
  static void stop() throws Exception {
    for (GatewayProcess g : GW.values()) {
      g.process.destroyForcibly();
      g.process.waitFor(30, TimeUnit.SECONDS);
    }
    for (String n : NODES) { // kept for a look after a failure
      Path log = dirs.resolve(n).resolve("gateway.log");
      if (Files.exists(log)) {
        Files.copy(log, Path.of("target", "cluster-test-" + n + ".log"),
            java.nio.file.StandardCopyOption.REPLACE_EXISTING);
      }
    }
    if (sim != null) {
      sim.close();
    }
  }

  static GatewayProcess startNode(String n) throws Exception {
    Path dir = dirs.resolve(n);
    Files.createDirectories(dir);
    Map<String, String> nodeEnv = new HashMap<>(env);
    nodeEnv.put("BESPOKE_NODE_ID", n);
    nodeEnv.putAll(NODE_CERTS.get(n));
    nodeEnv.put("BESPOKE_CLUSTER_PORT", String.valueOf(CLUSTER_PORTS.get(n)));
    try {
      // the C1 compiler alone: a quicker start, which matters on a small machine
      return GatewayProcess.start(dir, HTTP_PORTS.get(n), nodeEnv, List.of("-XX:TieredStopAtLevel=1"));
    } catch (RuntimeException | Error e) {
      throw new AssertionError("node " + n + " did not start: " + Files.readString(dir.resolve("gateway.log")), e);
    }
  }

  /** A free port whose successor is free too (the cluster port and the event bus's). */
  static int freePair() throws IOException {
    for (int i = 0; i < 50; i++) {
      int p = TestGateway.freePort();
      try (ServerSocket next = new ServerSocket(p + 1)) {
        return p;
      } catch (IOException taken) {
        // try another
      }
    }
    throw new IOException("no two free consecutive ports");
  }

  static HttpResponse<String> send(String node, String method, String path, String key, String body)
      throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(GW.get(node).base + path))
        .header("X-Control-Plane-Admin", TestGateway.ADMIN).timeout(Duration.ofSeconds(60));
    if (key != null) {
      b.header("Authorization", "Bearer " + key);
    }
    if (body != null) {
      b.header("Content-Type", "application/json");
    }
    b.method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body));
    return HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  static JsonObject call(String node, String method, String path, String key, String body, int status)
      throws Exception {
    HttpResponse<String> r = send(node, method, path, key, body);
    assertThat(r.statusCode()).as(method + " " + path + " on " + node + ": " + r.body()).isEqualTo(status);
    return r.body().isEmpty() ? new JsonObject() : new JsonObject(r.body());
  }

  static SseClient stream(String node, String key, String sandbox, String exec) {
    return SseClient.open(GW.get(node).base + "/v1/sandboxes/" + sandbox + "/executions/" + exec + "/stream", key,
        "GET", null);
  }

  /** The output of the stream up to its exit event, which it returns; the output goes to {@code out}. */
  static SseClient.Event untilExit(SseClient sse, StringBuilder out) {
    for (SseClient.Event e = sse.next(); e != null; e = sse.next()) {
      if (e.isOutput()) {
        out.append(new String(e.bytes(), StandardCharsets.UTF_8));
      } else if ("exit".equals(e.name())) {
        return e;
      }
    }
    return null;
  }

  static WsClient socket(String node, String key, String sandbox, String exec) {
    return WsClient.connect(GW.get(node).base + "/v1/sandboxes/" + sandbox + "/executions/" + exec + "/ws", key);
  }

  /** The WebSocket's output up to its exit event, which it returns; the output goes to {@code out}. */
  static JsonObject untilExit(WsClient ws, StringBuilder out) {
    for (JsonObject e = ws.nextJson(); ; e = ws.nextJson()) {
      if ("stdout".equals(e.getString("type"))) {
        out.append(e.getString("data"));
      } else if ("exit".equals(e.getString("type"))) {
        return e;
      }
    }
  }

  @Test
  void three_nodes_serve_as_one_and_survive_the_loss_of_one() throws Exception {
    String key = call("a", "POST", "/v1/organizations", null, "{\"name\":\"Acme\"}", 201)
        .getJsonObject("api_key").getString("secret");

    // a local sandbox made through A lives on A; B runs and streams it, C feeds its stdin
    JsonObject local = call("a", "POST", "/v1/sandboxes", key, "{\"backend\":\"local\",\"timeout_secs\":3600}", 201);
    String sbx = local.getString("id");
    String cat = call("b", "POST", "/v1/sandboxes/" + sbx + "/executions", key,
        "{\"command\":\"cat; echo done\",\"stdin\":true}", 202).getString("id");
    try (SseClient sse = stream("b", key, sbx, cat); WsClient ws = socket("c", key, sbx, cat)) {
      call("c", "POST", "/v1/sandboxes/" + sbx + "/executions/" + cat + "/stdin", key, "hello over the bus\n", 204);
      call("c", "POST", "/v1/sandboxes/" + sbx + "/executions/" + cat + "/stdin?eof=true", key, null, 204);
      StringBuilder out = new StringBuilder();
      SseClient.Event exit = untilExit(sse, out);
      assertThat(out.toString()).isEqualTo("hello over the bus\ndone\n");
      assertThat(exit.data().getString("status")).isEqualTo("completed");
      assertThat(exit.data().getInteger("exit_code")).isZero();
      StringBuilder overSocket = new StringBuilder();
      assertThat(untilExit(ws, overSocket).getString("status")).isEqualTo("completed");
      assertThat(overSocket.toString()).as("the WebSocket through C").isEqualTo("hello over the bus\ndone\n");
    }
    // a stream resumed through C misses nothing; a signal through C reaches the program on A
    String sleeper = call("b", "POST", "/v1/sandboxes/" + sbx + "/executions", key,
        "{\"command\":\"echo one; sleep 0.5; echo two; sleep 60\"}", 202).getString("id");
    try (SseClient sse = stream("b", key, sbx, sleeper);
        SseClient resumed = SseClient.open(GW.get("c").base + "/v1/sandboxes/" + sbx + "/executions/" + sleeper
            + "/stream", key, "GET", null, "Last-Event-ID", "1")) {
      SseClient.Event first = sse.next();
      assertThat(first.id()).isEqualTo("1");
      SseClient.Event second = resumed.next();
      assertThat(second.id()).isEqualTo("2");
      assertThat(new String(second.bytes(), StandardCharsets.UTF_8)).isEqualTo("two\n");
      call("c", "POST", "/v1/sandboxes/" + sbx + "/executions/" + sleeper + "/signal", key,
          "{\"signal\":\"TERM\"}", 204);
      StringBuilder out = new StringBuilder(new String(first.bytes(), StandardCharsets.UTF_8));
      SseClient.Event exit = untilExit(sse, out);
      assertThat(out.toString()).isEqualTo("one\ntwo\n");
      assertThat(exit.data().getInteger("exit_code")).as(exit.data().encode()).isNotZero();
      assertThat(untilExit(resumed, new StringBuilder()).data().getString("status"))
          .isEqualTo(exit.data().getString("status"));
    }
    JsonObject ran = call("c", "POST", "/v1/sandboxes/" + sbx + "/execute", key, "{\"command\":\"echo hi\"}", 200);
    assertThat(ran.getString("stdout")).isEqualTo("hi\n");

    // a slow reader on C holds back a program on A: credits cross the bus, output is not piled up in between
    String flood = call("b", "POST", "/v1/sandboxes/" + sbx + "/executions", key,
        new JsonObject().put("code", StreamingTest.FLOOD).encode(), 202).getString("id");
    // the stream attaches after the program started: what it wrote before is reported as a gap, not in flight
    try (SseClient slow = SseClient.openSlowReader(GW.get("c").base + "/v1/sandboxes/" + sbx + "/executions/" + flood
        + "/stream", key, "GET", null)) {
      long consumed = 0;
      long t0 = System.nanoTime();
      while (System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(3)) {
        SseClient.Event e = slow.next();
        assertThat(e).as("the stream ended early").isNotNull();
        if (e.isOutput()) {
          consumed += e.bytes().length;
        } else if ("gap".equals(e.name())) {
          consumed += e.data().getLong("bytes");
        }
        Thread.sleep(Math.max(2, e.isOutput() ? e.bytes().length / 16384 : 0)); // about 16 MB/s at most
      }
      HttpResponse<String> progress = send("a", "GET", "/v1/sandboxes/" + sbx + "/files/content?path=progress", key,
          null);
      assertThat(progress.statusCode()).as(progress.body()).isEqualTo(200);
      long produced = Long.parseLong(progress.body().trim());
      assertThat(produced).as("the program is held back by the slow reader").isLessThan(256L << 20);
      assertThat(produced - consumed).as("bytes in flight between the nodes stay bounded").isLessThan(24L << 20);
      call("c", "POST", "/v1/sandboxes/" + sbx + "/executions/" + flood + "/signal", key, "{\"signal\":\"KILL\"}", 204);
    }

    // a policy holds across nodes: 200 concurrent creates spread over the three against a cap of 5
    String capped = call("b", "POST", "/v1/organizations", null, "{\"name\":\"Capped\"}", 201)
        .getJsonObject("api_key").getString("secret");
    call("c", "PUT", "/v1/policies/current", capped, "{\"max_concurrent_sandboxes\":5}", 200);
    List<java.util.concurrent.CompletableFuture<HttpResponse<String>>> creates = new ArrayList<>();
    for (int i = 0; i < 200; i++) {
      creates.add(HTTP.sendAsync(HttpRequest.newBuilder(URI.create(GW.get(NODES.get(i % 3)).base + "/v1/sandboxes"))
          .header("Authorization", "Bearer " + capped).header("Content-Type", "application/json")
          .timeout(Duration.ofSeconds(120)).POST(HttpRequest.BodyPublishers.ofString("{\"backend\":\"e2b\"}")).build(),
          HttpResponse.BodyHandlers.ofString()));
    }
    Map<Integer, Integer> statuses = new java.util.TreeMap<>();
    for (var f : creates) {
      statuses.merge(f.get(180, TimeUnit.SECONDS).statusCode(), 1, Integer::sum);
    }
    assertThat(statuses.get(201)).as(statuses.toString()).isEqualTo(5);

    // a cloud sandbox is served by any node
    String cloud = call("b", "POST", "/v1/sandboxes", key, "{\"backend\":\"e2b\"}", 201).getString("id");
    assertThat(call("a", "POST", "/v1/sandboxes/" + cloud + "/execute", key, "{\"command\":\"echo cloud\"}", 200)
        .getString("stdout")).isEqualTo("cloud\n");

    // a key every node has cached, revoked through A, is refused by B and C well before their caches expire
    String reader = call("a", "POST", "/v1/api-keys", key, "{\"name\":\"reader\",\"scopes\":[\"sandboxes:read\"]}",
        201).getString("secret");
    String readerId = null;
    for (String node : NODES) {
      readerId = call(node, "GET", "/v1/session", reader, null, 200).getString("api_key_id");
    }
    long revoked = System.nanoTime();
    call("a", "DELETE", "/v1/api-keys/" + readerId, key, null, 204);
    for (String node : List.of("b", "c")) {
      Waits.upTo(3).alias("node " + node + " refuses the revoked key")
          .until(() -> send(node, "GET", "/v1/session", reader, null).statusCode() == 401);
    }
    assertThat(Duration.ofNanos(System.nanoTime() - revoked)).as("refused on every node before a cache expiry")
        .isLessThan(Duration.ofSeconds(3));

    // A dies mid-stream: C's watcher ends with a failed exit within the take-over bound
    String counter = call("b", "POST", "/v1/sandboxes/" + sbx + "/executions", key,
        "{\"command\":\"sleep 300 >/dev/null 2>&1 & echo $!; while true; do echo tick; sleep 0.1; done\"}", 202).getString("id");
    long orphan;
    OffsetDateTime killedAt;
    long tookMs;
    try (SseClient sse = stream("c", key, sbx, counter); WsClient ws = socket("b", key, sbx, counter)) {
      SseClient.Event first = sse.next();
      orphan = Long.parseLong(new String(first.bytes(), StandardCharsets.UTF_8).lines().findFirst().orElseThrow()
          .trim());
      sse.next();
      killedAt = OffsetDateTime.now();
      long killed = System.nanoTime();
      GW.get("a").process.destroyForcibly();
      GW.get("a").process.waitFor(30, TimeUnit.SECONDS);
      SseClient.Event exit = untilExit(sse, new StringBuilder());
      tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - killed);
      assertThat(exit).as("the watcher got an exit event").isNotNull();
      assertThat(exit.data().getString("status")).isEqualTo("failed");
      assertThat(exit.data().getJsonObject("error").getString("code")).isEqualTo("node_lost");
      assertThat(sse.next()).as("the stream ended after the exit").isNull();
      JsonObject overSocket = untilExit(ws, new StringBuilder());
      assertThat(overSocket.getString("status")).isEqualTo("failed");
      assertThat(overSocket.getJsonObject("error").getString("code")).isEqualTo("node_lost");
    }
    assertThat(tookMs).as("the stream ended within the take-over bound").isLessThan(TAKE_OVER_SECS * 1000);
    JsonObject failed = call("b", "GET", "/v1/sandboxes/" + sbx, key, null, 200);
    assertThat(failed.getString("status")).isEqualTo("failed");
    assertThat(failed.getString("termination_reason")).isEqualTo("node_lost");
    assertThat(OffsetDateTime.parse(failed.getString("failed_at"))).as("its end is A's last heartbeat")
        .isBeforeOrEqualTo(killedAt);
    assertThat(call("c", "GET", "/v1/sandboxes/" + sbx + "/executions/" + counter, key, null, 200)
        .getString("status")).isEqualTo("failed");
    OffsetDateTime failedAt = OffsetDateTime.parse(failed.getString("failed_at"));
    // (an observation of the sandbox may have priced it already before the end did)
    JsonObject cost = Waits.upTo(10).alias("the ledger priced the end").until(
        () -> call("b", "GET", "/v1/sandboxes/" + sbx + "/detail", key, null, 200).getJsonObject("cost"),
        c -> c != null && !OffsetDateTime.parse(c.getString("updated_at")).isBefore(failedAt));
    // its cost ends when A was last known alive (its last heartbeat, or a later observation A made of it)
    assertThat(OffsetDateTime.parse(cost.getString("updated_at"))).as("its cost ended before the kill")
        .isAfterOrEqualTo(OffsetDateTime.parse(failed.getString("failed_at"))).isBeforeOrEqualTo(killedAt);
    java.math.BigDecimal billed = new java.math.BigDecimal(cost.getValue("billable_seconds").toString());
    java.math.BigDecimal lived = java.math.BigDecimal.valueOf(Duration.between(
        OffsetDateTime.parse(failed.getString("provisioning_at")), killedAt).toMillis(), 3);
    assertThat(billed).as("billed once, and no second after the loss").isPositive().isLessThanOrEqualTo(lived);
    // the cloud sandbox keeps working through the survivors
    assertThat(call("c", "POST", "/v1/sandboxes/" + cloud + "/execute", key, "{\"command\":\"echo still\"}", 200)
        .getString("stdout")).isEqualTo("still\n");

    // the program died with its node's resident supervisor; one started on its own (no supervisor) outlives the
    // node and is killed when A comes back. Either way nothing is left once A is back, and the sandbox stays failed
    if (!StreamingTest.isRunning(orphan)) {
      assertThat(ai.bespokelabs.sandbox.adapters.local.LocalProvider.supervised())
          .as("only a supervised program dies with its node").isTrue();
    }
    GW.put("a", startNode("a"));
    Waits.upTo(10).untilAsserted(() -> assertThat(StreamingTest.isRunning(orphan)).isFalse());
    assertThat(call("a", "GET", "/v1/sandboxes/" + sbx, key, null, 200).getString("status")).isEqualTo("failed");

    // C drains on SIGTERM: not ready, no new local sandboxes, its running execution finishes
    String onC = call("c", "POST", "/v1/sandboxes", key, "{\"backend\":\"local\"}", 201).getString("id");
    String slow = call("c", "POST", "/v1/sandboxes/" + onC + "/executions", key,
        "{\"command\":\"sleep 4; echo finished\"}", 202).getString("id");
    assertThat(send("c", "GET", "/readyz", null, null).statusCode()).isEqualTo(200);
    GW.get("c").process.destroy();
    Waits.upTo(10).alias("C reports draining").until(() -> send("c", "GET", "/readyz", null, null).statusCode(),
        s -> s == 503);
    assertThat(send("c", "POST", "/v1/sandboxes", key, "{\"backend\":\"local\"}").statusCode()).isEqualTo(503);
    assertThat(GW.get("c").process.waitFor(60, TimeUnit.SECONDS)).as("C stopped after draining").isTrue();
    JsonObject done = call("b", "GET", "/v1/sandboxes/" + onC + "/executions/" + slow, key, null, 200);
    assertThat(done.getString("status")).as(done.encode()).isEqualTo("completed");
    assertThat(done.getString("stdout")).isEqualTo("finished\n");
    assertThat(Files.readString(dirs.resolve("c").resolve("gateway.log")).lines()
        .filter(l -> l.contains(" ERROR ") && !l.contains("Connection reset by peer"))) // A's connections, killed
        .as("C's errors").isEmpty();
  }
}
