package ai.bespokelabs.sandbox.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.core.testing.TestDatabase;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import ai.bespokelabs.sandbox.testkit.ClusterCertificates;
import java.nio.file.Files;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What a user sees when the gateway cannot start: one line saying why and what to do, no stack trace. */
class StartupErrorsTest {
  @Test
  void a_port_in_use_is_one_line_naming_it_and_how_to_choose_another(@TempDir Path dataDir) throws Exception {
    try (ServerSocket taken = new ServerSocket()) {
      taken.bind(new InetSocketAddress("127.0.0.1", 0));
      int port = taken.getLocalPort();
      String javaBin = ProcessHandle.current().info().command().orElse("java");
      ProcessBuilder pb = new ProcessBuilder(List.of(javaBin, "--enable-native-access=ALL-UNNAMED", "-cp",
          System.getProperty("java.class.path"), Main.class.getName(), "--port", String.valueOf(port)))
          .redirectErrorStream(true);
      pb.environment().put("BESPOKE_DATA_DIR", dataDir.toString());
      pb.environment().put("BESPOKE_DATABASE_URL", TestDatabase.newDatabaseUrl());
      Process p = pb.start();
      String out = outputWithin60s(p);
      assertThat(p.exitValue()).as(out).isEqualTo(2);
      assertThat(out).contains("sandbox-gateway: cannot listen on 127.0.0.1:" + port)
          .contains("choose another port with PORT=<port> or --port <port>")
          .doesNotContain("\tat ").doesNotContain("Exception in thread");
    }
  }

  /**
   * A clustered node whose identity is missing or wrong does not start: exit 2 and one line naming the setting,
   * before the database or the cluster is touched (the database URL here leads nowhere).
   */
  @Test
  void a_cluster_identity_missing_or_wrong_is_one_line_naming_its_setting(@TempDir Path dir) throws Exception {
    ClusterCertificates ours = ClusterCertificates.newCa(dir.resolve("ours"), "cluster-ca");
    ClusterCertificates theirs = ClusterCertificates.newCa(dir.resolve("theirs"), "other-ca");
    Map<String, String> good = ours.node("node", "ip:127.0.0.1");
    Map<String, String> foreign = theirs.node("foreign", "ip:127.0.0.1");
    Map<String, String> elsewhere = ours.node("elsewhere", "ip:10.9.9.9", "dns:gw.example");
    Path notPem = Files.writeString(dir.resolve("not.pem"), "just text\n");
    // a traditional (not PKCS#8) key header: refused for its form, whatever it holds
    Path oldKey = Files.writeString(dir.resolve("old.key"),
        "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIA==\n-----END EC PRIVATE KEY-----\n");

    assertOneLine(dir, without(good, "BESPOKE_CLUSTER_TLS_KEY"), "BESPOKE_CLUSTER=true needs BESPOKE_CLUSTER_TLS_KEY");
    assertOneLine(dir, with(good, "BESPOKE_CLUSTER_TLS_CA", dir.resolve("absent.pem").toString()),
        "BESPOKE_CLUSTER_TLS_CA: cannot read " + dir.resolve("absent.pem") + " (no such file)");
    assertOneLine(dir, with(good, "BESPOKE_CLUSTER_TLS_CERT", notPem.toString()),
        "BESPOKE_CLUSTER_TLS_CERT holds no PEM certificate");
    assertOneLine(dir, with(good, "BESPOKE_CLUSTER_TLS_KEY", oldKey.toString()),
        "BESPOKE_CLUSTER_TLS_KEY must be an unencrypted PKCS#8 key");
    assertOneLine(dir, with(foreign, "BESPOKE_CLUSTER_TLS_CA", good.get("BESPOKE_CLUSTER_TLS_CA")),
        "BESPOKE_CLUSTER_TLS_CERT is not a valid certificate of the CA in BESPOKE_CLUSTER_TLS_CA");
    assertOneLine(dir, elsewhere, "BESPOKE_CLUSTER_TLS_CERT does not name BESPOKE_CLUSTER_HOST 127.0.0.1");
    assertOneLine(dir, with(good, "BESPOKE_CLUSTER_TLS_KEY", elsewhere.get("BESPOKE_CLUSTER_TLS_KEY")),
        "BESPOKE_CLUSTER_TLS_KEY is not the key of the certificate in BESPOKE_CLUSTER_TLS_CERT");
  }

  private static Map<String, String> with(Map<String, String> base, String key, String value) {
    Map<String, String> m = new HashMap<>(base);
    m.put(key, value);
    return m;
  }

  private static Map<String, String> without(Map<String, String> base, String key) {
    Map<String, String> m = new HashMap<>(base);
    m.remove(key);
    return m;
  }

  private static void assertOneLine(Path dir, Map<String, String> tls, String expected) throws Exception {
    Path data = Files.createTempDirectory(dir, "data");
    String javaBin = ProcessHandle.current().info().command().orElse("java");
    ProcessBuilder pb = new ProcessBuilder(List.of(javaBin, "--enable-native-access=ALL-UNNAMED", "-XX:TieredStopAtLevel=1", "-cp",
        System.getProperty("java.class.path"), Main.class.getName(), "--port", "0")).redirectErrorStream(true);
    Map<String, String> env = pb.environment();
    env.keySet().removeIf(k -> k.startsWith("BESPOKE_"));
    env.putAll(Map.of("BESPOKE_DATA_DIR", data.toString(), "BESPOKE_CLUSTER", "true", "BESPOKE_CLUSTER_HOST",
        "127.0.0.1", "BESPOKE_DATABASE_URL", "postgresql://gw:unused@127.0.0.1:1/gw"));
    env.putAll(tls);
    Process p = pb.start();
    String out = outputWithin60s(p);
    assertThat(p.exitValue()).as(out).isEqualTo(2);
    List<String> lines = out.lines().filter(l -> !l.isBlank() && !l.startsWith("WARNING: ")).toList(); // the JVM's notes
    assertThat(lines).as(out).hasSize(1);
    assertThat(lines.get(0)).startsWith("sandbox-gateway: " + expected);
    if (tls.containsKey("BESPOKE_CLUSTER_TLS_KEY")) { // nothing of the key is quoted
      for (String body : Files.readAllLines(Path.of(tls.get("BESPOKE_CLUSTER_TLS_KEY")))) {
        if (!body.startsWith("-----")) {
          assertThat(out).doesNotContain(body);
        }
      }
    }
  }

  @Test
  void an_invalid_allowed_range_is_one_line_naming_the_setting(@TempDir Path dataDir) throws Exception {
    String javaBin = ProcessHandle.current().info().command().orElse("java");
    ProcessBuilder pb = new ProcessBuilder(List.of(javaBin, "--enable-native-access=ALL-UNNAMED", "-cp",
        System.getProperty("java.class.path"), Main.class.getName())).redirectErrorStream(true);
    pb.environment().put("BESPOKE_DATA_DIR", dataDir.toString());
    pb.environment().put("BESPOKE_SANDBOX_ALLOW_CIDRS", "10.0.0.0/8,10.1.0.0/99");
    Process p = pb.start();
    String out = outputWithin60s(p);
    assertThat(p.exitValue()).as(out).isEqualTo(2);
    assertThat(out.strip().lines()).as(out).hasSize(1).first().asString()
        .contains("BESPOKE_SANDBOX_ALLOW_CIDRS").contains("10.1.0.0/99");
  }

  /** What the gateway printed; one that is still running after 60 s is stopped and fails the test. */
  private static String outputWithin60s(Process p) throws Exception {
    java.util.concurrent.CompletableFuture<byte[]> out = java.util.concurrent.CompletableFuture.supplyAsync(() -> {
      try {
        return p.getInputStream().readAllBytes();
      } catch (java.io.IOException e) {
        throw new java.io.UncheckedIOException(e);
      }
    });
    boolean ended = p.waitFor(60, TimeUnit.SECONDS);
    if (!ended) {
      p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
    }
    String text = new String(out.get(10, TimeUnit.SECONDS), StandardCharsets.UTF_8);
    assertThat(ended).as("the gateway refused to start within 60 s; it printed: " + text).isTrue();
    return text;
  }
}
