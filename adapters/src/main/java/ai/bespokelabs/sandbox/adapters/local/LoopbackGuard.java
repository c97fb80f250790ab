package ai.bespokelabs.sandbox.adapters.local;

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
 * Keeps the programs of host sandboxes away from the services of the host itself. A root gateway runs them as
 * uids of its own range ({@link HostUsers}); one nftables rule refuses every packet those uids send to a
 * local address (everything routed through {@code lo}: 127.0.0.0/8, ::1 and the host's own addresses), except
 * DNS, so a {@code local} sandbox, or a {@code bwrap} sandbox sharing the host network with
 * {@code allow_internet}, still reaches the internet but not the database, the gateway's API or any other
 * service listening on the host. The rule lives in its own table, {@code inet bespoke_sandbox}; installing it
 * is idempotent and atomic, and it stays when the gateway stops (the uids are the gateway's alone).
 */
public final class LoopbackGuard {
  private static final Logger LOG = LoggerFactory.getLogger(LoopbackGuard.class);
  public static final String TABLE = "bespoke_sandbox";
  private static volatile boolean inForce;

  private LoopbackGuard() {
  }

  /** Whether this process installed the rule (it may also be in force from an earlier start). */
  public static boolean inForce() {
    return inForce;
  }

  /** The nftables script: one table, one chain, replaced whole in one transaction. */
  static String script() {
    String uids = HostUsers.UID_BASE + "-" + (HostUsers.UID_BASE + HostUsers.UID_COUNT - 1);
    return """
        table inet %1$s {
          chain output {
            type filter hook output priority 0; policy accept;
          }
        }
        flush chain inet %1$s output
        add rule inet %1$s output oifname "lo" meta skuid %2$s meta l4proto { tcp, udp } th dport 53 accept
        add rule inet %1$s output oifname "lo" meta skuid %2$s reject
        """.formatted(TABLE, uids);
  }

  /**
   * Installs the rule when the gateway is root; returns whether it is in force. Failing to install it (no
   * {@code nft}, no {@code CAP_NET_ADMIN}) is logged as a warning and leaves the host's services reachable.
   */
  public static boolean install(HostUsers users) {
    if (!users.dropping()) {
      return false;
    }
    Optional<Path> nft = HostWrapper.findExecutable("nft", List.of("/usr/sbin", "/sbin", "/usr/bin", "/bin"),
        List.of());
    if (nft.isEmpty()) {
      LOG.warn("nft is not installed: programs of local sandboxes, and of bwrap sandboxes with allow_internet,"
          + " can reach services listening on this host (install nftables)");
      return false;
    }
    try {
      Process p = new ProcessBuilder(nft.get().toString(), "-f", "-").redirectErrorStream(true).start();
      try (OutputStream in = p.getOutputStream()) {
        in.write(script().getBytes(StandardCharsets.UTF_8));
      }
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
      if (!p.waitFor(10, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        throw new IOException("nft did not finish within 10 s");
      }
      if (p.exitValue() != 0) {
        throw new IOException("nft exited " + p.exitValue() + ": " + out);
      }
      LOG.info("Sandbox programs cannot reach services on this host (nftables table inet {})", TABLE);
      inForce = true;
      return true;
    } catch (IOException e) {
      LOG.warn("cannot refuse sandbox programs the host's own services ({}): local sandboxes, and bwrap"
          + " sandboxes with allow_internet, can reach them", e.getMessage());
      return false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }
}
