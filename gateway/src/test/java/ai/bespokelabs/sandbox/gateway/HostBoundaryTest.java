package ai.bespokelabs.sandbox.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import ai.bespokelabs.sandbox.gateway.TestGateway.Resp;
import ai.bespokelabs.sandbox.testkit.Waits;
import io.vertx.core.json.JsonObject;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Attacks on the host from a sandbox's programs, on every host backend: nothing the tenant controls runs with
 * the gateway's privileges, programs hold no capabilities, their environment is on no command line, and as
 * root every sandbox has a uid of its own.
 */
@Tag("security")
@ExtendWith(GatewayExtension.class)
class HostBoundaryTest {
  static TestGateway gw;
  static String key;
  static Path secret;
  static final boolean ROOT = BwrapTest.GATEWAY_UID == 0;

  /** A library that records, in every process that loads it, its uid, capabilities and whether it read a secret. */
  static final String PROBE_C = """
      #include <fcntl.h>
      #include <stdio.h>
      #include <stdlib.h>
      #include <string.h>
      #include <unistd.h>
      __attribute__((constructor)) static void probe(void) {
        const char *log = getenv("PROBE_LOG"), *target = getenv("PROBE_TARGET");
        char caps[64] = "?", line[256], comm[64] = "?";
        FILE *s = fopen("/proc/self/status", "r");
        if (s) {
          while (fgets(line, sizeof line, s)) {
            if (!strncmp(line, "CapEff:", 7)) sscanf(line + 7, "%63s", caps);
            if (!strncmp(line, "Name:", 5)) sscanf(line + 5, "%63s", comm);
          }
          fclose(s);
        }
        int readable = target && open(target, O_RDONLY) >= 0;
        FILE *f = log ? fopen(log, "a") : NULL;
        if (f) {
          fprintf(f, "%s uid=%d caps=%s secret=%s\\n", comm, (int) getuid(), caps, readable ? "READ" : "denied");
          fclose(f);
        }
      }
      """;

  @BeforeAll
  static void start() throws Exception {
    key = gw.bootstrap("Hostile");
    // stands for the gateway's own secrets (admin token, pepper): a root-only file in the data directory
    secret = gw.dataDir.resolve("admin-token-probe");
    Files.writeString(secret, "gateway-secret");
    Files.setPosixFilePermissions(secret, PosixFilePermissions.fromString("rw-------"));
  }

  static JsonObject exec(String id, JsonObject body) {
    Resp r = gw.post("/v1/sandboxes/" + id + "/execute", key, body);
    assertThat(r.status()).as(r.body()).isEqualTo(200);
    return r.json();
  }

  /** Where the sandbox's programs see their directory. */
  static String inside(String backend, JsonObject sbx) {
    return "bwrap".equals(backend) ? "/sandbox" : sbx.getString("provider_resource_id");
  }

  @ParameterizedTest
  @ValueSource(strings = {"local", "bwrap"})
  void a_preloaded_library_runs_only_in_the_unprivileged_program(String backend) throws Exception {
    String token = "sekrit-" + UUID.randomUUID();
    JsonObject sbx = gw.sandbox(key, new JsonObject().put("backend", backend).put("env_vars",
        new JsonObject().put("TOKEN", token)));
    String id = sbx.getString("id");
    String dir = inside(backend, sbx);
    JsonObject built = exec(id, new JsonObject().put("command", "cat > probe.c <<'EOF'\n" + PROBE_C
        + "EOF\ngcc -shared -fPIC -o probe.so probe.c && echo built"));
    assertThat(built.getString("stdout")).as(built.encode()).contains("built");

    JsonObject r = exec(id, new JsonObject().put("command", "grep -E '^(Uid|CapEff|CapPrm|CapBnd|CapAmb|NoNewPrivs)'"
        + " /proc/self/status; cat " + secret + " 2>&1; echo TOKEN=$TOKEN")
        .put("env", new JsonObject().put("LD_PRELOAD", dir + "/probe.so").put("PROBE_LOG", dir + "/probe.log")
            .put("PROBE_TARGET", secret.toString())));
    String status = r.getString("stdout");
    assertThat(status).contains("CapEff:\t0000000000000000").contains("CapPrm:\t0000000000000000")
        .contains("CapAmb:\t0000000000000000").doesNotContain("gateway-secret").contains("TOKEN=" + token);
    if (ROOT) {
      assertThat(status).contains("CapBnd:\t0000000000000000").contains("NoNewPrivs:\t1")
          .doesNotContainPattern("Uid:\\s+0\\s");
    }
    List<String> loaded = Files.readAllLines(Path.of(sbx.getString("provider_resource_id")).resolve("probe.log"));
    assertThat(loaded).as("the library ran in the tenant's program").isNotEmpty();
    for (String line : loaded) {
      assertThat(line).as("every process that loaded the tenant's library").contains("caps=0000000000000000")
          .contains("secret=denied").doesNotContain("uid=0 ");
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"local", "bwrap"})
  void environment_values_are_on_no_command_line(String backend) throws Exception {
    String value = "env-" + UUID.randomUUID();
    JsonObject sbx = gw.sandbox(key, new JsonObject().put("backend", backend)
        .put("env_vars", new JsonObject().put("CREATE_SECRET", value + "-c")));
    CompletableFuture<JsonObject> running = CompletableFuture.supplyAsync(() -> exec(sbx.getString("id"),
        new JsonObject().put("command", "echo started > started; sleep 3; echo $EXEC_SECRET $CREATE_SECRET")
            .put("env", new JsonObject().put("EXEC_SECRET", value + "-e"))));
    Path started = Path.of(sbx.getString("provider_resource_id")).resolve("started");
    Waits.upTo(10).untilAsserted(() -> assertThat(started).exists());
    List<String> seen = new ArrayList<>();
    try (var procs = Files.newDirectoryStream(Path.of("/proc"), "[0-9]*")) {
      for (Path p : procs) {
        try {
          String cmdline = new String(Files.readAllBytes(p.resolve("cmdline")), StandardCharsets.UTF_8);
          if (cmdline.contains(value)) {
            seen.add(cmdline.replace('\0', ' '));
          }
        } catch (java.io.IOException vanished) {
          // ended while we looked
        }
      }
    }
    assertThat(seen).as("command lines holding an environment value").isEmpty();
    assertThat(running.get(30, TimeUnit.SECONDS).getString("stdout")).isEqualTo(value + "-e " + value + "-c\n");
    // executions started one by one hand their environment over in a file there; a supervisor over its pipe
    Path runDir = gw.dataDir.resolve("bwrap".equals(backend) ? "bwrap-sandboxes" : "sandboxes").resolve(".run");
    if (Files.exists(runDir)) {
      try (var left = Files.list(runDir)) {
        assertThat(left.toList()).as("handed-over environments left behind").isEmpty();
      }
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"local", "bwrap"})
  void as_root_each_sandbox_has_its_own_uid_and_reads_nothing_of_another(String backend) throws Exception {
    assumeTrue(ROOT, "the gateway runs as root");
    Set<Integer> uids = new HashSet<>();
    List<JsonObject> made = new ArrayList<>();
    for (int i = 0; i < 12; i++) {
      JsonObject sbx = gw.sandbox(key, new JsonObject().put("backend", backend));
      made.add(sbx);
      Path dir = Path.of(sbx.getString("provider_resource_id"));
      assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(dir))).isEqualTo("rwx------");
      int uid = BwrapTest.uidOf(dir);
      assertThat(uid).isGreaterThanOrEqualTo(1_000_000);
      assertThat(uids.add(uid)).as("uid %d given twice", uid).isTrue();
      JsonObject id = exec(sbx.getString("id"), new JsonObject().put("command", "id -u"));
      assertThat(id.getString("stdout").trim()).isEqualTo(String.valueOf(uid));
    }
    Path victim = Path.of(made.get(0).getString("provider_resource_id"));
    Files.writeString(victim.resolve("private.txt"), "victim-data");
    JsonObject r = exec(made.get(1).getString("id"), new JsonObject().put("command",
        "cat " + victim.resolve("private.txt") + " 2>&1; ls " + victim + " 2>&1; cat " + secret + " 2>&1"));
    assertThat(r.getString("stdout")).doesNotContain("victim-data").doesNotContain("gateway-secret");
    for (JsonObject sbx : made) {
      assertThat(gw.delete("/v1/sandboxes/" + sbx.getString("id"), key).status()).isEqualTo(200);
    }
  }

  /**
   * Uids were allocated per gateway process: two gateways of one host (two cluster nodes on one machine) could
   * give sandboxes of different tenants the same uid. With a range of four uids, two per-process allocators
   * would each hand out all four; the host-wide one gives each uid once and then refuses.
   */
  @org.junit.jupiter.api.Test
  void two_gateways_of_one_host_never_give_the_same_uid_and_refuse_once_the_range_is_spent(
      @org.junit.jupiter.api.io.TempDir Path tmp) throws Exception {
    assumeTrue(ROOT, "the gateway runs as root");
    int first = 1_000_000 + 30_000 + java.util.concurrent.ThreadLocalRandom.current().nextInt(30_000);
    java.util.Map<String, String> shared = java.util.Map.of("BESPOKE_SANDBOX_UIDS", first + "-" + (first + 3),
        "BESPOKE_SANDBOX_UID_LOCKS", tmp.resolve("uids").toString(), "BESPOKE_ALLOWED_BACKENDS", "local,bwrap",
        "BESPOKE_CONTROL_PLANE_ADMIN_TOKEN", TestGateway.ADMIN);
    List<GatewayProcess> gateways = new ArrayList<>();
    try {
      for (String name : List.of("one", "two")) {
        Path data = Files.createDirectory(tmp.resolve(name));
        Files.setPosixFilePermissions(data, PosixFilePermissions.fromString("rwx--x--x"));
        java.util.Map<String, String> env = new java.util.HashMap<>(shared);
        env.put("BESPOKE_DATABASE_URL", ai.bespokelabs.sandbox.core.testing.TestDatabase.newDatabaseUrl());
        gateways.add(GatewayProcess.start(data, TestGateway.freePort(), env));
      }
      List<String> keys = new ArrayList<>();
      for (GatewayProcess g : gateways) {
        keys.add(call(g, "POST", "/v1/organizations", null, new JsonObject().put("name", "Tenant of " + g.base))
            .json().getJsonObject("api_key").getString("secret"));
      }
      List<Integer> uids = new ArrayList<>();
      List<String[]> made = new ArrayList<>();
      for (int i = 0; i < 4; i++) {
        int n = i % 2;
        String backend = i < 2 ? "local" : "bwrap";
        Resp created = call(gateways.get(n), "POST", "/v1/sandboxes", keys.get(n), new JsonObject().put("backend", backend));
        assertThat(created.status()).as(created.body()).isEqualTo(201);
        String id = created.json().getString("id");
        made.add(new String[] {String.valueOf(n), id});
        Resp idU = call(gateways.get(n), "POST", "/v1/sandboxes/" + id + "/execute", keys.get(n),
            new JsonObject().put("command", "id -u"));
        uids.add(Integer.parseInt(idU.json().getString("stdout").trim()));
      }
      assertThat(uids).as("uids of both gateways' sandboxes").doesNotHaveDuplicates()
          .allMatch(u -> u >= first && u <= first + 3);
      for (int n = 0; n < 2; n++) {
        Resp refused = call(gateways.get(n), "POST", "/v1/sandboxes", keys.get(n), new JsonObject().put("backend", "local"));
        assertThat(refused.status()).as(refused.body()).isEqualTo(502);
        JsonObject detail = refused.json().getJsonObject("detail");
        assertThat(detail.getString("code")).isEqualTo("creation_failed");
        assertThat(detail.getBoolean("retryable")).isTrue();
        assertThat(detail.getJsonObject("context").getString("provider_code")).isEqualTo("host_uids_exhausted");
      }
      // a destroyed sandbox gives its uid back to the host: the other gateway may now have it
      String[] freed = made.get(0);
      assertThat(call(gateways.get(0), "DELETE", "/v1/sandboxes/" + freed[1], keys.get(0), null).status()).isEqualTo(200);
      Resp again = call(gateways.get(1), "POST", "/v1/sandboxes", keys.get(1), new JsonObject().put("backend", "local"));
      assertThat(again.status()).as(again.body()).isEqualTo(201);
      Resp idU = call(gateways.get(1), "POST", "/v1/sandboxes/" + again.json().getString("id") + "/execute", keys.get(1),
          new JsonObject().put("command", "id -u"));
      assertThat(Integer.parseInt(idU.json().getString("stdout").trim())).isEqualTo(uids.get(0));
    } finally {
      for (GatewayProcess g : gateways) {
        g.process.destroy();
        g.process.waitFor(60, TimeUnit.SECONDS);
      }
    }
    try (var left = Files.list(tmp.resolve("uids"))) {
      assertThat(left.map(f -> f.getFileName().toString()).filter(f -> !f.startsWith(".")).toList())
          .as("uid lock files left once both gateways stopped and ended their sandboxes").isEmpty();
    }
  }

  static Resp call(GatewayProcess g, String method, String path, String key, JsonObject body) throws Exception {
    java.net.http.HttpRequest.Builder b = java.net.http.HttpRequest.newBuilder(java.net.URI.create(g.base + path))
        .header("X-Control-Plane-Admin", TestGateway.ADMIN).timeout(java.time.Duration.ofSeconds(60));
    if (key != null) {
      b.header("Authorization", "Bearer " + key);
    }
    b.method(method, body == null ? java.net.http.HttpRequest.BodyPublishers.noBody()
        : java.net.http.HttpRequest.BodyPublishers.ofString(body.encode()));
    java.net.http.HttpResponse<String> r = HTTP.send(b.build(), java.net.http.HttpResponse.BodyHandlers.ofString());
    return new Resp(r.statusCode(), r);
  }

  static final java.net.http.HttpClient HTTP = java.net.http.HttpClient.newBuilder()
      .version(java.net.http.HttpClient.Version.HTTP_1_1).build();

  @org.junit.jupiter.api.Test
  void a_gateway_reachable_beyond_loopback_warns_when_every_organization_may_use_local() {
    ch.qos.logback.core.read.ListAppender<ch.qos.logback.classic.spi.ILoggingEvent> logs =
        new ch.qos.logback.core.read.ListAppender<>();
    logs.start();
    ch.qos.logback.classic.Logger root =
        (ch.qos.logback.classic.Logger) org.slf4j.LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
    root.addAppender(logs);
    try {
      try (TestGateway open = new TestGateway(java.util.Map.of("HOST", "0.0.0.0"))) {
        assertThat(logs.list).anyMatch(e -> e.getFormattedMessage().startsWith("The local backend is enabled"));
      }
      logs.list.clear();
      try (TestGateway narrowed = new TestGateway(java.util.Map.of("HOST", "0.0.0.0", "BESPOKE_ALLOWED_BACKENDS", "bwrap"));
          TestGateway loopback = new TestGateway()) {
        assertThat(logs.list).noneMatch(e -> e.getFormattedMessage().startsWith("The local backend is enabled"));
      }
    } finally {
      root.detachAppender(logs);
    }
  }

  /** Every local address of this host: loopback and the addresses of its interfaces. */
  static List<String> hostAddresses() throws Exception {
    List<String> out = new ArrayList<>(List.of("127.0.0.1"));
    for (var nif : java.util.Collections.list(java.net.NetworkInterface.getNetworkInterfaces())) {
      for (var a : java.util.Collections.list(nif.getInetAddresses())) {
        if (a instanceof java.net.Inet4Address && !a.isLoopbackAddress()) {
          out.add(a.getHostAddress());
        }
      }
    }
    return out;
  }

  @ParameterizedTest
  @ValueSource(strings = {"local", "bwrap"})
  void programs_with_network_access_cannot_reach_services_of_the_host(String backend) throws Exception {
    assumeTrue(ROOT, "the gateway runs as root: sandbox programs have uids of their own");
    assumeTrue(ai.bespokelabs.sandbox.adapters.egress.EgressGuard.hostsInForce(),
        "this host lets root change its firewall (nftables, CAP_NET_ADMIN); otherwise the gateway warns at start");
    try (java.net.ServerSocket service = new java.net.ServerSocket()) {
      service.bind(new java.net.InetSocketAddress("0.0.0.0", 0));
      service.setSoTimeout(200);
      String id = gw.sandbox(key, new JsonObject().put("backend", backend).put("allow_internet", true)).getString("id");
      StringBuilder probe = new StringBuilder();
      for (String address : hostAddresses()) {
        probe.append("(echo hi > /dev/tcp/").append(address).append('/').append(service.getLocalPort())
            .append(") 2>/dev/null && echo REACHED ").append(address).append(" || echo refused;");
      }
      JsonObject r = exec(id, new JsonObject().put("command", "bash -c '" + probe + "'"));
      assertThat(r.getString("stdout")).as(r.encode()).doesNotContain("REACHED").contains("refused");
      assertThatThrownBy(service::accept).isInstanceOf(java.net.SocketTimeoutException.class);
      // the gateway's own user still reaches it: only the sandboxes' uids are refused
      try (java.net.Socket s = new java.net.Socket("127.0.0.1", service.getLocalPort())) {
        assertThat(s.isConnected()).isTrue();
      }
    }
  }
}
