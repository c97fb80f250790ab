package ai.bespokelabs.sandbox.adapters.egress;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import ai.bespokelabs.sandbox.core.net.Cidr;
import java.io.OutputStream;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The nftables scripts of sandbox egress, read and (where nft and root are at hand) checked by nft itself. */
class EgressRulesTest {
  static final EgressPolicy POLICY = new EgressPolicy(List.of(cidr("10.20.0.0/16"), cidr("fd12::/64")),
      List.of(cidr("10.0.0.0/8"), cidr("10.1.2.3/32"), cidr("fc00::/7"), cidr("203.0.113.9/32")),
      List.of(address("10.255.255.53"), address("127.0.0.53")));

  static Cidr cidr(String s) {
    return Cidr.parse(s).orElseThrow();
  }

  static InetAddress address(String s) {
    return EgressPolicy.literal(s).orElseThrow();
  }

  @Test
  void host_rules_match_the_sandbox_uids_and_allow_before_they_refuse() {
    String script = EgressRules.hosts(POLICY, 1000, 2000);
    assertThat(script).contains("meta skuid 1000-2000 jump sandbox_out")
        .contains("set allowed4 { type ipv4_addr; flags interval; auto-merge; elements = { 10.20.0.0/16 }; }")
        .contains("set allowed6 { type ipv6_addr; flags interval; auto-merge; elements = { fd12::/64 }; }")
        .contains("elements = { 10.0.0.0/8, 10.1.2.3/32, 203.0.113.9/32 }")
        .contains("elements = { 10.255.255.53/32, 127.0.0.53/32 }")
        .contains("delete table inet bespoke_egress").contains("delete table inet bespoke_sandbox");
    assertThat(script.indexOf("@allowed4 accept")).isLessThan(script.indexOf("@resolvers4 accept"));
    assertThat(script.indexOf("@resolvers4 accept")).isLessThan(script.indexOf("@refused4 reject"));
    assertThat(script.indexOf("jump verdicts")).isLessThan(script.indexOf("oifname \"lo\" reject"));
    nftAccepts(script);
    String always = EgressRules.hosts(EgressPolicy.of(List.of(cidr("192.0.2.0/24")), List.of(address("192.0.2.77"))),
        1000, 2000);
    assertThat(always).as("a service inside an allowed range stays refused")
        .contains("set services4 { type ipv4_addr; flags interval; auto-merge; elements = { 192.0.2.77/32 }; }");
    assertThat(always.indexOf("@services4 reject")).isLessThan(always.indexOf("@allowed4 accept"));
    assertThat(always).contains("10.0.0.0/8, 100.64.0.0/10, 127.0.0.0/8, 169.254.0.0/16, 172.16.0.0/12")
        .contains("192.168.0.0/16").contains("192.0.2.77/32")
        .contains("::/127, ::ffff:0:0/96, 64:ff9b::/96, 64:ff9b:1::/48, fc00::/7, fe80::/10, fec0::/10, ff00::/8");
    nftAccepts(always);
  }

  @Test
  void container_rules_match_the_bridge_and_its_subnets_and_let_dns_to_the_bridge_through() {
    ContainerNetwork net = new ContainerNetwork(Optional.of("bsx0"), List.of(cidr("10.89.0.0/24")),
        List.of(address("10.89.0.1")));
    String script = EgressRules.containers(POLICY, net);
    assertThat(EgressRules.containerTable(net)).isEqualTo("bespoke_egress_bsx0");
    assertThat(script).contains("iifname \"bsx0\" jump container_out").contains("iifname \"bsx0\" jump container_in")
        .contains("iifname != \"lo\" ip saddr 10.89.0.0/24 jump container_out")
        .contains("set gateways4 { type ipv4_addr; flags interval; auto-merge; elements = { 10.89.0.1/32 }; }")
        .doesNotContain("table bridge");
    assertThat(EgressRules.bridge(net).orElseThrow()).contains("table bridge bespoke_egress_bsx0")
        .contains("meta ibrname \"bsx0\" drop");
    nftAccepts(script);
    ContainerNetwork bySubnet = new ContainerNetwork(Optional.of("bad\"name"), List.of(cidr("fd99::/64")), List.of());
    assertThat(EgressRules.containerTable(bySubnet)).isEqualTo("bespoke_egress_fd99___64");
    assertThat(EgressRules.bridge(bySubnet)).isEmpty();
    assertThat(EgressRules.containers(POLICY, bySubnet)).doesNotContain("bad")
        .contains("iifname != \"lo\" ip6 saddr fd99::/64 jump container_in");
    nftAccepts(EgressRules.containers(POLICY, bySubnet));
  }

  @Test
  void resolvers_are_the_nameserver_literals_of_resolv_conf() {
    assertThat(EgressPolicy.resolvers(List.of("# comment", "nameserver 10.255.255.53", "nameserver fe80::1%eth0",
        "nameserver dns.example", "search example", " nameserver   127.0.0.53 ")))
        .map(InetAddress::getHostAddress).containsExactly("10.255.255.53", "fe80:0:0:0:0:0:0:1", "127.0.0.53");
  }

  /** {@code nft -c}: parses and checks the script against the kernel without committing anything. */
  static void nftAccepts(String script) {
    Optional<java.nio.file.Path> nft = EgressGuard.nft();
    assumeTrue(nft.isPresent() && "root".equals(System.getProperty("user.name")), "nft and root");
    try {
      Process p = new ProcessBuilder(nft.get().toString(), "-c", "-f", "-").redirectErrorStream(true).start();
      try (OutputStream in = p.getOutputStream()) {
        in.write(script.getBytes(StandardCharsets.UTF_8));
      }
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      assertThat(p.waitFor(10, TimeUnit.SECONDS)).isTrue();
      assertThat(p.exitValue()).as(out + "\n" + script).isZero();
    } catch (Exception e) {
      throw new AssertionError(e);
    }
  }
}
