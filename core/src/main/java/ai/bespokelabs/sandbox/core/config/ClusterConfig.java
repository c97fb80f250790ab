package ai.bespokelabs.sandbox.core.config;

import java.util.List;
import java.util.Optional;

/**
 * Clustering of several gateway nodes over one event bus ({@code cluster} in {@code conf/gateway.json}).
 *
 * @param enabled whether this node joins a cluster ({@code BESPOKE_CLUSTER}); off: one node, as before
 * @param host this node's cluster address, also the one it announces ({@code BESPOKE_CLUSTER_HOST})
 * @param port this node's cluster port ({@code BESPOKE_CLUSTER_PORT})
 * @param members the seeds joined over TCP/IP, {@code host:port} each ({@code BESPOKE_CLUSTER_MEMBERS})
 * @param kubernetes whether members are found through the Kubernetes API ({@code BESPOKE_CLUSTER_KUBERNETES})
 * @param kubernetesService the (headless) service whose pods are the members
 *     ({@code BESPOKE_CLUSTER_KUBERNETES_SERVICE})
 * @param drainSecs how long a stopping node lets its running executions finish ({@code BESPOKE_DRAIN_SECS})
 */
public record ClusterConfig(boolean enabled, String host, int port, List<String> members, boolean kubernetes,
    Optional<String> kubernetesService, int drainSecs) {
  public ClusterConfig {
    members = List.copyOf(members);
  }
}
