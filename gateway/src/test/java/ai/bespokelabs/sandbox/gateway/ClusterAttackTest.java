package ai.bespokelabs.sandbox.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

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
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
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
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.net.ssl.KeyManager;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManager;
import javax.net.ssl.X509TrustManager;
import org.jgroups.JChannel;
import org.jgroups.protocols.TCP;
import org.jgroups.util.DefaultSocketFactory;
import ai.bespokelabs.sandbox.testkit.Waits;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two gateway nodes clustered on {@code 127.0.0.2} (loopback, but not the address the HTTP API listens on),
 * attacked the ways issue 27 reported: a process that is not a member joins the group (without a certificate,
 * with one of another CA), writes hand-made event-bus frames or plain bytes to the cluster ports, or reaches
 * them on another local address; and two more, each in a network namespace of its own, whose link a capture
 * reads. Each attack has a control that does the same with what a member has (a certificate of the cluster's
 * CA), or where TLS is not spoken, and succeeds, so the attack failing is the nodes' doing and not the test's.
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

  /** Root: the capture's nodes run in network namespaces of their own. */
  static final boolean ROOT = BwrapTest.GATEWAY_UID == 0;
  /** What the names of the capture's namespaces and links start with: this JVM's, unique on the host. */
  static final String NET = "bsxcap" + ProcessHandle.current().pid();
  /** A namespace or host link of this test, of this JVM or of another (one left by an aborted run). */
  static final Pattern NET_NAME = Pattern.compile("\\bbsxcap(\\d+)h?[ab]\\b");
  /** Each namespace's address on the link between the two: its cluster host, where its API listens too. */
  static final Map<String, String> NS_ADDRESS = Map.of("a", "10.233.0.1", "b", "10.233.0.2");
  /** The host's end of each namespace's link to it, and the namespace's end. */
  static final Map<String, String> HOST_SIDE = Map.of("a", "10.233.1.1", "b", "10.233.2.1");
  static final Map<String, String> NS_SIDE = Map.of("a", "10.233.1.2", "b", "10.233.2.2");
  /** A namespace has ports of its own: fixed ones. */
  static final int NS_HTTP_PORT = 8080;
  static final int NS_CLUSTER_PORT = 7800;
  /** A TLS 1.3 application data record's header (content type 23, legacy version 3.3). */
  static final byte[] TLS_APPLICATION_DATA = {0x17, 0x03, 0x03};

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
    if (ROOT) {
      linkDown(NET); // the capture test removes them itself; this if it could not
    }
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
    return config(port, files, NAME);
  }

  static ClusterConfig config(int port, Map<String, String> files, String name) {
    return new ClusterConfig(true, CLUSTER_HOST, port, name, Optional.of(new ClusterConfig.Tls(
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
    return joinAs(member, files, NAME);
  }

  static List<String> joinAs(String member, Map<String, String> files, String name) throws Exception {
    int port = ClusterTest.freePair();
    Vertx vertx = Cluster.vertx(new VertxOptions(), null, config(port, files, name), identity(files), member, c -> { });
    try {
      return ((VertxInternal) vertx).clusterManager().getNodes();
    } finally {
      vertx.close().await(30, TimeUnit.SECONDS);
    }
  }

  /**
   * Two clusters of one CA on the same seeds (staging beside production, say) stay apart by their name
   * ({@code BESPOKE_CLUSTER_NAME}): a node of the other name sees only itself, and neither node hears of it.
   */
  @Test
  void a_node_of_another_cluster_name_stays_apart() throws Exception {
    List<String> seen = joinAs("staging", ours.node("staging", "ip:" + CLUSTER_HOST), NAME + "-staging");
    assertThat(seen).as("the other cluster's node sees only itself").hasSize(1)
        .allMatch(n -> n.startsWith("staging."));
    for (String node : List.of("a", "b")) {
      assertThat(log(node)).as("node " + node + " never had it in its view").doesNotContain("staging.");
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
    // an attacker who accepts any node's certificate gets as far as presenting its own: refused, and logged
    // with the address it came from
    SSLContext attacker = tls(new KeyManager[] {presentingAlways(
        (javax.net.ssl.X509KeyManager) identity(theirs.node("intruder", "ip:" + CLUSTER_HOST)).keyManagers()[0])});
    try (SSLSocket s = (SSLSocket) attacker.getSocketFactory().createSocket(connect(CLUSTER_PORTS.get("a")),
        CLUSTER_HOST, CLUSTER_PORTS.get("a"), true)) {
      s.setSoTimeout(5_000);
      s.startHandshake();
      assertThat(s.getInputStream().read()).as("nothing but the end of the connection").isEqualTo(-1);
    } catch (IOException refusedInTheHandshake) {
      // TLS 1.3 may end the handshake before or after the client's certificate is read
    }
    Waits.upTo(10).alias("node a logged the refused peer")
        .until(() -> log("a").contains("Refused a cluster peer at 127.0.0.") && log("a").contains("CN=intruder"));
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

  /**
   * A key manager that presents its certificate whatever issuers the server asks for (JSSE's own would send
   * none, the node's CA not being among its issuers), as an attacker's client would.
   */
  static javax.net.ssl.X509KeyManager presentingAlways(javax.net.ssl.X509KeyManager keys) {
    return new javax.net.ssl.X509KeyManager() {
      @Override
      public String[] getClientAliases(String keyType, java.security.Principal[] issuers) {
        return keys.getClientAliases(keyType, null);
      }

      @Override
      public String chooseClientAlias(String[] keyType, java.security.Principal[] issuers, Socket socket) {
        return keys.chooseClientAlias(keyType, null, socket);
      }

      @Override
      public String[] getServerAliases(String keyType, java.security.Principal[] issuers) {
        return keys.getServerAliases(keyType, issuers);
      }

      @Override
      public String chooseServerAlias(String keyType, java.security.Principal[] issuers, Socket socket) {
        return keys.chooseServerAlias(keyType, issuers, socket);
      }

      @Override
      public X509Certificate[] getCertificateChain(String alias) {
        return keys.getCertificateChain(alias);
      }

      @Override
      public java.security.PrivateKey getPrivateKey(String alias) {
        return keys.getPrivateKey(alias);
      }
    };
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

  /**
   * Two more nodes, each in a network namespace of its own ({@code <NET>a}, {@code <NET>b}) and joined by a veth
   * pair on a private test subnet, the only link between them; each namespace also has a veth pair to this host
   * (its own small subnet), through which the test reaches the node's API and the node reaches the test's
   * PostgreSQL (a forwarder in this JVM on the host end: the server listens on loopback only and trusts loopback
   * connections only). A tenant runs, through B, an execution of a local sandbox hosted on A with a distinctive
   * value in its environment and its output; a capture on A's end of the link between the nodes must show the
   * event-bus traffic that carried it, all of it TLS, and never the value, which a capture of B's plain HTTP
   * leg does show. Each node's sandbox egress rules (nftables, for the sandbox uids only, never the gateway's
   * own) go in its namespace's tables, not this host's.
   */
  @Test
  void a_capture_between_two_nodes_in_network_namespaces_shows_no_tenant_value() throws Exception {
    assumeTrue(ROOT, "root: the two nodes run in network namespaces of their own");
    removeLeftovers();
    Map<String, Forwarder> forwarders = new HashMap<>();
    List<String> nodes = List.of("ns-a", "ns-b");
    try {
      linkUp();
      URI database = URI.create(TestDatabase.newDatabaseUrl());
      InetSocketAddress postgres = new InetSocketAddress(InetAddress.getLoopbackAddress(), database.getPort());
      String members = NS_ADDRESS.get("a") + ":" + NS_CLUSTER_PORT + "," + NS_ADDRESS.get("b") + ":" + NS_CLUSTER_PORT;
      for (String n : List.of("a", "b")) {
        forwarders.put(n, new Forwarder(HOST_SIDE.get(n), postgres));
        startInNamespace(n, "postgresql://postgres@" + HOST_SIDE.get(n) + ":" + forwarders.get(n).port()
            + database.getPath(), members);
      }
      String tenant = call("ns-a", "POST", "/v1/organizations", null, "{\"name\":\"Victim\"}", 201)
          .getJsonObject("api_key").getString("secret");
      String token = "tenant-secret-" + HexFormat.of().formatHex(new SecureRandom().generateSeed(12));
      Path between = dirs.resolve("between.pcap");
      Path api = dirs.resolve("api.pcap");
      String a = NS_ADDRESS.get("a");
      String b = NS_ADDRESS.get("b");
      // all that passes between the two nodes, on A's end of their link
      Process cluster = capture(NET + "a", NET + "ab", between, "host " + a + " and host " + b);
      // the same value where TLS is not spoken: the tenant's request to B, on B's link to this host
      Process control = capture(NET + "b", NET + "bh", api, "tcp port " + NS_HTTP_PORT);
      try {
        String sbx = call("ns-a", "POST", "/v1/sandboxes", tenant, "{\"backend\":\"local\"}", 201).getString("id");
        JsonObject ran = call("ns-b", "POST", "/v1/sandboxes/" + sbx + "/execute", tenant, new JsonObject()
            .put("command", "echo \"$SECRET_VALUE\"").put("env", new JsonObject().put("SECRET_VALUE", token))
            .encode(), 200);
        assertThat(ran.getString("stdout")).as("the command ran on A, through B").isEqualTo(token + "\n");
      } finally {
        Thread.sleep(500); // the last packets reach the capture
        for (Process p : List.of(cluster, control)) {
          p.destroy(); // tcpdump writes what it has and stops
          assertThat(p.waitFor(10, TimeUnit.SECONDS)).as("tcpdump stopped").isTrue();
        }
      }

      byte[] secret = token.getBytes(StandardCharsets.UTF_8);
      Map<Flow, byte[]> streams = tcpStreams(between);
      String seen = streams.entrySet().stream().map(e -> e.getKey() + ": " + e.getValue().length + " bytes")
          .toList().toString();
      int bus = NS_CLUSTER_PORT + 1;
      assertThat(payload(streams, b, a, bus)).as("the execution went from B to A's event bus: " + seen).isPositive();
      assertThat(payload(streams, a, b, bus)).as("its result came back to B's event bus: " + seen).isPositive();
      for (Map.Entry<Flow, byte[]> e : streams.entrySet()) {
        assertThat(List.of(e.getKey().fromPort(), e.getKey().toPort())).as("only cluster ports between the nodes: "
            + e.getKey()).containsAnyOf(NS_CLUSTER_PORT, bus);
        assertThat(indexOf(e.getValue(), TLS_APPLICATION_DATA)).as("TLS 1.3 records on " + e.getKey())
            .isNotNegative();
      }
      assertThat(tcpStreams(api).values()).as("tcpdump sees a clear value on the plain HTTP leg")
          .anyMatch(s -> indexOf(s, secret) >= 0);
      assertThat(indexOf(Files.readAllBytes(between), secret)).as("the value in the capture between the nodes")
          .isNegative();
      for (Map.Entry<Flow, byte[]> e : streams.entrySet()) {
        assertThat(indexOf(e.getValue(), secret)).as("the value in clear on " + e.getKey()).isNegative();
      }
    } catch (Throwable failure) {
      throw withLogs(failure, nodes);
    } finally {
      for (String n : nodes) {
        GatewayProcess g = GW.remove(n);
        if (g != null) {
          g.process.destroyForcibly();
          g.process.waitFor(30, TimeUnit.SECONDS);
        }
        Path log = dirs.resolve(n).resolve("gateway.log");
        if (Files.exists(log)) {
          Files.copy(log, Path.of("target", "cluster-attack-test-" + n + ".log"),
              java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        }
      }
      forwarders.values().forEach(Forwarder::close);
      linkDown(NET);
    }
  }

  /**
   * The namespaces {@code <NET>a}, {@code <NET>b}, the link between them ({@code <NET>ab} in A, {@code <NET>ba}
   * in B) and each one's link to this host ({@code <NET>ha} here, {@code <NET>ah} in A), routed.
   */
  static void linkUp() throws Exception {
    for (String n : List.of("a", "b")) {
      ip("netns", "add", NET + n);
    }
    ip("link", "add", NET + "ab", "netns", NET + "a", "type", "veth", "peer", "name", NET + "ba", "netns", NET + "b");
    for (String n : List.of("a", "b")) {
      String ns = NET + n;
      String host = NET + "h" + n;
      String toHost = NET + n + "h";
      String toPeer = NET + n + (n.equals("a") ? "b" : "a");
      ip("link", "add", host, "type", "veth", "peer", "name", toHost, "netns", ns);
      ip("addr", "add", HOST_SIDE.get(n) + "/24", "dev", host);
      ip("link", "set", host, "up");
      ip("-n", ns, "link", "set", "lo", "up");
      ip("-n", ns, "addr", "add", NS_ADDRESS.get(n) + "/24", "dev", toPeer);
      ip("-n", ns, "link", "set", toPeer, "up");
      ip("-n", ns, "addr", "add", NS_SIDE.get(n) + "/24", "dev", toHost);
      ip("-n", ns, "link", "set", toHost, "up");
      // the node's address is reached through its link to this host; the namespace answers for all its addresses
      ip("route", "add", NS_ADDRESS.get(n) + "/32", "via", NS_SIDE.get(n), "dev", host);
    }
  }

  /** Removes the namespaces and links named {@code prefix}..., ending what still runs in them. Best effort. */
  static void linkDown(String prefix) {
    for (String n : List.of("a", "b")) {
      String ns = prefix + n;
      if (Files.exists(Path.of("/run/netns", ns))) {
        // what the nodes left running (their sandboxes' programs), and a node or tcpdump of an aborted run
        List<ProcessHandle> left = quietly("ip", "netns", "pids", ns).lines().map(String::trim)
            .filter(s -> s.matches("\\d+")).map(Long::parseLong).map(ProcessHandle::of).flatMap(Optional::stream)
            .toList();
        left.forEach(ProcessHandle::destroyForcibly);
        for (ProcessHandle p : left) {
          try {
            p.onExit().get(10, TimeUnit.SECONDS);
          } catch (Exception stillThere) {
            // the namespace goes when it ends
          }
        }
        quietly("ip", "netns", "del", ns);
      }
      quietly("ip", "link", "del", prefix + "h" + n); // gone with its namespace, unless a process kept it
    }
  }

  /** Removes what an aborted run of this test left: namespaces and links named after a JVM that is gone. */
  static void removeLeftovers() {
    Set<String> prefixes = new HashSet<>(List.of(NET));
    Matcher m = NET_NAME.matcher(quietly("ip", "netns", "list") + "\n" + quietly("ip", "-o", "link", "show"));
    while (m.find()) {
      if (ProcessHandle.of(Long.parseLong(m.group(1))).filter(ProcessHandle::isAlive).isEmpty()) {
        prefixes.add("bsxcap" + m.group(1));
      }
    }
    prefixes.forEach(ClusterAttackTest::linkDown);
  }

  /** Node {@code ns-<n>}, its JVM in namespace {@code <NET><n>}, clustered on its address on the link. */
  static void startInNamespace(String n, String databaseUrl, String members) throws Exception {
    String node = "ns-" + n;
    Path dir = dirs.resolve(node);
    Files.createDirectories(dir);
    String address = NS_ADDRESS.get(n);
    Map<String, String> env = new HashMap<>(Map.of("BESPOKE_DATABASE_URL", databaseUrl, "HOST", address,
        "BESPOKE_CONTROL_PLANE_ADMIN_TOKEN", TestGateway.ADMIN, "BESPOKE_API_KEY_PEPPER", ClusterTest.PEPPER,
        "BESPOKE_CLUSTER", "true", "BESPOKE_CLUSTER_HOST", address, "BESPOKE_CLUSTER_MEMBERS", members,
        "BESPOKE_NODE_ID", node, "BESPOKE_CLUSTER_PORT", String.valueOf(NS_CLUSTER_PORT), "BESPOKE_DRAIN_SECS", "0"));
    env.putAll(ours.node(node, "ip:" + address));
    try {
      GW.put(node, GatewayProcess.start(List.of("ip", "netns", "exec", NET + n), dir, address, NS_HTTP_PORT, env,
          List.of("-XX:TieredStopAtLevel=1")));
    } catch (RuntimeException | Error e) {
      throw new AssertionError("node " + node + " did not start in namespace " + NET + n, e);
    }
  }

  /** {@code failure}, with what the nodes logged and the namespaces' addresses: what to look at first. */
  static AssertionError withLogs(Throwable failure, List<String> nodes) {
    StringBuilder s = new StringBuilder(String.valueOf(failure.getMessage()));
    for (String n : List.of("a", "b")) {
      s.append("\n--- namespace ").append(NET).append(n).append(" ---\n")
          .append(quietly("ip", "-n", NET + n, "-br", "addr"));
    }
    for (String node : nodes) {
      Path log = dirs.resolve(node).resolve("gateway.log");
      try {
        List<String> lines = Files.exists(log) ? Files.readAllLines(log) : List.of("(no log)");
        s.append("\n--- node ").append(node).append("'s log, last 200 lines ---\n")
            .append(String.join("\n", lines.subList(Math.max(0, lines.size() - 200), lines.size())));
      } catch (IOException e) {
        s.append("\n(node ").append(node).append("'s log: ").append(e).append(')');
      }
    }
    return new AssertionError(s.toString(), failure);
  }

  /** Runs {@code ip} with {@code args}; fails with what it said. */
  static void ip(String... args) throws IOException, InterruptedException {
    List<String> cmd = new ArrayList<>(List.of("ip"));
    cmd.addAll(List.of(args));
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (!p.waitFor(30, TimeUnit.SECONDS) || p.exitValue() != 0) {
      throw new IllegalStateException(String.join(" ", cmd) + " failed: " + out);
    }
  }

  /** What {@code cmd} printed, whether or not it succeeded ("" if it did not run). */
  static String quietly(String... cmd) {
    try {
      Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      p.waitFor(30, TimeUnit.SECONDS);
      return out;
    } catch (IOException e) {
      return "";
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return "";
    }
  }

  /** Joins whoever connects to {@code host} (an ephemeral port) to {@code target}, each direction a thread. */
  static final class Forwarder implements AutoCloseable {
    private final ServerSocket server = new ServerSocket();
    private final Set<Socket> open = ConcurrentHashMap.newKeySet();

    Forwarder(String host, InetSocketAddress target) throws IOException {
      server.bind(new InetSocketAddress(host, 0));
      Thread.ofVirtual().start(() -> {
        while (!server.isClosed()) {
          try {
            Socket in = server.accept();
            Socket out = new Socket();
            open.add(in);
            open.add(out);
            try {
              out.connect(target, 5_000);
            } catch (IOException refused) {
              in.close();
              out.close();
              continue;
            }
            pipe(in, out);
            pipe(out, in);
          } catch (IOException closed) {
            return;
          }
        }
      });
    }

    int port() {
      return server.getLocalPort();
    }

    private void pipe(Socket from, Socket to) {
      Thread.ofVirtual().start(() -> {
        try (from; to) {
          from.getInputStream().transferTo(to.getOutputStream());
        } catch (IOException ended) {
          // either side closed
        } finally {
          open.remove(from);
          open.remove(to);
        }
      });
    }

    @Override
    public void close() {
      try {
        server.close();
      } catch (IOException ignored) {
        // closing
      }
      for (Socket s : open) {
        try {
          s.close();
        } catch (IOException ignored) {
          // closing
        }
      }
    }
  }

  /** tcpdump in {@code namespace} on {@code device}, writing the packets {@code filter} matches to {@code file}. */
  static Process capture(String namespace, String device, Path file, String filter) throws Exception {
    Process p = new ProcessBuilder("ip", "netns", "exec", namespace, "tcpdump", "-i", device, "--immediate-mode",
        "-U", "-s", "0", "-Z", "root", "-w", file.toString(), filter)
        .redirectErrorStream(true).start();
    // it says "listening on <device>" once it captures
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
    assertThat(said.toString()).as("tcpdump (bin/test installs it) started capturing on " + device)
        .contains("listening on");
    Thread.ofPlatform().daemon().start(() -> {
      try {
        in.transferTo(OutputStream.nullOutputStream());
      } catch (IOException ignored) {
        // it stopped
      }
    });
    return p;
  }

  /** One direction of a TCP connection. */
  record Flow(String from, int fromPort, String to, int toPort) {
    @Override
    public String toString() {
      return from + ":" + fromPort + " > " + to + ":" + toPort;
    }
  }

  /** The payload bytes from {@code from} to {@code to}'s port {@code toPort}. */
  static long payload(Map<Flow, byte[]> streams, String from, String to, int toPort) {
    return streams.entrySet().stream().filter(e -> e.getKey().from().equals(from) && e.getKey().to().equals(to)
        && e.getKey().toPort() == toPort).mapToLong(e -> e.getValue().length).sum();
  }

  /**
   * Each direction of each IPv4 TCP connection in a capture (libpcap format, Ethernet frames), its payload put
   * back in sequence order, so that a value split between segments is found whole.
   */
  static Map<Flow, byte[]> tcpStreams(Path pcap) throws IOException {
    ByteBuffer file = ByteBuffer.wrap(Files.readAllBytes(pcap));
    int magic = file.getInt(0);
    if (magic == 0xd4c3b2a1 || magic == 0x4d3cb2a1) {
      file.order(ByteOrder.LITTLE_ENDIAN);
    } else {
      assertThat(magic).as("a pcap file: " + pcap).isIn(0xa1b2c3d4, 0xa1b23c4d);
    }
    assertThat(file.getInt(20) & 0x0fffffff).as("Ethernet frames in " + pcap).isEqualTo(1);
    Map<Flow, Integer> first = new HashMap<>();
    Map<Flow, TreeMap<Integer, byte[]>> segments = new java.util.LinkedHashMap<>();
    for (int at = 24; at + 16 <= file.limit(); ) {
      int length = file.getInt(at + 8);
      ByteBuffer f = file.slice(at + 16, Math.min(length, file.limit() - at - 16)); // network byte order
      at += 16 + length;
      if (f.limit() < 54 || f.getShort(12) != 0x0800 || f.get(23) != 6) { // IPv4, TCP
        continue;
      }
      int tcp = 14 + (f.get(14) & 0x0f) * 4;
      int total = f.getShort(16) & 0xffff;
      int end = total == 0 ? f.limit() : Math.min(f.limit(), 14 + total); // 0: a segment offloaded whole
      int data = tcp + ((f.get(tcp + 12) & 0xf0) >> 2);
      if (data >= end) {
        continue;
      }
      Flow flow = new Flow(ipv4(f, 26), f.getShort(tcp) & 0xffff, ipv4(f, 30), f.getShort(tcp + 2) & 0xffff);
      int seq = f.getInt(tcp + 4);
      int offset = seq - first.computeIfAbsent(flow, k -> seq); // wraps as TCP's sequence numbers do
      byte[] bytes = new byte[end - data];
      f.get(data, bytes);
      segments.computeIfAbsent(flow, k -> new TreeMap<>()).merge(offset, bytes, (x, y) -> x.length >= y.length ? x : y);
    }
    Map<Flow, byte[]> streams = new java.util.LinkedHashMap<>();
    segments.forEach((flow, byOffset) -> {
      java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
      long next = byOffset.firstKey();
      for (Map.Entry<Integer, byte[]> s : byOffset.entrySet()) {
        long skip = Math.max(0, next - s.getKey()); // a retransmission overlaps what is there
        if (skip < s.getValue().length) {
          out.write(s.getValue(), (int) skip, s.getValue().length - (int) skip);
          next = (long) s.getKey() + s.getValue().length;
        }
      }
      streams.put(flow, out.toByteArray());
    });
    return streams;
  }

  static String ipv4(ByteBuffer frame, int at) throws IOException {
    byte[] a = new byte[4];
    frame.get(at, a);
    return InetAddress.getByAddress(a).getHostAddress();
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
