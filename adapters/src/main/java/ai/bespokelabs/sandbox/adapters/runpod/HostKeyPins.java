package ai.bespokelabs.sandbox.adapters.runpod;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.SocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.PublicKey;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.sshd.client.keyverifier.ServerKeyVerifier;
import org.apache.sshd.client.session.ClientSession;
import org.apache.sshd.common.AttributeRepository;
import org.apache.sshd.common.config.keys.KeyUtils;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Trust on first use, per pod: the first host key a pod's sshd shows is pinned (by its SHA-256 fingerprint, in
 * {@code <data dir>/runpod/host-keys.properties}, so it survives a restart); any later connection to the pod
 * must show the same key or is refused. Runs on MINA's I/O threads (never on an event loop); the file is
 * small and rewritten whole on a new pin.
 */
final class HostKeyPins implements ServerKeyVerifier {
  /** The pod a connection is for, set in its connection context. */
  static final AttributeRepository.AttributeKey<String> POD = new AttributeRepository.AttributeKey<>();
  private static final Logger LOG = LoggerFactory.getLogger(HostKeyPins.class);

  private final Path file;
  private final Properties pins = new Properties();
  private final Set<String> refused = ConcurrentHashMap.newKeySet();

  HostKeyPins(Path file) {
    this.file = file;
  }

  /** Reads the pins kept so far (blocking: called once at start, off the event loop). */
  synchronized void load() throws IOException {
    if (Files.isRegularFile(file)) {
      try (InputStream in = Files.newInputStream(file)) {
        pins.load(in);
      }
    }
  }

  @Override
  public boolean verifyServerKey(ClientSession session, SocketAddress remote, PublicKey key) {
    String pod = session.getConnectionContext() == null ? null : session.getConnectionContext().getAttribute(POD);
    if (pod == null) {
      return false;
    }
    String fingerprint = KeyUtils.getFingerPrint(key);
    synchronized (this) {
      String pinned = pins.getProperty(pod);
      if (pinned == null) {
        pins.setProperty(pod, fingerprint);
        save();
        return true;
      }
      if (pinned.equals(fingerprint)) {
        return true;
      }
    }
    refused.add(pod);
    LOG.warn("runpod pod {}: its SSH host key changed (now {}); the connection is refused", pod, fingerprint);
    return false;
  }

  /** Whether the last connection to {@code pod} was refused for a changed host key (and forgets it). */
  boolean refused(String pod) {
    return refused.remove(pod);
  }

  /** Drops a terminated pod's pin. */
  synchronized void forget(String pod) {
    if (pins.remove(pod) != null) {
      save();
    }
  }

  private void save() {
    try {
      Files.createDirectories(file.getParent());
      Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
      try (OutputStream out = Files.newOutputStream(tmp)) {
        pins.store(out, "RunPod pods' pinned SSH host keys (SHA-256 fingerprints)");
      }
      Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    } catch (IOException e) {
      LOG.warn("runpod: cannot keep the pinned host keys in {}: {}", file, e.getMessage());
    }
  }
}
