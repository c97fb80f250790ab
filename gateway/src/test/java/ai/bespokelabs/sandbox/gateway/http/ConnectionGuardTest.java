package ai.bespokelabs.sandbox.gateway.http;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.core.config.AddressRange;
import org.junit.jupiter.api.Test;

class ConnectionGuardTest {
  static String key(String literal) {
    return ConnectionGuard.clientKey(AddressRange.literal(literal), null);
  }

  /** One host usually owns a whole IPv6 /64: counting its addresses one by one would not limit it. */
  @Test
  void clients_are_ipv4_addresses_and_ipv6_64_prefixes() {
    assertThat(key("203.0.113.7")).isEqualTo("203.0.113.7");
    assertThat(key("::ffff:203.0.113.7")).as("IPv4-mapped").isEqualTo("203.0.113.7");
    assertThat(key("2001:db8:1:2::1")).isEqualTo("2001:db8:1:2::/64").isEqualTo(key("2001:db8:1:2:ffff:1:2:3"));
    assertThat(key("2001:db8:1:3::1")).isNotEqualTo(key("2001:db8:1:2::1"));
  }

  @Test
  void a_client_holds_at_most_the_limit_and_leaves_no_entry_behind() {
    ConnectionGuard.Clients clients = new ConnectionGuard.Clients();
    assertThat(clients.acquire("a", 2)).isTrue();
    assertThat(clients.acquire("a", 2)).isTrue();
    assertThat(clients.acquire("a", 2)).isFalse();
    assertThat(clients.acquire("b", 2)).isTrue();
    assertThat(clients.open("a")).isEqualTo(2);
    clients.release("a");
    assertThat(clients.acquire("a", 2)).isTrue();
    clients.release("a");
    clients.release("a");
    clients.release("a"); // one too many changes nothing
    assertThat(clients.open("a")).isZero();
    assertThat(clients.acquire("c", 0)).as("0: no limit").isTrue();
  }
}
