package ai.bespokelabs.sandbox.adapters.docker;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.adapters.egress.ContainerNetwork;
import io.vertx.core.json.JsonObject;
import java.net.InetAddress;
import org.junit.jupiter.api.Test;

/** What the engine's inspection of the sandboxes' network tells the egress rules. */
class DockerNetworkTest {
  @Test
  void docker_names_the_bridge_and_podman_is_recognised_by_our_label() {
    ContainerNetwork docker = DockerNetwork.network(new JsonObject("""
        {"Name":"bespoke-sandbox","Options":{"com.docker.network.bridge.name":"bsx0"},
         "IPAM":{"Config":[{"Subnet":"172.20.0.0/16","Gateway":"172.20.0.1"}]}}"""));
    assertThat(docker.bridge()).contains("bsx0");
    assertThat(docker.subnets()).map(Object::toString).containsExactly("172.20.0.0/16");
    assertThat(docker.gateways()).map(InetAddress::getHostAddress).containsExactly("172.20.0.1");

    ContainerNetwork podman = DockerNetwork.network(new JsonObject("""
        {"Name":"bespoke-sandbox","Options":{},"Labels":{"ai.bespokelabs.sandbox.managed":"true"},
         "IPAM":{"Config":[{"Subnet":"10.89.0.0/24"}]}}"""));
    assertThat(podman.bridge()).contains(DockerNetwork.BRIDGE);
    assertThat(podman.gateways()).map(InetAddress::getHostAddress).as("the subnet's first address")
        .containsExactly("10.89.0.1");

    ContainerNetwork foreign = DockerNetwork.network(new JsonObject("""
        {"Name":"bespoke-sandbox","IPAM":{"Config":[{"Subnet":"10.90.0.0/24","Gateway":"10.90.0.1"}]}}"""));
    assertThat(foreign.bridge()).as("someone else's network: recognised by its subnet only").isEmpty();
    assertThat(foreign.subnets()).map(Object::toString).containsExactly("10.90.0.0/24");
  }
}
