package ai.bespokelabs.sandbox.gateway;

import ai.bespokelabs.sandbox.core.config.ClusterConfig;
import io.vertx.core.Completable;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.eventbus.EventBusOptions;
import io.vertx.core.http.ClientAuth;
import io.vertx.ext.cluster.infinispan.InfinispanClusterManager;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.infinispan.configuration.cache.CacheMode;
import org.infinispan.configuration.global.GlobalConfigurationBuilder;
import org.infinispan.configuration.global.ShutdownHookBehavior;
import org.infinispan.configuration.parsing.ConfigurationBuilderHolder;
import org.infinispan.manager.DefaultCacheManager;
import org.infinispan.notifications.Listener;
import org.infinispan.notifications.cachemanagerlistener.annotation.Merged;
import org.infinispan.notifications.cachemanagerlistener.annotation.ViewChanged;
import org.infinispan.notifications.cachemanagerlistener.event.ViewChangedEvent;
import org.infinispan.remoting.transport.Address;
import org.infinispan.remoting.transport.jgroups.JGroupsTransport;
import org.jgroups.JChannel;
import org.jgroups.protocols.BARRIER;
import org.jgroups.protocols.FD_ALL3;
import org.jgroups.protocols.FRAG4;
import org.jgroups.protocols.MERGE3;
import org.jgroups.protocols.MFC;
import org.jgroups.protocols.TCP;
import org.jgroups.protocols.TCPPING;
import org.jgroups.protocols.UNICAST3;
import org.jgroups.protocols.VERIFY_SUSPECT2;
import org.jgroups.protocols.dns.DNS_PING;
import org.jgroups.protocols.pbcast.GMS;
import org.jgroups.protocols.pbcast.NAKACK2;
import org.jgroups.protocols.pbcast.STABLE;
import org.jgroups.stack.Protocol;
import org.jgroups.util.TLS;
import org.jgroups.util.TLSClientAuth;

/**
 * The Vert.x instance of a node: a plain one, or (with {@code BESPOKE_CLUSTER}) one whose event bus spans every
 * node of the cluster, with Infinispan over JGroups as cluster manager.
 *
 * <p>A clustered node opens two listeners for the others, both on {@code BESPOKE_CLUSTER_HOST} alone and both
 * speaking TLS 1.3 that requires a client certificate of the cluster's CA ({@link ClusterIdentity}):
 * membership (JGroups' TCP transport) on the cluster port, the event bus on the next one. Nothing else
 * listens: no multicast, no diagnostics probe, no failure-detection socket (members are watched with
 * heartbeats over the transport). Members are found from the configured seeds or, in Kubernetes, from the DNS
 * records of the headless service. Each member's JGroups name is this gateway's node id plus a random suffix
 * (a restarted node is a new member), so a member that leaves names the node to take over.
 */
final class Cluster {
  static final long JOIN_TIMEOUT_SECS = 120;
  /** Between a node's id and the random suffix of its member name; node ids never contain it. */
  static final char MEMBER_SEPARATOR = '.';
  /** A member that sends no heartbeat for this long is suspected (then verified for a second and removed). */
  static final long SUSPECT_AFTER_MS = 5_000;
  /** How long a joining node waits for the members it asked to answer. */
  static final long JOIN_WAIT_MS = 5_000;

  private final DefaultCacheManager caches;

  private Cluster(DefaultCacheManager caches) {
    this.caches = caches;
  }

  /** A new Vert.x instance, clustered as {@code config} says; blocks until it joined. */
  static Vertx vertx(VertxOptions options, io.vertx.core.spi.VertxMetricsFactory metrics, ClusterConfig config,
      ClusterIdentity identity, String nodeId, Consumer<Cluster> joined) {
    if (!config.enabled()) {
      return Vertx.builder().with(options).withMetrics(metrics).build();
    }
    String member = nodeId + MEMBER_SEPARATOR + HexFormat.of().formatHex(new SecureRandom().generateSeed(4));
    DefaultCacheManager caches;
    JChannel channel = null;
    try {
      channel = channel(config, identity, member);
      caches = cacheManager(config, channel, member);
    } catch (Exception e) {
      if (channel != null) {
        channel.close();
      }
      throw new IllegalStateException("cannot join the cluster at " + config.host() + ":" + config.port() + ": "
          + e.getMessage(), e);
    }
    options.setEventBusOptions(eventBus(config, identity, nodeId));
    try {
      Vertx vertx = Vertx.builder().with(options).withMetrics(metrics).withClusterManager(new Manager(caches, channel, config.host()))
          .buildClustered().await(JOIN_TIMEOUT_SECS, TimeUnit.SECONDS);
      joined.accept(new Cluster(caches));
      return vertx;
    } catch (Exception e) {
      Manager.stop(caches, channel);
      throw new IllegalStateException("cannot join the cluster at " + config.host() + ":" + config.port() + ": " + e, e);
    }
  }

  /**
   * The event bus: on the cluster host at the cluster port + 1, TLS 1.3 both ways with this node's certificate,
   * accepting only peers whose certificate the cluster's CA signed. Its node metadata names the gateway node.
   */
  static EventBusOptions eventBus(ClusterConfig config, ClusterIdentity identity, String nodeId) {
    EventBusOptions bus = new EventBusOptions().setHost(config.host()).setPort(config.port() + 1)
        .setClusterPublicHost(config.host()).setClusterPublicPort(config.port() + 1)
        .setClusterNodeMetadata(new io.vertx.core.json.JsonObject().put("node", nodeId));
    bus.setSsl(true).setClientAuth(ClientAuth.REQUIRED).setKeyCertOptions(identity.keyCert())
        .setTrustOptions(identity.trust()).setEnabledSecureTransportProtocols(Set.of(ClusterIdentity.PROTOCOL));
    return bus;
  }

  /**
   * The JGroups stack, bottom first: TCP on the cluster address and port only (TLS, client certificates
   * required), discovery, merging of split views, heartbeat failure detection, reliable delivery, membership.
   */
  static JChannel channel(ClusterConfig c, ClusterIdentity identity, String member) throws Exception {
    InetAddress bind = InetAddress.getByName(c.host());
    TCP tcp = new TCP();
    tcp.setBindAddress(bind).setBindPort(c.port()).setPortRange(0);
    tcp.setClientBindAddr(bind).setSockConnTimeout(3_000);
    TLS tls = new TLS().setClientAuth(TLSClientAuth.NEED).setProtocols(new String[] {ClusterIdentity.PROTOCOL});
    tcp.setSocketFactory(tls.createSocketFactory(identity.sslContext()));
    Protocol discovery;
    if (c.kubernetes()) {
      DNS_PING dns = new DNS_PING();
      dns.setValue("dns_query", c.kubernetesService().orElseThrow());
      dns.setValue("dns_record_type", "A");
      discovery = dns;
    } else {
      discovery = new TCPPING().setInitialHosts(seeds(c.members())).setPortRange(0);
    }
    JChannel channel = new JChannel(List.of(tcp, discovery,
        new MERGE3().setMinInterval(5_000).setMaxInterval(15_000),
        new FD_ALL3().setTimeout(SUSPECT_AFTER_MS).setInterval(1_000),
        new VERIFY_SUSPECT2().setTimeout(1_000),
        new BARRIER(),
        new NAKACK2().useMcastXmit(false),
        new UNICAST3(),
        new STABLE(),
        // long enough for a first TLS handshake on a busy machine: a node that hears no answer in time
        // starts a cluster of its own, merged with the others only later
        new GMS().setJoinTimeout(JOIN_WAIT_MS).printLocalAddress(false),
        new MFC(),
        new FRAG4()));
    tcp.getDiagnosticsHandler().setEnabled(false); // its probe would listen on a multicast socket
    channel.name(member);
    return channel;
  }

  private static List<InetSocketAddress> seeds(List<String> members) throws UnknownHostException {
    java.util.ArrayList<InetSocketAddress> seeds = new java.util.ArrayList<>();
    for (String m : members) {
      int colon = m.lastIndexOf(':');
      String host = m.substring(0, colon).replace("[", "").replace("]", "");
      seeds.add(new InetSocketAddress(InetAddress.getByName(host), Integer.parseInt(m.substring(colon + 1))));
    }
    return seeds;
  }

  /** The caches Vert.x's cluster manager expects, on {@code channel}; started (joined) on return. */
  static DefaultCacheManager cacheManager(ClusterConfig c, JChannel channel, String member) {
    GlobalConfigurationBuilder global = new GlobalConfigurationBuilder();
    global.classLoader(Cluster.class.getClassLoader());
    global.transport().transport(new JGroupsTransport(channel)).clusterName(c.name()).nodeName(member);
    global.jmx().disable();
    // the gateway's shutdown hook drains first and then leaves the cluster itself
    global.shutdown().hookBehavior(ShutdownHookBehavior.DONT_REGISTER);
    global.defaultCacheName("distributed-cache");
    ConfigurationBuilderHolder holder = new ConfigurationBuilderHolder(Cluster.class.getClassLoader(), global);
    holder.newConfigurationBuilder("distributed-cache").clustering().cacheMode(CacheMode.DIST_SYNC);
    for (String replicated : List.of("__vertx.subs", "__vertx.haInfo", "__vertx.nodeInfo")) {
      holder.newConfigurationBuilder(replicated).clustering().cacheMode(CacheMode.REPL_SYNC);
    }
    holder.newConfigurationBuilder("__vertx.distributed.cache.configuration").template(true).clustering()
        .cacheMode(CacheMode.DIST_SYNC);
    return new DefaultCacheManager(holder, true);
  }

  /** The gateway node id of a member's name. */
  static String nodeOf(String member) {
    int at = member.lastIndexOf(MEMBER_SEPARATOR);
    return at < 0 ? member : member.substring(0, at);
  }

  /**
   * Calls {@code left} with the node id of each member that leaves the cluster (crashed, cut off or stopped),
   * unless another member carries the same node id (it came back already). Runs on an Infinispan thread.
   */
  void onNodeLeft(Consumer<String> left) {
    caches.addListener(new ViewListener(left));
  }

  @Listener(sync = false)
  public static final class ViewListener {
    private final Consumer<String> left;

    ViewListener(Consumer<String> left) {
      this.left = left;
    }

    @ViewChanged
    @Merged
    public void viewChanged(ViewChangedEvent event) {
      List<String> remaining = event.getNewMembers().stream().map(a -> nodeOf(a.toString())).toList();
      for (Address gone : event.getOldMembers()) {
        String node = nodeOf(gone.toString());
        if (!event.getNewMembers().contains(gone) && !remaining.contains(node)) {
          left.accept(node);
        }
      }
    }
  }

  /**
   * Vert.x's Infinispan cluster manager on the cache manager built here, which it stops (leaving the group and
   * closing the channel) when Vert.x leaves. It answers what the vertx-infinispan release would ask of the
   * transport in ways Infinispan 15 no longer offers.
   */
  private static final class Manager extends InfinispanClusterManager {
    private final DefaultCacheManager caches;
    private final JChannel channel;
    private final String host;
    private Vertx vertx;

    Manager(DefaultCacheManager caches, JChannel channel, String host) {
      super(caches);
      this.caches = caches;
      this.channel = channel;
      this.host = host;
    }

    @Override
    public void init(Vertx vertx) {
      super.init(vertx);
      this.vertx = vertx;
    }

    @Override
    public List<String> getNodes() {
      return caches.getMembers().stream().map(Address::toString).toList();
    }

    @Override
    public String clusterHost() {
      return host;
    }

    @Override
    public String clusterPublicHost() {
      return host;
    }

    @Override
    public void leave(Completable<Void> promise) {
      super.leave((v, failure) -> vertx.<Void>executeBlocking(() -> {
        stop(caches, channel);
        return null;
      }, false).onComplete(promise));
    }

    /** Leaves the group and closes the channel; blocking. */
    static void stop(DefaultCacheManager caches, JChannel channel) {
      try {
        caches.stop();
      } finally {
        channel.close();
      }
    }
  }
}
