package ai.bespokelabs.sandbox.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.bespokelabs.sandbox.core.config.ClusterConfig;
import ai.bespokelabs.sandbox.core.config.ConfigException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What deploy/certs/issue makes is what a node accepts as its identity, for compose's addresses and Kubernetes. */
class ClusterIdentityTest {
  @TempDir
  Path dir;

  static ClusterConfig config(String host, boolean kubernetes, Path dir, String node) {
    return new ClusterConfig(true, host, 5701, "bespoke-sandbox-gateway", Optional.of(new ClusterConfig.Tls(
        dir.resolve("ca.pem"), dir.resolve(node + ".pem"), dir.resolve(node + ".key"))), List.of(), kubernetes,
        kubernetes ? Optional.of("sandbox-gateway-cluster") : Optional.empty(), 0);
  }

  @Test
  void the_issue_script_makes_identities_a_node_accepts() throws Exception {
    Process p = new ProcessBuilder("bash", Path.of("..", "deploy", "certs", "issue").toString(), dir.toString(),
        "gateway-1=172.30.42.11", "pod=dns:sandbox-gateway-cluster").redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
    assertThat(p.exitValue()).as(out).isZero();
    assertThat(Files.getPosixFilePermissions(dir.resolve("gateway-1.key")))
        .isEqualTo(PosixFilePermissions.fromString("rw-------"));

    assertThat(ClusterIdentity.load(config("172.30.42.11", false, dir, "gateway-1")).sslContext()).isNotNull();
    assertThat(ClusterIdentity.load(config("10.1.2.3", true, dir, "pod")).sslContext()).isNotNull();
    assertThatThrownBy(() -> ClusterIdentity.load(config("172.30.42.12", false, dir, "gateway-1")))
        .isInstanceOf(ConfigException.class).hasMessageContaining("does not name BESPOKE_CLUSTER_HOST 172.30.42.12");
    assertThatThrownBy(() -> ClusterIdentity.load(config("10.1.2.3", false, dir, "pod")))
        .isInstanceOf(ConfigException.class).hasMessageContaining("BESPOKE_CLUSTER_TLS_CERT");
  }
}
