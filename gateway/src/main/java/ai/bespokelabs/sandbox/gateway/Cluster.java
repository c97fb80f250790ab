package ai.bespokelabs.sandbox.gateway;

import ai.bespokelabs.sandbox.core.config.ClusterConfig;

import com.hazelcast.cluster.MembershipEvent;
import com.hazelcast.cluster.MembershipListener;
import com.hazelcast.config.Config;
import com.hazelcast.config.JoinConfig;
import com.hazelcast.config.NetworkConfig;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.spi.cluster.hazelcast.ConfigUtil;
import io.vertx.spi.cluster.hazelcast.HazelcastClusterManager;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * The Vert.x instance of a node: a plain one, or (with {@code BESPOKE_CLUSTER}) one whose event bus spans every
 * node of the cluster, with Hazelcast as cluster manager. Members join over TCP/IP from the configured seeds
 * or through Kubernetes discovery, never multicast. The event bus listens on the cluster host at the cluster
 * port + 1. Each member carries this gateway's node id ({@link #NODE_ATTRIBUTE}), so a member that leaves
 * names the node to take over.
 */
final class Cluster {
  static final String NODE_ATTRIBUTE = "bespoke.node";
  static final String NAME = "bespoke-sandbox-gateway";
  static final long JOIN_TIMEOUT_SECS = 120;

  private final HazelcastClusterManager manager;

  private Cluster(HazelcastClusterManager manager) {
    this.manager = manager;
  }

  /** A new Vert.x instance, clustered as {@code config} says; blocks until it joined. */
  static Vertx vertx(VertxOptions options, io.vertx.core.spi.VertxMetricsFactory metrics, ClusterConfig config,
      String nodeId, Consumer<Cluster> joined) {
    if (!config.enabled()) {
      return Vertx.builder().with(options).withMetrics(metrics).build();
    }
    if (System.getProperty("hazelcast.logging.type") == null) {
      System.setProperty("hazelcast.logging.type", "slf4j"); // read before any configuration is
    }
    HazelcastClusterManager manager = new HazelcastClusterManager(hazelcast(config, nodeId));
    options.getEventBusOptions().setHost(config.host()).setPort(config.port() + 1)
        .setClusterPublicHost(config.host()).setClusterPublicPort(config.port() + 1);
    try {
      Vertx vertx = Vertx.builder().with(options).withMetrics(metrics).withClusterManager(manager).buildClustered()
          .await(JOIN_TIMEOUT_SECS, TimeUnit.SECONDS);
      joined.accept(new Cluster(manager));
      return vertx;
    } catch (Exception e) {
      throw new IllegalStateException("cannot join the cluster at " + config.host() + ":" + config.port() + ": " + e, e);
    }
  }

  /** The Hazelcast configuration: Vert.x's own maps, this node's address, how members are found. */
  static Config hazelcast(ClusterConfig c, String nodeId) {
    Config hz = ConfigUtil.loadConfig();
    hz.setClusterName(NAME);
    hz.getMemberAttributeConfig().setAttribute(NODE_ATTRIBUTE, nodeId);
    // the gateway's shutdown hook drains first and then leaves the cluster itself
    hz.setProperty("hazelcast.shutdownhook.enabled", "false");
    hz.setProperty("hazelcast.phone.home.enabled", "false");
    hz.setProperty("hazelcast.logging.type", "slf4j");
    // a member that stops answering is removed within seconds, well inside the 15 s take-over bound
    hz.setProperty("hazelcast.heartbeat.interval.seconds", "1");
    hz.setProperty("hazelcast.max.no.heartbeat.seconds", "6");
    hz.setProperty("hazelcast.local.localAddress", c.host());
    hz.setProperty("hazelcast.wait.seconds.before.join", "1");
    NetworkConfig network = hz.getNetworkConfig();
    network.setPort(c.port()).setPortAutoIncrement(false).setPublicAddress(c.host() + ":" + c.port());
    JoinConfig join = network.getJoin();
    join.getMulticastConfig().setEnabled(false);
    join.getAutoDetectionConfig().setEnabled(false);
    if (c.kubernetes()) {
      join.getTcpIpConfig().setEnabled(false);
      join.getKubernetesConfig().setEnabled(true)
          .setProperty("service-name", c.kubernetesService().orElseThrow());
    } else {
      // seeds not up yet (the first nodes of a cluster starting) cost a second each, not the default five
      join.getTcpIpConfig().setEnabled(true).setMembers(c.members()).setConnectionTimeoutSeconds(1);
    }
    return hz;
  }

  /**
   * Calls {@code left} with the node id of each member that leaves the cluster (crashed, cut off or stopped),
   * unless another member carries the same node id (it came back already). Runs on a Hazelcast thread.
   */
  void onNodeLeft(Consumer<String> left) {
    manager.getHazelcastInstance().getCluster().addMembershipListener(new MembershipListener() {
      @Override
      public void memberAdded(MembershipEvent event) {
        // nothing to do: a new node registers itself
      }

      @Override
      public void memberRemoved(MembershipEvent event) {
        String node = event.getMember().getAttribute(NODE_ATTRIBUTE);
        if (node != null && event.getMembers().stream().map(m -> m.getAttribute(NODE_ATTRIBUTE))
            .noneMatch(node::equals)) {
          left.accept(node);
        }
      }
    });
  }

}
