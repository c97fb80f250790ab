package ai.bespokelabs.sandbox.adapters.egress;

import ai.bespokelabs.sandbox.core.net.Cidr;
import java.net.InetAddress;
import java.util.List;
import java.util.Optional;
import java.util.function.Predicate;
import java.util.stream.Collectors;

/**
 * The nftables scripts that put an {@link EgressPolicy} in force. Each replaces its table whole in one
 * transaction (create it, delete it, define it again), so applying one twice, or over an older version,
 * leaves exactly its rules and never a moment without them.
 *
 * <p>Host sandboxes: a table {@code inet bespoke_egress} matches packets by the sending socket's owner, the
 * uids root gateways give sandbox programs; everything to this host (leaving through {@code lo}) and to a
 * refused range is rejected, and a cluster member or the database even inside an allowed range. Containers: a table {@code inet bespoke_egress_<bridge>} matches packets coming
 * from the network's bridge or subnets — forwarded ones get the same verdicts, and those to this host itself
 * are rejected except DNS to the bridge's own addresses — and, where the kernel can match a bridge by name, a
 * table {@code bridge bespoke_egress_<bridge>} drops frames between two containers of the network. A reject in any base chain ends a packet, whatever
 * other tables (the engine's own) accept.
 */
public final class EgressRules {
  /** The host sandboxes' table. */
  public static final String HOST_TABLE = "bespoke_egress";
  /** The table of the earlier single loopback rule, removed when these rules are installed. */
  static final String LEGACY_TABLE = "bespoke_sandbox";

  private EgressRules() {
  }

  /** The table refusing programs running as uids {@code firstUid}..{@code lastUid} what {@code policy} refuses. */
  public static String hosts(EgressPolicy policy, int firstUid, int lastUid) {
    return """
        table inet %1$s {}
        delete table inet %1$s
        table inet %2$s {}
        delete table inet %2$s
        table inet %1$s {
        %3$s
          chain verdicts {
        %4$s
          }
          chain sandbox_out {
            ct state established,related accept
            jump verdicts
            oifname "lo" meta l4proto tcp reject with tcp reset
            oifname "lo" reject
          }
          chain output {
            type filter hook output priority 0; policy accept;
            meta skuid %5$d-%6$d jump sandbox_out
          }
        }
        """.formatted(HOST_TABLE, LEGACY_TABLE, sets(policy, List.of()), verdicts(), firstUid, lastUid);
  }

  /** The tables refusing containers of {@code network} what {@code policy} refuses. */
  public static String containers(EgressPolicy policy, ContainerNetwork network) {
    String table = containerTable(network);
    StringBuilder from = new StringBuilder();
    network.bridge().ifPresent(b -> from.append("    iifname \"").append(b).append("\" jump %s\n"));
    for (Cidr subnet : network.subnets()) {
      from.append("    iifname != \"lo\" ").append(subnet.isIpv4() ? "ip" : "ip6").append(" saddr ").append(subnet)
          .append(" jump %s\n");
    }
    return """
        table inet %1$s {}
        delete table inet %1$s
        table inet %1$s {
        %2$s
          chain verdicts {
        %3$s
          }
          chain container_out {
            ct state established,related accept
            jump verdicts
          }
          chain container_in {
            ct state established,related accept
            ip daddr @services4 meta l4proto tcp reject with tcp reset
            ip daddr @services4 reject
            ip6 daddr @services6 meta l4proto tcp reject with tcp reset
            ip6 daddr @services6 reject
            ip daddr @allowed4 accept
            ip6 daddr @allowed6 accept
            meta l4proto { tcp, udp } th dport 53 ip daddr @gateways4 accept
            meta l4proto { tcp, udp } th dport 53 ip6 daddr @gateways6 accept
            icmpv6 type { nd-neighbor-solicit, nd-neighbor-advert, nd-router-solicit } accept
            meta l4proto tcp reject with tcp reset
            reject
          }
          chain forward {
            type filter hook forward priority 0; policy accept;
        %4$s  }
          chain input {
            type filter hook input priority 0; policy accept;
        %5$s  }
        }
        """.formatted(table, sets(policy, network.gateways()), verdicts(),
        from.toString().replace("%s", "container_out"), from.toString().replace("%s", "container_in"));
  }

  /**
   * The table dropping frames one container of {@code network} sends another across the bridge (its ports);
   * empty when the bridge is unknown. Where bridged packets pass the IP hooks too ({@code br_netfilter}, as
   * Docker sets up), the rules of {@link #containers} refuse them already (the subnet is a private range).
   */
  public static Optional<String> bridge(ContainerNetwork network) {
    return network.bridge().map(b -> """
        table bridge %1$s {}
        delete table bridge %1$s
        table bridge %1$s {
          chain forward {
            type filter hook forward priority 0; policy accept;
            meta ibrname "%2$s" drop
          }
        }
        """.formatted(containerTable(network), b));
  }

  /** The name of a container network's tables. */
  public static String containerTable(ContainerNetwork network) {
    return HOST_TABLE + "_" + network.tag();
  }

  /**
   * The gateway's own services (cluster members, the database) first, whatever is allowed; then allowed, then
   * DNS to the resolvers, then the refused ranges. A refused TCP connection is reset (it fails at once; an ICMP
   * error is rate-limited and the first SYN would be sent again after a second).
   */
  private static String verdicts() {
    return """
            ip daddr @services4 meta l4proto tcp reject with tcp reset
            ip daddr @services4 reject
            ip6 daddr @services6 meta l4proto tcp reject with tcp reset
            ip6 daddr @services6 reject
            ip daddr @allowed4 accept
            ip6 daddr @allowed6 accept
            meta l4proto { tcp, udp } th dport 53 ip daddr @resolvers4 accept
            meta l4proto { tcp, udp } th dport 53 ip6 daddr @resolvers6 accept
            ip daddr @refused4 meta l4proto tcp reject with tcp reset
            ip daddr @refused4 reject
            ip6 daddr @refused6 meta l4proto tcp reject with tcp reset
            ip6 daddr @refused6 reject""";
  }

  private static String sets(EgressPolicy policy, List<InetAddress> gateways) {
    List<Cidr> resolvers = policy.resolvers().stream().map(Cidr::of).toList();
    List<Cidr> gws = gateways.stream().map(Cidr::of).toList();
    return String.join("\n", set("services4", policy.services(), true), set("services6", policy.services(), false),
        set("allowed4", policy.allowed(), true), set("allowed6", policy.allowed(), false),
        set("refused4", policy.refused(), true), set("refused6", policy.refused(), false),
        set("resolvers4", resolvers, true), set("resolvers6", resolvers, false),
        set("gateways4", gws, true), set("gateways6", gws, false));
  }

  /** A named interval set (overlapping ranges merged) of the IPv4 or IPv6 ones of {@code ranges}. */
  private static String set(String name, List<Cidr> ranges, boolean v4) {
    Predicate<Cidr> family = c -> c.isIpv4() == v4;
    String elements = ranges.stream().filter(family).map(Cidr::toString).distinct().collect(Collectors.joining(", "));
    return "  set %s { type %s; flags interval; auto-merge;%s }".formatted(name, v4 ? "ipv4_addr" : "ipv6_addr",
        elements.isEmpty() ? "" : " elements = { " + elements + " };");
  }
}
