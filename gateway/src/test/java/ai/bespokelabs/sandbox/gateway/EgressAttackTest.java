package ai.bespokelabs.sandbox.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import ai.bespokelabs.sandbox.adapters.docker.TestEngine;
import ai.bespokelabs.sandbox.adapters.egress.EgressGuard;
import ai.bespokelabs.sandbox.gateway.TestGateway.Resp;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Sandbox egress, attacked: programs of {@code local}, {@code bwrap} (with {@code allow_internet}) and
 * {@code docker} sandboxes try to connect to every class of address that belongs to the gateway's own network
 * — private ranges, shared address space, link-local (where cloud metadata services answer), IPv6 unique
 * local addresses, a cluster member, the database, this host — each served by a real listener in a network
 * namespace routed from this host. Only the public-range listener, and a private one the operator allowed
 * ({@code BESPOKE_SANDBOX_ALLOW_CIDRS}), may answer.
 */
@Tag("security")
class EgressAttackTest {
  static final boolean ROOT = BwrapTest.GATEWAY_UID == 0;
  static final String TAG = Integer.toString(ThreadLocalRandom.current().nextInt(0x10000, 0xfffff), 16);
  /** The test namespace and its link to this host. */
  static final String NS = "bsxeg-" + TAG;
  static final String HOST_END = "bsxeg" + TAG + "h";
  static final String NS_END = "bsxeg" + TAG + "n";
  static final int PORT = 8999;
  /** A public-range address (documentation range TEST-NET-2, which no refused range covers): reachable. */
  static final String PUBLIC = "198.51.100.2";
  static final String PUBLIC6 = "2001:db8:203::2";
  /** A private address the operator allows. */
  static final String ALLOWED = "10.204.0.2";
  /** A cluster member's address: public-looking, refused because the cluster names it. */
  static final String MEMBER = "198.51.100.3";
  /** Refused: the private ranges, shared address space, link-local, a unique local IPv6 address. */
  static final List<String> REFUSED = List.of("10.203.0.2", "172.16.203.2", "192.168.203.2", "100.64.203.2",
      "169.254.77.7", MEMBER);
  /** Refused: a unique local IPv6 address, and a NAT64 one (which a NAT64 gateway would take to 10.0.0.2). */
  static final List<String> REFUSED6 = List.of("fd00:203::2", "64:ff9b::a00:2");

  static final boolean NAMESPACES = ROOT && onPath("ip") && onPath("podman");
  static Process listener;
  static ServerSocket hostService;

  @RegisterExtension
  static final GatewayExtension GATEWAY = new GatewayExtension(() -> Map.of(
      "DOCKER_HOST", TestEngine.get().dockerHost(), "BESPOKE_DOCKER_IMAGE", TestEngine.IMAGE,
      // the operator's second range holds the cluster member: the member stays refused all the same
      "BESPOKE_SANDBOX_ALLOW_CIDRS", "10.204.0.0/24, 198.51.100.2/31, fd12:3456::/48",
      "BESPOKE_CLUSTER_MEMBERS", MEMBER + ":5701"));
  static TestGateway gw;
  static String key;

  @BeforeAll
  static void start() throws Exception {
    key = gw.bootstrap("Egress");
    if (!NAMESPACES) {
      return;
    }
    List<String> all = new ArrayList<>(REFUSED);
    all.add(ALLOWED);
    sh("ip netns add " + NS);
    sh("ip link add " + HOST_END + " type veth peer name " + NS_END + " netns " + NS);
    sh("ip addr add 198.51.100.1/24 dev " + HOST_END + " && ip -6 addr add 2001:db8:203::1/64 dev " + HOST_END
        + " nodad && ip link set " + HOST_END + " up");
    StringBuilder inside = new StringBuilder("ip link set lo up && ip link set " + NS_END + " up"
        + " && ip addr add " + PUBLIC + "/24 dev " + NS_END + " && ip -6 addr add " + PUBLIC6 + "/64 dev " + NS_END
        + REFUSED6.stream().map(a -> " nodad && ip -6 addr add " + a + "/128 dev " + NS_END).reduce("", String::concat)
        + " nodad && ip route add default via 198.51.100.1 && ip -6 route add default via 2001:db8:203::1");
    for (String a : all) {
      if (!a.startsWith("198.51.100.")) {
        inside.append(" && ip addr add ").append(a).append("/32 dev ").append(NS_END);
      }
    }
    sh("ip netns exec " + NS + " sh -c '" + inside + "'");
    if (!MEMBER.startsWith("198.51.100.")) {
      throw new IllegalStateException("the member must be on the namespace's link");
    }
    sh("ip netns exec " + NS + " ip addr add " + MEMBER + "/32 dev " + NS_END);
    for (String a : all) {
      if (!a.startsWith("198.51.100.")) {
        sh("ip route add " + a + "/32 via 198.51.100.2 dev " + HOST_END);
      }
    }
    for (String a : REFUSED6) {
      sh("ip -6 route add " + a + "/128 via " + PUBLIC6 + " dev " + HOST_END);
    }
    // one dual-stack listener for every address of the namespace; it answers each connection with "hello"
    listener = new ProcessBuilder("ip", "netns", "exec", NS, "python3", "-c", """
        import socket
        s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("::", %d))
        s.listen(64)
        print("listening", flush=True)
        while True:
            c, _ = s.accept()
            c.sendall(b"hello\\n")
            c.close()
        """.formatted(PORT)).redirectErrorStream(true).start();
    String ready = new String(listener.getInputStream().readNBytes("listening\n".length()), StandardCharsets.UTF_8);
    assertThat(ready).isEqualTo("listening\n");
    hostService = new ServerSocket();
    hostService.bind(new InetSocketAddress("0.0.0.0", 0));
  }

  @AfterAll
  static void cleanUp() throws Exception {
    if (listener != null) {
      listener.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
    }
    if (hostService != null) {
      hostService.close();
    }
    if (NAMESPACES) {
      for (String a : List.of("10.203.0.2", "172.16.203.2", "192.168.203.2", "100.64.203.2", "169.254.77.7",
          ALLOWED)) {
        run("ip route del " + a + "/32");
      }
      REFUSED6.forEach(a -> run("ip -6 route del " + a + "/128"));
      run("ip link del " + HOST_END); // its peer goes with it
      run("ip netns del " + NS);
    }
  }

  static void requireNamespaces() {
    assumeTrue(NAMESPACES, "root with iproute2 and podman: the test routes addresses into a network namespace");
  }

  /** Every destination a probe tries, as {@code address port}. */
  static List<String> destinations(boolean containers) throws Exception {
    List<String> out = new ArrayList<>();
    out.add(PUBLIC + " " + PORT);
    out.add(ALLOWED + " " + PORT);
    REFUSED.forEach(a -> out.add(a + " " + PORT));
    int db = URI.create(gw.databaseUrl.replaceFirst("^jdbc:", "")).getPort();
    if (containers) {
      // this host as containers see it: its own addresses and the bridge's
      for (String a : HostBoundaryTest.hostAddresses()) {
        if (!a.startsWith("127.")) {
          out.add(a + " " + hostService.getLocalPort());
          out.add(a + " " + db);
        }
      }
      JsonObject net = new JsonArray(TestEngine.get().podman("network", "inspect", "bespoke-sandbox")).getJsonObject(0);
      String bridge = net.getJsonArray("subnets").getJsonObject(0).getString("gateway");
      out.add(bridge + " " + hostService.getLocalPort());
      out.add(bridge + " " + db);
    } else {
      out.add(PUBLIC6 + " " + PORT);
      REFUSED6.forEach(a -> out.add(a + " " + PORT));
      out.add("127.0.0.1 " + db);
      for (String a : HostBoundaryTest.hostAddresses()) {
        out.add(a + " " + hostService.getLocalPort());
      }
    }
    return out;
  }

  @ParameterizedTest
  @ValueSource(strings = {"local", "bwrap"})
  void host_sandboxes_with_network_access_reach_public_addresses_only(String backend) throws Exception {
    requireNamespaces();
    assertThat(EgressGuard.hostsInForce()).as("a root gateway puts the rules in force").isTrue();
    String id = gw.sandbox(key, new JsonObject().put("backend", backend).put("allow_internet", true)).getString("id");
    StringBuilder probe = new StringBuilder();
    for (String d : destinations(false)) {
      String[] ap = d.split(" ");
      probe.append("if timeout 2 bash -c 'exec 3<>/dev/tcp/").append(ap[0]).append('/').append(ap[1])
          .append("' 2>/dev/null; then echo REACHED ").append(d).append("; else echo REFUSED ").append(d).append("; fi\n");
    }
    long started = System.nanoTime();
    JsonObject r = exec(id, probe.toString());
    assertVerdicts(r, destinations(false));
    assertThat(TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - started)).as("refused at once, never timed out")
        .isLessThan(10);
  }

  @Test
  void containers_with_network_access_reach_public_addresses_only() throws Exception {
    requireNamespaces();
    Resp created = gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "docker"));
    assertThat(created.status()).as(created.body()).isEqualTo(201);
    String id = created.json().getString("id");
    JsonObject inspected = new JsonArray(TestEngine.get().podman("inspect", created.json()
        .getString("provider_resource_id"))).getJsonObject(0);
    assertThat(inspected.getJsonObject("NetworkSettings").getJsonObject("Networks").fieldNames())
        .containsExactly("bespoke-sandbox");
    StringBuilder probe = new StringBuilder();
    for (String d : destinations(true)) {
      // connected: nc runs `true` and ends at once, whether or not the server would talk first
      probe.append("if timeout 3 nc -w 2 ").append(d).append(" -e true >/dev/null 2>&1; then echo REACHED ").append(d)
          .append("; else echo REFUSED ").append(d).append("; fi\n");
    }
    assertVerdicts(exec(id, probe.toString()), destinations(true));
    // and a container without network access has none at all
    Resp offline = gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "docker").put("allow_internet", false));
    assertThat(offline.status()).as(offline.body()).isEqualTo(201);
    JsonObject none = exec(offline.json().getString("id"), "timeout 3 nc -w 2 " + PUBLIC + " " + PORT
        + " -e true >/dev/null 2>&1 && echo REACHED || echo REFUSED");
    assertThat(none.getString("stdout")).isEqualTo("REFUSED\n");
    gw.delete("/v1/sandboxes/" + id, key);
    gw.delete("/v1/sandboxes/" + offline.json().getString("id"), key);
  }

  /**
   * Where a root gateway cannot put a backend's egress rules in force — here the docker network cannot even be
   * looked at, the engine's "socket" being a plain file — the backend is listed unconfigured with the reason,
   * and creating a sandbox there is refused.
   */
  @Test
  void a_backend_whose_rules_cannot_be_put_in_force_is_not_enabled_and_says_why(
      @org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
    assumeTrue(ROOT, "a root gateway installs egress rules");
    java.nio.file.Path socket = java.nio.file.Files.createFile(dir.resolve("engine.sock"));
    // docker only: a gateway with host backends would replace the host sandboxes' rules of this class's gateway
    try (TestGateway broken = new TestGateway(Map.of("DOCKER_HOST", "unix://" + socket,
        "BESPOKE_ALLOWED_BACKENDS", "docker"))) {
      String admin = broken.bootstrap("Broken");
      JsonObject docker = null;
      for (Object o : broken.get("/v1/providers", admin).json().getJsonArray("items")) {
        if ("docker".equals(((JsonObject) o).getString("backend"))) {
          docker = (JsonObject) o;
        }
      }
      assertThat(docker).isNotNull();
      assertThat(docker.getBoolean("configured")).isFalse();
      assertThat(docker.getString("status")).isEqualTo("unconfigured");
      assertThat(docker.getString("message")).isEqualTo(EgressGuard.UNAVAILABLE);
      Resp created = broken.post("/v1/sandboxes", admin, new JsonObject().put("backend", "docker"));
      assertThat(created.status()).as(created.body()).isEqualTo(422);
      assertThat(created.json().getJsonObject("detail").getString("code")).isEqualTo("backend_not_installed");
      assertThat(created.json().getJsonObject("detail").getString("message")).isEqualTo(EgressGuard.UNAVAILABLE);
    }
  }

  /**
   * An engine on another host: its containers' traffic never crosses this host's rules, so a root node does not
   * enable docker, unless the operator says the engine's host filters it.
   */
  @Test
  void a_docker_engine_on_another_host_is_not_enabled_unless_the_operator_says_its_host_filters_egress()
      throws Exception {
    assumeTrue(ROOT, "a root gateway installs egress rules");
    Map<String, String> remote = Map.of("DOCKER_HOST", "tcp://198.51.100.77:2375", "BESPOKE_ALLOWED_BACKENDS", "docker");
    try (TestGateway node = new TestGateway(remote)) {
      String admin = node.bootstrap("Remote");
      JsonObject docker = provider(node, admin, "docker");
      assertThat(docker.getBoolean("configured")).isFalse();
      assertThat(docker.getString("message")).isEqualTo(SandboxEgress.REMOTE_ENGINE);
      Resp created = node.post("/v1/sandboxes", admin, new JsonObject().put("backend", "docker"));
      assertThat(created.status()).as(created.body()).isEqualTo(422);
      assertThat(created.json().getJsonObject("detail").getString("message")).isEqualTo(SandboxEgress.REMOTE_ENGINE);
    }
    Map<String, String> optedIn = new java.util.HashMap<>(remote);
    optedIn.put("BESPOKE_DOCKER_EGRESS_ELSEWHERE", "true");
    try (TestGateway node = new TestGateway(optedIn)) {
      String admin = node.bootstrap("Remote");
      JsonObject docker = provider(node, admin, "docker");
      assertThat(docker.getBoolean("configured")).as(docker.encode()).isTrue();
      assertThat(docker.getString("message")).isNotEqualTo(SandboxEgress.REMOTE_ENGINE);
    }
  }

  static JsonObject provider(TestGateway node, String key, String backend) {
    for (Object o : node.get("/v1/providers", key).json().getJsonArray("items")) {
      if (backend.equals(((JsonObject) o).getString("backend"))) {
        return (JsonObject) o;
      }
    }
    throw new AssertionError(backend + " is not listed");
  }

  /** The public and allowed listeners answered; nothing else did. */
  static void assertVerdicts(JsonObject r, List<String> destinations) {
    String out = r.getString("stdout");
    for (String d : destinations) {
      boolean reachable = d.startsWith(PUBLIC + " ") || d.startsWith(PUBLIC6 + " ") || d.startsWith(ALLOWED + " ");
      assertThat(out).as(r.encode()).contains((reachable ? "REACHED " : "REFUSED ") + d + "\n");
    }
  }

  static JsonObject exec(String id, String command) {
    Resp r = gw.post("/v1/sandboxes/" + id + "/execute", key, new JsonObject().put("command", command)
        .put("timeout_secs", 120));
    assertThat(r.status()).as(r.body()).isEqualTo(200);
    return r.json();
  }

  static void sh(String command) throws IOException, InterruptedException {
    Process p = new ProcessBuilder("sh", "-c", command).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (!p.waitFor(30, TimeUnit.SECONDS) || p.exitValue() != 0) {
      throw new IllegalStateException(command + " failed: " + out);
    }
  }

  /** Best effort (clean-up). */
  static void run(String command) {
    try {
      sh(command);
    } catch (Exception ignored) {
      // already gone
    }
  }

  static boolean onPath(String name) {
    for (String d : System.getenv().getOrDefault("PATH", "/usr/bin:/bin").split(":")) {
      if (java.nio.file.Files.isExecutable(java.nio.file.Path.of(d, name))) {
        return true;
      }
    }
    return java.nio.file.Files.isExecutable(java.nio.file.Path.of("/usr/sbin", name));
  }
}
