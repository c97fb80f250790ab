package ai.bespokelabs.sandbox.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.bespokelabs.sandbox.core.config.ClusterConfig;
import ai.bespokelabs.sandbox.core.testing.TestDatabase;
import ai.bespokelabs.sandbox.testkit.ClusterCertificates;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.internal.VertxInternal;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.KeyManager;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManager;
import javax.net.ssl.X509TrustManager;
import org.jgroups.JChannel;
import org.jgroups.protocols.TCP;
import org.jgroups.util.DefaultSocketFactory;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two gateway nodes clustered on {@code 127.0.0.2} (loopback, but not the address the HTTP API listens on),
 * attacked the ways issue 27 reported: a process that is not a member joins the group (without a certificate,
 * with one of another CA), writes hand-made event-bus frames or plain bytes to the cluster ports, reaches
 * them on another local address, or reads the traffic between the nodes. Each attack has a control that does
 * the same with what a member has (a certificate of the cluster's CA) and succeeds, so the attack failing is
 * the nodes' doing and not the test's.
 */
@Tag("security")
class ClusterAttackTest {
  static final String CLUSTER_HOST = "127.0.0.2";
  static final String NAME = "bespoke-sandbox-gateway";
  /** What a clustered event bus answers a ping frame with. */
  static final int PONG = 1;

  @TempDir
  static Path dirs;

  static ClusterCertificates ours;
  static ClusterCertificates theirs;
  static final Map<String, Integer> HTTP_PORTS = new HashMap<>();
  static final Map<String, Integer> CLUSTER_PORTS = new HashMap<>();
  static final Map<String, GatewayProcess> GW = new HashMap<>();
  static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
  static List<String> members = new ArrayList<>();
  static String key;

  @BeforeAll
  static void start() throws Exception {
    ours = ClusterCertificates.newCa(dirs.resolve("ours"), "attack-test-ca");
    theirs = ClusterCertificates.newCa(dirs.resolve("theirs"), "another-ca");
    for (String n : List.of("a", "b")) {
      HTTP_PORTS.put(n, TestGateway.freePort());
      CLUSTER_PORTS.put(n, ClusterTest.freePair());
      members.add(CLUSTER_HOST + ":" + CLUSTER_PORTS.get(n));
    }
    String database = TestDatabase.newDatabaseUrl();
    for (String n : List.of("a", "b")) {
      Path dir = dirs.resolve(n);
      Files.createDirectories(dir);
      Map<String, String> env = new HashMap<>(Map.of("BESPOKE_DATABASE_URL", database,
          "BESPOKE_CONTROL_PLANE_ADMIN_TOKEN", TestGateway.ADMIN, "BESPOKE_API_KEY_PEPPER", ClusterTest.PEPPER,
          "BESPOKE_CLUSTER", "true", "BESPOKE_CLUSTER_HOST", CLUSTER_HOST, "BESPOKE_CLUSTER_MEMBERS",
          String.join(",", members), "BESPOKE_NODE_ID", n, "BESPOKE_CLUSTER_PORT",
          String.valueOf(CLUSTER_PORTS.get(n)), "BESPOKE_DRAIN_SECS", "0"));
      env.putAll(ours.node(n, "ip:" + CLUSTER_HOST));
      try {
        GW.put(n, GatewayProcess.start(dir, HTTP_PORTS.get(n), env, List.of("-XX:TieredStopAtLevel=1")));
      } catch (RuntimeException | Error e) {
        throw new AssertionError("node " + n + " did not start: " + Files.readString(dir.resolve("gateway.log")), e);
      }
    }
    key = call("a", "POST", "/v1/organizations", null, "{\"name\":\"Victim\"}", 201).getJsonObject("api_key")
        .getString("secret");
  }

  @AfterAll
  static void stop() throws Exception {
    for (GatewayProcess g : GW.values()) {
      g.process.destroyForcibly();
      g.process.waitFor(30, TimeUnit.SECONDS);
    }
    for (String n : List.of("a", "b")) {
      Path log = dirs.resolve(n).resolve("gateway.log");
      if (Files.exists(log)) {
        Files.copy(log, Path.of("target", "cluster-attack-test-" + n + ".log"),
            java.nio.file.StandardCopyOption.REPLACE_EXISTING);
      }
    }
  }

  static JsonObject call(String node, String method, String path, String key, String body, int status)
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
    HttpResponse<String> r = HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
    assertThat(r.statusCode()).as(method + " " + path + " on " + node + ": " + r.body()).isEqualTo(status);
    return r.body().isEmpty() ? new JsonObject() : new JsonObject(r.body());
  }

  static ClusterIdentity identity(Map<String, String> files) {
    return ClusterIdentity.load(config(0, files));
  }

  static ClusterConfig config(int port, Map<String, String> files) {
    return new ClusterConfig(true, CLUSTER_HOST, port, NAME, Optional.of(new ClusterConfig.Tls(
        Path.of(files.get("BESPOKE_CLUSTER_TLS_CA")), Path.of(files.get("BESPOKE_CLUSTER_TLS_CERT")),
        Path.of(files.get("BESPOKE_CLUSTER_TLS_KEY")))), members, false, Optional.empty(), 0);
  }

  static String log(String node) throws IOException {
    return Files.readString(dirs.resolve(node).resolve("gateway.log"));
  }

  /**
   * A Vert.x node on this cluster's seeds and name with the identity in {@code files}: the cluster nodes it sees
   * (itself included). A stranger forms a cluster of its own.
   */
  static List<String> joinAs(String member, Map<String, String> files) throws Exception {
    int port = ClusterTest.freePair();
    Vertx vertx = Cluster.vertx(new VertxOptions(), null, config(port, files), identity(files), member, c -> { });
    try {
      return ((VertxInternal) vertx).clusterManager().getNodes();
    } finally {
      vertx.close().await(30, TimeUnit.SECONDS);
    }
  }

  @Test
  void a_member_with_a_certificate_of_another_ca_does_not_join() throws Exception {
    // control: the cluster's own certificate makes a full member
    assertThat(joinAs("member", ours.node("member", "ip:" + CLUSTER_HOST))).hasSize(3);
    List<String> seen = joinAs("rogue", theirs.node("rogue", "ip:" + CLUSTER_HOST));
    assertThat(seen).as("the rogue sees only itself").hasSize(1).allMatch(n -> n.startsWith("rogue."));
    for (String node : List.of("a", "b")) {
      assertThat(log(node)).as("node " + node + " never had the rogue in its view").contains("member.")
          .doesNotContain("rogue.");
    }
  }

  @Test
  void a_member_without_a_certificate_does_not_join() throws Exception {
    // the nodes' own stack, speaking plain TCP (as every member did before): its handshake never completes
    Map<String, String> files = theirs.node("plain", "ip:" + CLUSTER_HOST);
    try (JChannel rogue = Cluster.channel(config(ClusterTest.freePair(), files), identity(files), "plain.0")) {
      ((TCP) rogue.getProtocolStack().getTransport()).setSocketFactory(new DefaultSocketFactory());
      rogue.connect(NAME);
      assertThat(rogue.getView().getMembers()).as("the rogue is alone").hasSize(1);
    }
    for (String node : List.of("a", "b")) {
      assertThat(log(node)).doesNotContain("plain.0");
    }
  }

  /** A Vert.x cluster frame: a ping, which a clustered event bus answers with one byte on the connection. */
  static byte[] pingFrame() {
    Buffer b = Buffer.buffer().appendInt(0).appendByte((byte) 2).appendByte((byte) 1).appendByte((byte) 0);
    for (String s : List.of("sandbox.adapter.local.a", "", "rogue")) {
      b.appendInt(s.length()).appendString(s);
    }
    b.appendInt(4); // no headers; a ping has no body
    b.setInt(0, b.length() - 4);
    return b.getBytes();
  }

  /**
   * A frame for the local adapter of node A, as hand-written attacks sent them: a JSON command in the
   * project's shape, which a plaintext bus would hand to the adapter.
   */
  static byte[] commandFrame(Path marker) {
    byte[] body = new JsonObject().put("command", "touch " + marker).encode().getBytes(StandardCharsets.UTF_8);
    Buffer b = Buffer.buffer().appendInt(0).appendByte((byte) 2).appendByte((byte) 6).appendByte((byte) 0);
    for (String s : List.of("sandbox.adapter.local.a", "", "rogue")) {
      b.appendInt(s.length()).appendString(s);
    }
    b.appendInt(4).appendInt(body.length).appendBytes(body);
    b.setInt(0, b.length() - 4);
    return b.getBytes();
  }

  /** What the peer says after {@code bytes}: -1 for a closed connection, else its first byte. */
  static int answer(Socket socket, byte[]... frames) throws IOException {
    socket.setSoTimeout(5_000);
    OutputStream out = socket.getOutputStream();
    for (byte[] f : frames) {
      out.write(f);
    }
    out.flush();
    InputStream in = socket.getInputStream();
    return in.read();
  }

  static SSLContext tls(KeyManager[] keys) throws Exception {
    TrustManager anyServer = new X509TrustManager() { // the attacker accepts whatever the node presents
      @Override
      public void checkClientTrusted(X509Certificate[] chain, String authType) { }

      @Override
      public void checkServerTrusted(X509Certificate[] chain, String authType) { }

      @Override
      public X509Certificate[] getAcceptedIssuers() {
        return new X509Certificate[0];
      }
    };
    SSLContext c = SSLContext.getInstance("TLSv1.3");
    c.init(keys, new TrustManager[] {anyServer}, new SecureRandom());
    return c;
  }

  static Socket connect(int port) throws IOException {
    Socket s = new Socket();
    s.connect(new InetSocketAddress(CLUSTER_HOST, port), 5_000);
    return s;
  }

  /** A TLS connection, handshake included, whose first answer to the frames is returned (-1: closed). */
  static int answerOverTls(SSLContext context, int port, byte[]... frames) throws Exception {
    try (SSLSocket s = (SSLSocket) context.getSocketFactory().createSocket(connect(port), CLUSTER_HOST, port, true)) {
      s.startHandshake();
      return answer(s, frames);
    }
  }

  @Test
  void hand_written_event_bus_frames_get_no_answer_and_run_nothing() throws Exception {
    int bus = CLUSTER_PORTS.get("a") + 1;
    Path marker = dirs.resolve("frame-ran");
    // control: a member's connection is answered (a pong), so the frame is one the bus understands
    assertThat(answerOverTls(tls(identity(ours.node("peer", "ip:" + CLUSTER_HOST)).keyManagers()), bus, pingFrame()))
        .isEqualTo(PONG);

    try (Socket plain = connect(bus)) { // plain TCP: a TLS server reads no frame from it
      int first = answer(plain, pingFrame(), commandFrame(marker));
      assertThat(first).as("plaintext gets no pong, at most a TLS alert").isNotEqualTo(PONG).isIn(-1, 0x15);
    }
    // TLS without a client certificate, and with one of another CA: the handshake fails
    for (KeyManager[] keys : List.of(new KeyManager[0], identity(theirs.node("stranger", "ip:" + CLUSTER_HOST))
        .keyManagers())) {
      assertThatThrownBy(() -> answerOverTls(tls(keys), bus, pingFrame(), commandFrame(marker)))
          .isInstanceOfAny(SSLException.class, java.net.SocketException.class);
    }
    Thread.sleep(500);
    assertThat(marker).as("no command ran").doesNotExist();
  }

  @Test
  void the_membership_port_answers_nothing_in_plaintext_nor_without_a_certificate() throws Exception {
    int membership = CLUSTER_PORTS.get("a");
    // what a Hazelcast client (CP2) and member (HZC) open with, and what a JGroups TCP peer does (its cookie)
    for (String opening : List.of("CP2", "HZC", "bela")) {
      try (Socket plain = connect(membership)) {
        byte[] hello = new byte[64];
        System.arraycopy(opening.getBytes(StandardCharsets.US_ASCII), 0, hello, 0, opening.length());
        int first;
        try {
          first = answer(plain, hello);
        } catch (SocketTimeoutException | java.net.SocketException closed) {
          first = -1;
        }
        assertThat(first).as(opening + ": no answer but a TLS alert").isIn(-1, 0x15);
      }
    }
    assertThatThrownBy(() -> answerOverTls(tls(new KeyManager[0]), membership, new byte[] {'b', 'e', 'l', 'a'}))
        .isInstanceOfAny(SSLException.class, java.net.SocketException.class);
  }

  @Test
  void the_cluster_ports_listen_on_the_cluster_host_only() throws Exception {
    for (String n : List.of("a", "b")) {
      long pid = GW.get(n).process.pid();
      Set<String> sockets = socketInodes(pid);
      Set<String> listening = new HashSet<>();
      for (String table : List.of("/proc/net/tcp", "/proc/net/tcp6")) {
        for (String line : Files.readAllLines(Path.of(table)).stream().skip(1).toList()) {
          String[] f = line.trim().split("\\s+");
          if (f[3].equals("0A") && sockets.contains(f[9])) { // LISTEN
            listening.add(address(f[1]));
          }
        }
      }
      int cp = CLUSTER_PORTS.get(n);
      assertThat(listening).as("node " + n + "'s listening sockets").containsExactlyInAnyOrder(
          "127.0.0.1:" + HTTP_PORTS.get(n), CLUSTER_HOST + ":" + cp, CLUSTER_HOST + ":" + (cp + 1));
      // UDP: only the DNS resolver's client sockets (every node has them), never JGroups' probe or multicast
      for (String table : List.of("/proc/net/udp", "/proc/net/udp6")) {
        for (String line : Files.readAllLines(Path.of(table)).stream().skip(1).toList()) {
          String[] f = line.trim().split("\\s+");
          int port = Integer.parseInt(f[1].split(":")[1], 16);
          if (sockets.contains(f[9])) {
            assertThat(port).as("node " + n + ": UDP " + address(f[1])).isNotIn(7500, 45588);
          }
        }
      }
      assertThat(Files.readString(Path.of("/proc/net/igmp"))).as("no member of JGroups' probe group 224.0.75.75")
          .doesNotContain("4B4B00E0");
      for (int port : List.of(cp, cp + 1)) {
        assertThatThrownBy(() -> new Socket("127.0.0.1", port).close()).as("127.0.0.1:" + port)
            .isInstanceOf(ConnectException.class);
      }
    }
  }

  static Set<String> socketInodes(long pid) throws IOException {
    Set<String> inodes = new HashSet<>();
    try (var fds = Files.list(Path.of("/proc", String.valueOf(pid), "fd"))) {
      for (Path fd : fds.toList()) {
        try {
          String target = Files.readSymbolicLink(fd).toString();
          if (target.startsWith("socket:[")) {
            inodes.add(target.substring(8, target.length() - 1));
          }
        } catch (IOException gone) {
          // closed meanwhile
        }
      }
    }
    return inodes;
  }

  /** {@code 0200007F:1F90} or its 32-digit IPv6 form as {@code 127.0.0.2:8080} (IPv4-mapped as IPv4). */
  static String address(String hex) throws IOException {
    String[] parts = hex.split(":");
    byte[] raw = HexFormat.of().parseHex(parts[0]);
    byte[] bytes = new byte[raw.length];
    for (int word = 0; word < raw.length; word += 4) { // each 32-bit word is in host (little-endian) order
      for (int i = 0; i < 4; i++) {
        bytes[word + i] = raw[word + 3 - i];
      }
    }
    return InetAddress.getByAddress(bytes).getHostAddress() + ":" + Integer.parseInt(parts[1], 16);
  }

  @Test
  void a_capture_between_the_nodes_shows_no_tenant_value() throws Exception {
    String token = "tenant-secret-" + HexFormat.of().formatHex(new SecureRandom().generateSeed(12));
    Path between = dirs.resolve("between.pcap");
    Path api = dirs.resolve("api.pcap");
    List<Integer> ports = new ArrayList<>();
    CLUSTER_PORTS.values().forEach(p -> ports.addAll(List.of(p, p + 1)));
    Process cluster = capture(between, ports);
    Process control = capture(api, List.of(HTTP_PORTS.get("b"))); // the same secret where TLS is not spoken
    try {
      String sbx = call("a", "POST", "/v1/sandboxes", key, "{\"backend\":\"local\"}", 201).getString("id");
      JsonObject ran = call("b", "POST", "/v1/sandboxes/" + sbx + "/execute", key, new JsonObject()
          .put("command", "echo \"$SECRET_VALUE\"").put("env", new JsonObject().put("SECRET_VALUE", token)).encode(),
          200);
      assertThat(ran.getString("stdout")).as("the command ran on A, through B").isEqualTo(token + "\n");
    } finally {
      Thread.sleep(500); // the last packets reach the capture
      for (Process p : List.of(cluster, control)) {
        p.destroy(); // tcpdump writes what it has and stops
        assertThat(p.waitFor(10, TimeUnit.SECONDS)).isTrue();
      }
    }
    byte[] secret = token.getBytes(StandardCharsets.UTF_8);
    byte[] seen = Files.readAllBytes(between);
    assertThat(seen.length).as("the capture saw the nodes' traffic").isGreaterThan(2048);
    assertThat(indexOf(Files.readAllBytes(api), secret)).as("tcpdump sees a clear value").isNotNegative();
    assertThat(indexOf(seen, secret)).as("the value crossed the bus, never in clear").isNegative();
  }

  static Process capture(Path file, List<Integer> ports) throws Exception {
    String filter = String.join(" or ", ports.stream().map(p -> "tcp port " + p).toList());
    Process p = new ProcessBuilder("tcpdump", "-i", "lo", "--immediate-mode", "-U", "-s", "0", "-Z", "root", "-w",
        file.toString(), filter)
        .redirectErrorStream(true).start();
    // it says "listening on lo" once it captures
    StringBuilder said = new StringBuilder();
    InputStream in = p.getInputStream();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (!said.toString().contains("listening on") && System.nanoTime() < deadline && p.isAlive()) {
      int c = in.read();
      if (c < 0) {
        break;
      }
      said.append((char) c);
    }
    assertThat(said.toString()).as("tcpdump (bin/test installs it) started capturing").contains("listening on");
    Thread.ofPlatform().daemon().start(() -> {
      try {
        in.transferTo(OutputStream.nullOutputStream());
      } catch (IOException ignored) {
        // it stopped
      }
    });
    return p;
  }

  static int indexOf(byte[] haystack, byte[] needle) {
    outer:
    for (int i = 0; i + needle.length <= haystack.length; i++) {
      for (int j = 0; j < needle.length; j++) {
        if (haystack[i + j] != needle[j]) {
          continue outer;
        }
      }
      return i;
    }
    return -1;
  }
}
