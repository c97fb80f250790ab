package ai.bespokelabs.sandbox.adapters.docker;

import ai.bespokelabs.sandbox.adapters.egress.ContainerNetwork;
import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError;
import ai.bespokelabs.sandbox.core.net.Cidr;
import io.vertx.core.Future;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The engine network containers with network access join, {@value #NAME}: a bridge network created on first
 * use with the bridge interface {@value #BRIDGE}, labelled as ours. Before the first container joins it, its
 * egress rules are put in force when the gateway asks for them ({@link #requireEgress}).
 */
final class DockerNetwork {
  static final String NAME = "bespoke-sandbox";
  /** The name of its bridge interface, asked for when this backend creates the network. */
  static final String BRIDGE = "bsx0";
  private static final Logger LOG = LoggerFactory.getLogger(DockerNetwork.class);
  private static final Duration CALL = Duration.ofSeconds(30);

  private final DockerEngine engine;
  /** Puts the network's egress rules in force; null when this node installs none. */
  private volatile Function<ContainerNetwork, Future<Void>> egress;
  /** The network once ready (rules in force); null before, and after a failed attempt. */
  private Future<ContainerNetwork> network;

  DockerNetwork(DockerEngine engine) {
    this.engine = engine;
  }

  void requireEgress(Function<ContainerNetwork, Future<Void>> installer) {
    this.egress = installer;
  }

  /**
   * The network containers with network access join, created when missing, with its egress rules in force
   * when {@link #requireEgress} asked for them; tried again after a failure.
   */
  synchronized Future<ContainerNetwork> ready() {
    if (network == null) {
      Function<ContainerNetwork, Future<Void>> rules = egress;
      Future<ContainerNetwork> ready = inspectNetwork().compose(found -> found.isPresent()
              ? Future.succeededFuture(found.get())
              : createNetwork().compose(v -> inspectNetwork()).compose(again -> again.isPresent()
                  ? Future.succeededFuture(again.get())
                  : Future.failedFuture(engine.failure(ErrorCode.CREATION_FAILED, "create", true,
                      ProviderError.Outcome.FAILED, null))))
          .compose(net -> rules == null ? Future.succeededFuture(net) : rules.apply(net).map(net));
      network = ready;
      ready.onFailure(t -> {
        synchronized (this) {
          if (network == ready) {
            network = null;
          }
        }
      });
    }
    return network;
  }

  private Future<Optional<ContainerNetwork>> inspectNetwork() {
    return engine.get("create", "/networks/" + NAME, CALL).compose(r -> {
      if (r.status() == 404) {
        return Future.succeededFuture(Optional.empty());
      }
      if (!r.ok()) {
        return Future.failedFuture(engine.statusFailure("create", r, ErrorCode.CREATION_FAILED));
      }
      return Future.succeededFuture(Optional.of(network(r.json())));
    });
  }

  /**
   * What an engine's network inspection says: the bridge's name when the engine reports it (Docker), or when the
   * network carries our label (this backend created it with {@value #BRIDGE}); its subnets and gateways (a
   * subnet's first address when the engine names none).
   */
  static ContainerNetwork network(JsonObject inspected) {
    JsonObject options = inspected.getJsonObject("Options", new JsonObject());
    JsonObject labels = inspected.getJsonObject("Labels", new JsonObject());
    Optional<String> bridge = Optional.ofNullable(options == null ? null
        : options.getString("com.docker.network.bridge.name"))
        .or(() -> labels != null && "true".equals(labels.getString(DockerProvider.MANAGED)) ? Optional.of(BRIDGE) : Optional.empty());
    List<Cidr> subnets = new ArrayList<>();
    List<java.net.InetAddress> gateways = new ArrayList<>();
    JsonArray configs = inspected.getJsonObject("IPAM", new JsonObject()).getJsonArray("Config", new JsonArray());
    for (Object o : configs == null ? new JsonArray() : configs) {
      if (!(o instanceof JsonObject c)) {
        continue;
      }
      Optional<Cidr> subnet = Optional.ofNullable(c.getString("Subnet")).flatMap(Cidr::parse);
      subnet.ifPresent(subnets::add);
      Optional<Cidr> gateway = Optional.ofNullable(c.getString("Gateway")).flatMap(Cidr::parse)
          .or(() -> subnet.map(DockerNetwork::firstAddress));
      gateway.ifPresent(g -> {
        try {
          gateways.add(java.net.InetAddress.getByAddress(g.address()));
        } catch (java.net.UnknownHostException e) {
          throw new IllegalStateException(e);
        }
      });
    }
    return new ContainerNetwork(bridge, subnets, gateways);
  }

  private static Cidr firstAddress(Cidr subnet) {
    byte[] a = subnet.address();
    a[a.length - 1] |= 1;
    return new Cidr(a, a.length * 8);
  }

  private Future<Void> createNetwork() {
    JsonObject body = new JsonObject().put("Name", NAME).put("Driver", "bridge").put("CheckDuplicate", true)
        .put("Labels", new JsonObject().put(DockerProvider.MANAGED, "true"))
        .put("Options", new JsonObject().put("com.docker.network.bridge.name", BRIDGE)
            .put("com.docker.network.bridge.enable_icc", "false"));
    return engine.post("create", "/networks/create", body, CALL).compose(r -> {
      if (r.ok() || r.status() == 409) { // 409: another start created it meanwhile
        LOG.info("Created the engine network {} for containers with network access", NAME);
        return Future.succeededFuture();
      }
      LOG.debug("docker network create failed: {}", DockerEngine.message(r));
      return Future.failedFuture(engine.statusFailure("create", r, ErrorCode.CREATION_FAILED));
    });
  }
}
