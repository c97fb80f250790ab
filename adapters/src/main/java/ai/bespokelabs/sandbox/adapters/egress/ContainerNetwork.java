package ai.bespokelabs.sandbox.adapters.egress;

import ai.bespokelabs.sandbox.core.net.Cidr;
import java.net.InetAddress;
import java.util.List;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * The engine network containers with network access join: its bridge interface on this host, when known,
 * its subnets and the bridge's own addresses (where the engine's DNS server listens, e.g. Podman's
 * aardvark-dns).
 *
 * @param bridge the bridge interface's name
 * @param subnets the network's subnets
 * @param gateways the addresses the host has on the bridge
 */
public record ContainerNetwork(Optional<String> bridge, List<Cidr> subnets, List<InetAddress> gateways) {
  /** An interface name nftables may quote: what Linux allows, minus quotes and spaces. */
  private static final Pattern INTERFACE = Pattern.compile("[A-Za-z0-9_.:-]{1,15}");

  public ContainerNetwork {
    bridge = bridge.filter(b -> INTERFACE.matcher(b).matches());
    subnets = List.copyOf(subnets);
    gateways = List.copyOf(gateways);
    if (bridge.isEmpty() && subnets.isEmpty()) {
      throw new IllegalArgumentException("a container network needs a bridge or a subnet to be recognised by");
    }
  }

  /** A name for the nftables tables of this network: its bridge's, else its first subnet's. */
  String tag() {
    return bridge.orElseGet(() -> subnets.get(0).toString()).replaceAll("[^A-Za-z0-9]", "_");
  }
}
