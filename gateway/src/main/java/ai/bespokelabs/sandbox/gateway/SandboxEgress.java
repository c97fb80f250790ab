package ai.bespokelabs.sandbox.gateway;

import ai.bespokelabs.sandbox.adapters.bwrap.BwrapWrapper;
import ai.bespokelabs.sandbox.adapters.docker.DockerProvider;
import ai.bespokelabs.sandbox.adapters.egress.EgressGuard;
import ai.bespokelabs.sandbox.adapters.egress.EgressPolicy;
import ai.bespokelabs.sandbox.adapters.local.HostUsers;
import ai.bespokelabs.sandbox.adapters.local.LocalProvider;
import ai.bespokelabs.sandbox.core.config.GatewayConfig;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Sandbox egress at start: a root gateway puts the rules of {@link EgressPolicy} in force for the host
 * sandboxes' uids and for the docker backend's network, and a backend whose rules cannot be put in force is
 * not enabled (it stays listed, unconfigured, with the reason). An ordinary user cannot install such rules:
 * the gateway warns. Runs on the starting thread (it blocks: name lookups, {@code nft}).
 */
final class SandboxEgress {
  private static final Logger LOG = LoggerFactory.getLogger(SandboxEgress.class);
  private static final long NETWORK_TIMEOUT_SECS = 60;
  /** Why a clustered node that is not root does not serve {@code local}. */
  static final String NOT_ROOT_CLUSTERED = "a clustered gateway that is not root does not run local sandboxes: they"
      + " would run as its own user, which can read the node's cluster key";

  /** Why a root node does not serve docker with an engine elsewhere. */
  static final String REMOTE_ENGINE = "the Docker engine is not on this host, so this node cannot filter its"
      + " containers' egress; once the engine's host does, set BESPOKE_DOCKER_EGRESS_ELSEWHERE=true";
  /** Why a root node does not serve docker with a rootless engine. */
  static final String ROOTLESS_ENGINE = "the Docker engine runs rootless: its containers' traffic leaves through"
      + " its user's own network stack, which this node's egress rules do not see; use a rootful engine, or set"
      + " BESPOKE_DOCKER_EGRESS_ELSEWHERE=true once that traffic is filtered otherwise";

  private SandboxEgress() {
  }

  /**
   * @param databaseHost the database's host as the gateway connects to it
   * @param enabled whether a backend is enabled on this node
   */
  static void enforce(Vertx vertx, GatewayConfig config, String databaseHost, Map<String, LocalProvider> hosted,
      DockerProvider docker, Predicate<String> enabled) {
    boolean hostBackends = enabled.test(LocalProvider.BACKEND) || enabled.test(BwrapWrapper.BACKEND);
    boolean containers = docker != null && enabled.test(DockerProvider.BACKEND);
    if (!HostUsers.detect().dropping()) {
      if (config.cluster().enabled() && enabled.test(LocalProvider.BACKEND) && hosted.containsKey(LocalProvider.BACKEND)) {
        // its programs would run as this user, which reads the node's cluster key: one would join as a member
        LOG.error("The gateway is not root and is clustered: the local backend is not enabled on this node (its"
            + " programs would run as the gateway's user and could read the cluster key); run as root, or use bwrap");
        hosted.get(LocalProvider.BACKEND).disable(NOT_ROOT_CLUSTERED);
      }
      if (hostBackends) {
        LOG.warn("The gateway is not root: programs of local sandboxes, and of bwrap sandboxes with allow_internet,"
            + " run as its own user and reach what it reaches (services on this host, private networks, cloud"
            + " metadata); run it as root to filter their egress");
      }
      if (containers && docker.installed() && !docker.egressElsewhere()) {
        LOG.warn("The gateway is not root: egress of docker containers with allow_internet is not filtered"
            + " (private networks, cloud metadata and this host's services stay reachable from them)");
      }
      return;
    }
    if (!hostBackends && !containers) {
      return;
    }
    EgressPolicy policy = EgressPolicy.of(config.execution().sandboxAllowCidrs(), services(config, databaseHost));
    if (hostBackends) {
      try {
        EgressGuard.installHosts(policy);
      } catch (EgressGuard.NotInForce e) {
        LOG.error("Sandbox egress rules for host sandboxes cannot be put in force ({}): the local and bwrap"
            + " backends are not enabled on this node", e.getMessage());
        for (String b : List.of(LocalProvider.BACKEND, BwrapWrapper.BACKEND)) {
          if (hosted.containsKey(b)) {
            hosted.get(b).disable(EgressGuard.UNAVAILABLE);
          }
        }
      }
    }
    if (containers) {
      containers(vertx, policy, docker);
    }
  }

  private static void containers(Vertx vertx, EgressPolicy policy, DockerProvider docker) {
    if (docker.egressElsewhere()) {
      LOG.warn("BESPOKE_DOCKER_EGRESS_ELSEWHERE=true: this node puts no egress rules in force for docker containers;"
          + " the engine's host must refuse them private networks, cloud metadata and the gateway's services");
      return;
    }
    if (!docker.engineOnThisHost()) {
      LOG.error("Sandbox egress for docker containers: {}; the docker backend is not enabled on this node",
          REMOTE_ENGINE);
      docker.disable(REMOTE_ENGINE);
      return;
    }
    docker.requireEgress(network -> docker.rootless().compose(rootless -> rootless
        ? Future.failedFuture(new EgressGuard.NotInForce(ROOTLESS_ENGINE))
        : vertx.executeBlocking(() -> {
          EgressGuard.installContainers(policy, network);
          return null;
        }, false)));
    if (!docker.installed()) {
      return; // no engine yet: the rules go in force before its first container with network access
    }
    try {
      docker.network().await(NETWORK_TIMEOUT_SECS, TimeUnit.SECONDS);
    } catch (Exception e) {
      Throwable cause = e instanceof EgressGuard.NotInForce ? e
          : e.getCause() instanceof EgressGuard.NotInForce n ? n : e;
      LOG.error("Sandbox egress rules for docker containers cannot be put in force ({}): the docker backend is"
          + " not enabled on this node", cause.getMessage() == null ? cause.toString() : cause.getMessage());
      docker.disable(ROOTLESS_ENGINE.equals(cause.getMessage()) ? ROOTLESS_ENGINE : EgressGuard.UNAVAILABLE);
    }
  }

  /**
   * The addresses of the gateway's own services, refused on every port: the cluster's members (seeds and this
   * node's cluster address) and the database. A name that does not resolve now is logged and left out.
   */
  static List<InetAddress> services(GatewayConfig config, String databaseHost) {
    Set<String> hosts = new LinkedHashSet<>();
    for (String member : config.cluster().members()) {
      hosts.add(hostOf(member));
    }
    hosts.add(config.cluster().host());
    if (databaseHost != null && !databaseHost.startsWith("/")) {
      hosts.add(databaseHost);
    }
    List<InetAddress> out = new ArrayList<>();
    for (String host : hosts) {
      if (host.isBlank()) {
        continue;
      }
      try {
        for (InetAddress a : InetAddress.getAllByName(host)) {
          if (!a.isAnyLocalAddress()) {
            out.add(a);
          }
        }
      } catch (UnknownHostException e) {
        LOG.warn("Sandbox egress: {} does not resolve now, so its addresses are not refused to sandboxes unless a"
            + " refused range holds them", host);
      }
    }
    return out;
  }

  /** The host of a {@code host:port} seed ({@code [v6]:port} too). */
  static String hostOf(String member) {
    int colon = member.lastIndexOf(':');
    String host = colon > 0 ? member.substring(0, colon) : member;
    return host.startsWith("[") && host.endsWith("]") ? host.substring(1, host.length() - 1) : host;
  }
}
