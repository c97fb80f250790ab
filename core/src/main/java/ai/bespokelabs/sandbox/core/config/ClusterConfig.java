package ai.bespokelabs.sandbox.core.config;

import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/**
 * Clustering of several gateway nodes over one event bus ({@code cluster} in {@code conf/gateway.json}).
 *
 * @param enabled whether this node joins a cluster ({@code BESPOKE_CLUSTER}); off: one node, as before
 * @param host this node's cluster address, the only one its cluster listeners bind to and the one it announces
 *     ({@code BESPOKE_CLUSTER_HOST})
 * @param port this node's membership port; the event bus listens on the next one ({@code BESPOKE_CLUSTER_PORT})
 * @param name the cluster's name: nodes of another name do not join ({@code BESPOKE_CLUSTER_NAME}); the
 *     certificates, not the name, keep strangers out
 * @param tls the cluster identity of this node, set when {@code enabled}
 * @param members the seeds joined over TCP/IP, {@code host:port} each ({@code BESPOKE_CLUSTER_MEMBERS})
 * @param kubernetes whether members are found through the DNS records of a headless Kubernetes service
 *     ({@code BESPOKE_CLUSTER_KUBERNETES})
 * @param kubernetesService the (headless) service whose pods are the members
 *     ({@code BESPOKE_CLUSTER_KUBERNETES_SERVICE})
 * @param drainSecs how long a stopping node lets its running executions finish ({@code BESPOKE_DRAIN_SECS})
 */
public record ClusterConfig(boolean enabled, String host, int port, String name, Optional<Tls> tls,
    List<String> members, boolean kubernetes, Optional<String> kubernetesService, int drainSecs) {
  public ClusterConfig {
    members = List.copyOf(members);
  }

  /**
   * The PEM files that make a node a member: nothing without a certificate of the cluster's CA joins.
   *
   * @param ca the cluster CA's certificate, or a bundle of several while the CA is rotated
   *     ({@code BESPOKE_CLUSTER_TLS_CA})
   * @param cert this node's certificate, signed by that CA, naming {@code host} ({@code BESPOKE_CLUSTER_TLS_CERT})
   * @param key this node's private key, unencrypted PKCS#8 ({@code BESPOKE_CLUSTER_TLS_KEY})
   */
  public record Tls(Path ca, Path cert, Path key) {}
}
