package ai.bespokelabs.sandbox.adapters.egress;

import ai.bespokelabs.sandbox.adapters.local.HostUsers;
import ai.bespokelabs.sandbox.adapters.local.HostWrapper;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Puts sandbox egress rules ({@link EgressRules}) in force with {@code nft}; root only ({@code CAP_NET_ADMIN}).
 * It blocks (it runs a process): call it from start-up code or a worker, never an event loop. The rules stay
 * when the gateway stops: the uids and the network are the gateway's alone, and a later start replaces them.
 */
public final class EgressGuard {
  private static final Logger LOG = LoggerFactory.getLogger(EgressGuard.class);
  private static final List<String> SBIN = List.of("/usr/sbin", "/sbin", "/usr/bin", "/bin");
  /** What {@code /v1/providers} says of a backend whose egress rules are not in force (details in the log). */
  public static final String UNAVAILABLE = "sandbox egress rules could not be put in force on this node (as root,"
      + " with nftables: apt-get install nftables; the gateway's log says why)";
  private static volatile boolean hostsInForce;

  private EgressGuard() {
  }

  /** Whether this process put the host sandboxes' rules in force. */
  public static boolean hostsInForce() {
    return hostsInForce;
  }

  /** Why rules could not be installed. */
  public static final class NotInForce extends Exception {
    public NotInForce(String message) {
      super(message);
    }
  }

  /** Refuses the uids of host sandboxes ({@link HostUsers}, the health probe's included) what {@code policy} refuses. */
  public static void installHosts(EgressPolicy policy) throws NotInForce {
    run(EgressRules.hosts(policy, HostUsers.UID_BASE, HostUsers.PROBE_UID));
    hostsInForce = true;
    LOG.info("Sandbox egress: programs of host sandboxes reach public addresses only (nftables table inet {}{})",
        EgressRules.HOST_TABLE, policy.allowed().isEmpty() ? "" : ", and the allowed ranges " + policy.allowed());
  }

  /** Refuses containers of {@code network} what {@code policy} refuses. */
  public static void installContainers(EgressPolicy policy, ContainerNetwork network) throws NotInForce {
    run(EgressRules.containers(policy, network));
    EgressRules.bridge(network).ifPresent(script -> {
      try {
        run(script);
      } catch (NotInForce e) {
        LOG.info("Containers on {} are not kept apart on the bridge itself ({}): where bridged packets skip the IP"
            + " hooks (br_netfilter off), they can reach each other", network.bridge().get(), e.getMessage());
      }
    });
    LOG.info("Sandbox egress: containers on {} reach public addresses only (nftables table inet {}{})",
        network.bridge().orElse(network.subnets().toString()), EgressRules.containerTable(network),
        policy.allowed().isEmpty() ? "" : ", and the allowed ranges " + policy.allowed());
  }

  /** Where {@code nft} is, if installed. */
  public static Optional<Path> nft() {
    return HostWrapper.findExecutable("nft", SBIN, List.of());
  }

  private static void run(String script) throws NotInForce {
    Path nft = nft().orElseThrow(() -> new NotInForce("nft is not installed (install nftables)"));
    try {
      Process p = new ProcessBuilder(nft.toString(), "-f", "-").redirectErrorStream(true).start();
      try (OutputStream in = p.getOutputStream()) {
        in.write(script.getBytes(StandardCharsets.UTF_8));
      }
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
      if (!p.waitFor(10, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        throw new NotInForce("nft did not finish within 10 s");
      }
      if (p.exitValue() != 0) {
        throw new NotInForce("nft exited " + p.exitValue() + ": " + out);
      }
    } catch (IOException e) {
      throw new NotInForce("cannot run nft: " + e.getMessage());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new NotInForce("interrupted while running nft");
    }
  }
}
