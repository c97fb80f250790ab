package ai.bespokelabs.sandbox.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.core.config.ClusterConfig;
import ai.bespokelabs.sandbox.testkit.ClusterCertificates;
import ai.bespokelabs.sandbox.testkit.Waits;
import java.io.ByteArrayOutputStream;
import java.net.DatagramPacket;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import org.jgroups.JChannel;
import org.jgroups.protocols.dns.AddressedDNSResolver;
import org.jgroups.protocols.dns.DNS_PING;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Kubernetes discovery as the manifests set it up: nodes find each other through the A records of the headless
 * service ({@code BESPOKE_CLUSTER_K8S_SERVICE}), each on its own pod address and the same cluster port, with
 * certificates naming their pod DNS names. Here a DNS server answers for the service with two loopback
 * addresses, as the cluster's DNS answers for two pods.
 */
class KubernetesDiscoveryTest {
  static final String SERVICE = "sandbox-gateway-headless.bespoke.svc.cluster.local";
  static final List<String> PODS = List.of("127.0.0.2", "127.0.0.3");

  @Test
  @Timeout(120)
  void two_nodes_find_each_other_through_the_services_dns_records(@TempDir Path dir) throws Exception {
    ClusterCertificates ca = ClusterCertificates.newCa(dir, "k8s-test-ca");
    int port = ClusterTest.freePair();
    try (Dns dns = new Dns(SERVICE, PODS)) {
      List<JChannel> nodes = new ArrayList<>();
      try {
        for (int i = 0; i < PODS.size(); i++) {
          Map<String, String> files = ca.node("pod-" + i,
              "dns:sandbox-gateway-" + i + ".sandbox-gateway-headless.bespoke.svc.cluster.local");
          ClusterConfig config = new ClusterConfig(true, PODS.get(i), port, "k8s-test", Optional.of(
              new ClusterConfig.Tls(Path.of(files.get("BESPOKE_CLUSTER_TLS_CA")),
                  Path.of(files.get("BESPOKE_CLUSTER_TLS_CERT")), Path.of(files.get("BESPOKE_CLUSTER_TLS_KEY")))),
              List.of(), true, Optional.of(SERVICE), 0);
          JChannel channel = Cluster.channel(config, ClusterIdentity.load(config), "pod-" + i);
          // the pods' resolver is the cluster DNS; here it is the test's server
          DNS_PING ping = channel.getProtocolStack().findProtocol(DNS_PING.class);
          ping.setDNSResolver(new AddressedDNSResolver(ping.getDNSContextFactory(), "127.0.0.1:" + dns.port()));
          channel.connect("k8s-test");
          nodes.add(channel);
        }
        Waits.upTo(60).alias("both nodes in one view").until(() -> nodes.stream()
            .allMatch(n -> n.getView() != null && n.getView().size() == PODS.size()));
        assertThat(dns.questions()).as("the service's A records were asked for").contains(SERVICE + " A");
      } finally {
        nodes.forEach(JChannel::close);
      }
    }
  }

  /** A DNS server on loopback answering A queries for one name (and nothing for others), over UDP. */
  static final class Dns implements AutoCloseable {
    private final DatagramSocket socket;
    private final List<String> questions = new CopyOnWriteArrayList<>();
    private final Thread thread;

    Dns(String name, List<String> addresses) throws SocketException {
      socket = new DatagramSocket(new InetSocketAddress("127.0.0.1", 0));
      thread = new Thread(() -> serve(name, addresses), "test-dns");
      thread.setDaemon(true);
      thread.start();
    }

    int port() {
      return socket.getLocalPort();
    }

    List<String> questions() {
      return questions;
    }

    private void serve(String name, List<String> addresses) {
      byte[] buf = new byte[512];
      while (!socket.isClosed()) {
        try {
          DatagramPacket in = new DatagramPacket(buf, buf.length);
          socket.receive(in);
          byte[] answer = answer(ByteBuffer.wrap(in.getData(), 0, in.getLength()), name, addresses);
          socket.send(new DatagramPacket(answer, answer.length, in.getSocketAddress()));
        } catch (Exception e) {
          if (socket.isClosed()) {
            return;
          }
        }
      }
    }

    private byte[] answer(ByteBuffer q, String name, List<String> addresses) throws Exception {
      short id = q.getShort();
      q.getShort(); // flags
      if (q.getShort() != 1) {
        throw new IllegalArgumentException("one question per query");
      }
      q.position(12);
      StringBuilder qname = new StringBuilder();
      for (int len = q.get() & 0xff; len != 0; len = q.get() & 0xff) {
        byte[] label = new byte[len];
        q.get(label);
        qname.append(qname.isEmpty() ? "" : ".").append(new String(label, java.nio.charset.StandardCharsets.US_ASCII));
      }
      int qtype = q.getShort() & 0xffff;
      q.getShort(); // class
      int questionEnd = q.position();
      String asked = qname.toString().toLowerCase(Locale.ROOT);
      questions.add(asked + (qtype == 1 ? " A" : " type" + qtype));
      boolean ours = asked.equals(name);
      List<String> records = ours && qtype == 1 ? addresses : List.of();
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      ByteBuffer head = ByteBuffer.allocate(12).putShort(id)
          .putShort((short) (ours ? 0x8580 : 0x8583)) // response, authoritative; NXDOMAIN for other names
          .putShort((short) 1).putShort((short) records.size()).putShort((short) 0).putShort((short) 0);
      out.write(head.array());
      out.write(q.array(), 12, questionEnd - 12);
      for (String a : records) {
        out.write(ByteBuffer.allocate(16).putShort((short) 0xc00c).putShort((short) 1).putShort((short) 1)
            .putInt(5).putShort((short) 4).put(InetAddress.getByName(a).getAddress()).array());
      }
      return out.toByteArray();
    }

    @Override
    public void close() throws InterruptedException {
      socket.close();
      thread.join(5_000);
    }
  }
}
