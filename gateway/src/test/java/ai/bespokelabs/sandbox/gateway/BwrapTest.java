package ai.bespokelabs.sandbox.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import ai.bespokelabs.sandbox.gateway.TestGateway.Resp;
import ai.bespokelabs.sandbox.testkit.SseClient;
import ai.bespokelabs.sandbox.testkit.Waits;
import io.vertx.core.json.JsonObject;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** The bwrap backend with real bubblewrap: isolation, and executions behaving exactly as on local. */
@ExtendWith(GatewayExtension.class)
class BwrapTest {
  static TestGateway gw;
  static String key;
  static final int GATEWAY_UID = uidOf(Path.of("/proc/self"));

  static int uidOf(Path p) {
    try {
      return (Integer) Files.getAttribute(p, "unix:uid");
    } catch (Exception e) {
      return -1;
    }
  }

  /** Whether a host process runs with exactly this command line (arguments joined by spaces). */
  static boolean running(String commandLine) throws java.io.IOException {
    try (var procs = Files.newDirectoryStream(Path.of("/proc"), "[0-9]*")) {
      for (Path p : procs) {
        try {
          if (new String(Files.readAllBytes(p.resolve("cmdline")), java.nio.charset.StandardCharsets.UTF_8)
              .replace('\0', ' ').strip().equals(commandLine)) {
            return true;
          }
        } catch (java.io.IOException vanished) {
          // ended while we looked
        }
      }
    }
    return false;
  }

  @BeforeAll
  static void start() {
    key = gw.bootstrap("Isolated");
  }

  static JsonObject sandbox(JsonObject extra) {
    return gw.sandbox(key, new JsonObject().put("backend", "bwrap").mergeIn(extra));
  }

  static JsonObject run(String id, String command) {
    Resp r = gw.post("/v1/sandboxes/" + id + "/execute", key, new JsonObject().put("command", command));
    assertThat(r.status()).as(r.body()).isEqualTo(200);
    return r.json();
  }

  @Test
  void programs_see_nothing_of_the_gateway_and_have_no_network_unless_allowed() throws Exception {
    Path hostMarker = Files.createTempFile("host-only-", ".txt");
    JsonObject sbx = sandbox(new JsonObject().put("allow_internet", false)
        .put("env_vars", new JsonObject().put("GREETING", "hola")));
    String id = sbx.getString("id");
    JsonObject r = run(id, "id -u; hostname; pwd; echo $$; env | sort | tr '\\n' ' '; echo;"
        + " test -e " + gw.dataDir + " && echo DATA-VISIBLE; test -e " + hostMarker + " && echo TMP-SHARED;"
        + " grep -c : /proc/net/dev; touch /usr/probe 2>/dev/null || echo usr-read-only; echo kept > out.txt");
    String[] lines = r.getString("stdout").split("\n");
    long uid = Long.parseLong(lines[0]);
    assertThat(uid).as("an unprivileged uid, not the gateway's").isNotZero().isNotEqualTo(GATEWAY_UID);
    assertThat(lines[1]).isEqualTo("sandbox");
    assertThat(lines[2]).isEqualTo("/sandbox");
    assertThat(Integer.parseInt(lines[3])).as("a new pid namespace").isLessThan(10);
    // bash adds SHLVL and _ as it does for the seed's command lines
    assertThat(lines[4]).isEqualTo("GREETING=hola HOME=/sandbox LANG=C.UTF-8 PATH=/usr/local/bin:/usr/bin:/bin"
        + " PWD=/sandbox SANDBOX_ROOT=/sandbox SHLVL=1 TMPDIR=/tmp _=/usr/bin/env ");
    assertThat(r.getString("stdout")).doesNotContain("DATA-VISIBLE").doesNotContain("TMP-SHARED");
    assertThat(lines[5]).as("only the loopback interface").isEqualTo("1");
    assertThat(lines[6]).isEqualTo("usr-read-only");
    assertThat(Files.readString(Path.of(sbx.getString("provider_resource_id")).resolve("out.txt"))).isEqualTo("kept\n");

    String online = sandbox(new JsonObject().put("allow_internet", true)).getString("id");
    assertThat(Integer.parseInt(run(online, "grep -c : /proc/net/dev").getString("stdout").trim()))
        .as("the host's interfaces").isGreaterThan(1);
    Files.delete(hostMarker);
  }

  @Test
  void timeouts_limits_streaming_and_destroy_work_as_on_local() throws Exception {
    JsonObject sbx = sandbox(new JsonObject().put("memory_mb", 64));
    String id = sbx.getString("id");
    Resp slow = gw.post("/v1/sandboxes/" + id + "/execute", key,
        new JsonObject().put("command", "echo started; sleep 30").put("timeout_secs", 1));
    assertThat(slow.json().getInteger("exit_code")).isEqualTo(124);
    assertThat(slow.json().getString("stdout")).isEqualTo("started\n");
    JsonObject big = run(id, "python3 -c 'x = bytearray(256 * 1024 * 1024)' 2>/dev/null; echo $?");
    assertThat(big.getString("stdout").trim()).as("memory_mb caps the address space").isNotEqualTo("0");

    try (SseClient sse = SseClient.open(gw.base + "/v1/sandboxes/" + id + "/execute", key, "POST",
        new JsonObject().put("command", "seq 1 3; printf tail").encode())) {
      StringBuilder out = new StringBuilder();
      SseClient.Event e;
      while ((e = sse.next()) != null) {
        if (e.isOutput()) {
          out.append(new String(e.bytes(), java.nio.charset.StandardCharsets.UTF_8));
        }
      }
      assertThat(out.toString()).isEqualTo("1\n2\n3\ntail");
    }

    JsonObject bg = run(id, "sleep 3171 >/dev/null 2>&1 & echo started");
    assertThat(bg.getString("stdout")).isEqualTo("started\n");
    // the program was the init of its PID namespace: what it left running ended with it, which is what lets
    // destroy skip looking for leftovers
    Waits.upTo(5).untilAsserted(
        () -> assertThat(running("sleep 3171")).as("a background process outliving its execution").isFalse());
    assertThat(gw.delete("/v1/sandboxes/" + id, key).json().getString("status")).isEqualTo("destroyed");
    assertThat(Path.of(sbx.getString("provider_resource_id"))).doesNotExist();
    Resp health = gw.post("/v1/providers/bwrap/health-check", key, null);
    assertThat(health.json().getString("status")).isEqualTo("healthy");
  }

  /**
   * A fork bomb meets its sandbox's process limit; other sandboxes and the gateway carry on, and the bomb's
   * processes are gone after its timeout. Needs a root gateway: only then do programs run as their sandbox's
   * own host uid, which the process limit counts (otherwise they share the gateway user's count).
   */
  @Test
  void a_fork_bomb_stays_in_its_sandbox() throws Exception {
    assumeTrue(GATEWAY_UID == 0, "the gateway runs as root");
    JsonObject bomb = sandbox(new JsonObject());
    String other = sandbox(new JsonObject()).getString("id");
    CompletableFuture<Resp> detonated = CompletableFuture.supplyAsync(() -> gw.post(
        "/v1/sandboxes/" + bomb.getString("id") + "/execute", key,
        // the waiting sleep is started first: once the limit is hit, sh cannot fork it and would exit at once
        new JsonObject().put("command", "sleep 30 & b() { b | b & }; b; wait").put("timeout_secs", 4)));
    Thread.sleep(1500);
    JsonObject fine = run(other, "echo fine");
    assertThat(fine.getString("stdout")).as(fine.encode()).isEqualTo("fine\n");
    assertThat(gw.get("/healthz", null).status()).isEqualTo(200);
    Resp r = detonated.get(30, TimeUnit.SECONDS);
    assertThat(r.status()).as(r.body()).isEqualTo(200);
    assertThat(r.json().getInteger("exit_code")).as("killed at its timeout").isEqualTo(124);
    assertThat(r.json().getString("stderr")).as("the process limit was hit").containsIgnoringCase("fork");
    int bombUid = uidOf(Path.of(bomb.getString("provider_resource_id")));
    assertThat(bombUid).isNotZero();
    Waits.upTo(10).untilAsserted(() -> assertThat(java.util.stream.Stream.of(new java.io.File("/proc").listFiles())
        .filter(f -> f.getName().matches("\\d+") && uidOf(f.toPath()) == bombUid).count())
        .as("the bomb's processes are gone").isZero());
  }
}
