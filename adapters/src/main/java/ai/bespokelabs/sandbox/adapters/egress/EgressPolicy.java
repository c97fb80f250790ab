package ai.bespokelabs.sandbox.adapters.egress;

import ai.bespokelabs.sandbox.core.net.Cidr;
import java.io.IOException;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * What sandbox programs may reach over the network when they may reach it at all ({@code allow_internet}):
 * public addresses, and nothing of the gateway's own network. Refused are loopback, "this network",
 * link-local (cloud metadata services), the private and shared (CGNAT) ranges, benchmarking, multicast and
 * reserved ranges, their IPv6 counterparts, and every address of a cluster member and of the database, on
 * every port. Two exceptions: DNS (port 53) to the resolvers the host itself uses, and the ranges the
 * operator allows ({@code BESPOKE_SANDBOX_ALLOW_CIDRS}); neither ever opens a cluster member or the database,
 * which are refused before anything is allowed.
 *
 * @param allowed ranges reachable although refused otherwise
 * @param refused the refused ranges: {@link #ALWAYS_REFUSED} and the gateway's own services
 * @param resolvers the DNS servers reachable on port 53
 * @param services the addresses of the cluster's members and the database, refused whatever is allowed
 */
public record EgressPolicy(List<Cidr> allowed, List<Cidr> refused, List<InetAddress> resolvers,
    List<Cidr> services) {
  /** Never reachable unless allowed: nothing here is a public internet address. */
  public static final List<Cidr> ALWAYS_REFUSED = List.of(
      "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
      "192.0.0.0/24", "192.168.0.0/16", "198.18.0.0/15", "224.0.0.0/4", "240.0.0.0/4",
      "::/127", "::ffff:0:0/96", "64:ff9b::/96", "64:ff9b:1::/48", "fc00::/7", "fe80::/10", "fec0::/10", "ff00::/8")
      .stream().map(c -> Cidr.parse(c).orElseThrow()).toList();

  /** The resolver files read: the host's, and systemd-resolved's upstream servers when it runs a local stub. */
  static final List<Path> RESOLV_CONF = List.of(Path.of("/etc/resolv.conf"), Path.of("/run/systemd/resolve/resolv.conf"));

  public EgressPolicy {
    allowed = List.copyOf(allowed);
    refused = List.copyOf(refused);
    resolvers = List.copyOf(resolvers);
    services = List.copyOf(services);
  }

  /** A policy without service addresses of its own. */
  public EgressPolicy(List<Cidr> allowed, List<Cidr> refused, List<InetAddress> resolvers) {
    this(allowed, refused, resolvers, List.of());
  }

  /**
   * The policy refusing {@link #ALWAYS_REFUSED} and {@code services} (addresses of the cluster's members and
   * of the database), allowing {@code allowed} and DNS to the host's resolvers.
   */
  public static EgressPolicy of(List<Cidr> allowed, List<InetAddress> services) {
    Set<Cidr> refused = new LinkedHashSet<>(ALWAYS_REFUSED);
    List<Cidr> own = services.stream().map(Cidr::of).distinct().toList();
    refused.addAll(own);
    Set<InetAddress> resolvers = new LinkedHashSet<>();
    RESOLV_CONF.forEach(f -> resolvers.addAll(resolvers(f)));
    return new EgressPolicy(allowed, new ArrayList<>(refused), new ArrayList<>(resolvers), own);
  }

  /** The {@code nameserver} addresses of a resolv.conf file; none when it is missing or unreadable. */
  static List<InetAddress> resolvers(Path file) {
    List<String> lines;
    try {
      lines = Files.readAllLines(file, StandardCharsets.UTF_8);
    } catch (IOException e) {
      return List.of();
    }
    return resolvers(lines);
  }

  static List<InetAddress> resolvers(List<String> lines) {
    List<InetAddress> out = new ArrayList<>();
    for (String line : lines) {
      String[] words = line.strip().split("\\s+");
      if (words.length >= 2 && words[0].equals("nameserver")) {
        String addr = words[1].contains("%") ? words[1].substring(0, words[1].indexOf('%')) : words[1];
        literal(addr).ifPresent(out::add);
      }
    }
    return out;
  }

  /** An address literal, never looked up. */
  static Optional<InetAddress> literal(String text) {
    return Cidr.parse(text).filter(c -> c.prefix() == c.address().length * 8).map(c -> {
      try {
        return InetAddress.getByAddress(c.address());
      } catch (java.net.UnknownHostException e) {
        throw new IllegalStateException(e);
      }
    });
  }
}
