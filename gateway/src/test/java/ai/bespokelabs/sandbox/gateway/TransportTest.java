package ai.bespokelabs.sandbox.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledOnOs;
import org.junit.jupiter.api.condition.OS;

/** The gateway asks for the native transport; on Linux it ships it, so it runs on what the tests run on. */
class TransportTest {
  @Test
  @EnabledOnOs(value = OS.LINUX, architectures = {"amd64", "aarch64"})
  void the_gateway_runs_on_the_native_transport_it_ships() {
    try (TestGateway gw = new TestGateway()) {
      assertThat(gw.gateway.vertx().isNativeTransportEnabled())
          .as("netty's epoll transport is a runtime dependency of the gateway").isTrue();
    }
  }
}
