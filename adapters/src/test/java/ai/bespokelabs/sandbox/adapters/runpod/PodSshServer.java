package ai.bespokelabs.sandbox.adapters.runpod;

import java.io.IOException;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.PublicKey;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.sshd.common.config.keys.KeyUtils;
import org.apache.sshd.common.config.keys.PublicKeyEntry;
import org.apache.sshd.common.keyprovider.KeyPairProvider;
import org.apache.sshd.common.session.SessionContext;
import org.apache.sshd.common.session.helpers.AbstractSession;
import org.apache.sshd.server.SshServer;
import org.apache.sshd.server.shell.ProcessShellFactory;
import org.apache.sshd.sftp.server.SftpSubsystemFactory;

/**
 * A real SSH server on a loopback port standing in for a pod's sshd (Apache MINA SSHD): public-key login only,
 * for keys registered as a pod's {@code PUBLIC_KEY}; each exec runs {@code sh -c <command>} as a real local
 * process in a session of its own ({@code setsid -w}), as OpenSSH's sshd does; SFTP is served on the real
 * file system. The host key can be replaced
 * ({@link #changeHostKey}) to play a pod whose host key changed; sessions can be dropped ({@link #dropSessions})
 * and logins refused ({@link #refuseLogins}) to play a lost connection.
 */
public final class PodSshServer implements AutoCloseable {
  private final SshServer server;
  private final AtomicReference<KeyPair> hostKey = new AtomicReference<>();
  private final Set<String> authorized = ConcurrentHashMap.newKeySet();
  private volatile boolean refusing;

  private PodSshServer(SshServer server) {
    this.server = server;
  }

  public static PodSshServer start() {
    try {
      SshServer server = SshServer.setUpDefaultServer();
      PodSshServer self = new PodSshServer(server);
      self.changeHostKey();
      server.setHost("127.0.0.1");
      server.setPort(0);
      server.setKeyPairProvider(new KeyPairProvider() {
        @Override
        public Iterable<KeyPair> loadKeys(SessionContext session) {
          return List.of(self.hostKey.get());
        }
      });
      server.setPublickeyAuthenticator((user, key, session) -> "root".equals(user) && self.allowed(key));
      server.setPasswordAuthenticator(null);
      server.setKeyboardInteractiveAuthenticator(null);
      server.setCommandFactory((channel, command) -> new ProcessShellFactory(command, List.of("setsid", "-w", "sh",
          "-c", command)).createShell(channel));
      server.setSubsystemFactories(List.of(new SftpSubsystemFactory()));
      server.start();
      return self;
    } catch (IOException | GeneralSecurityException e) {
      throw new IllegalStateException("the pod SSH server did not start", e);
    }
  }

  private boolean allowed(PublicKey key) {
    return !refusing && authorized.contains(PublicKeyEntry.toString(key));
  }

  /** Kills every open SSH session server-side, as a dropped connection does (their channels end without status). */
  public void dropSessions() {
    server.getActiveSessions().forEach(s -> s.close(true));
  }

  /**
   * Stops reading from every open session without closing it, as a connection whose network died silently: no
   * reply, no window adjust, no reset.
   */
  public void freezeSessions() {
    server.getActiveSessions().forEach(s -> ((AbstractSession) s).getIoSession().suspendRead());
  }

  /** From now on, refuses (true) or accepts again (false) every login: the pod is unreachable. */
  public void refuseLogins(boolean refuse) {
    refusing = refuse;
  }

  /** Accepts logins with the key of an OpenSSH public key line ({@code type base64 [comment]}). */
  public void authorize(String publicKeyLine) {
    String[] parts = publicKeyLine.trim().split("\\s+");
    if (parts.length >= 2) {
      authorized.add(parts[0] + " " + parts[1]);
    }
  }

  /** A fresh host key from now on; returns the one it replaces. */
  public KeyPair changeHostKey() throws GeneralSecurityException {
    return hostKey.getAndSet(KeyUtils.generateKeyPair(KeyPairProvider.ECDSA_SHA2_NISTP256, 256));
  }

  /** {@code key} as the host key from now on (e.g. the one {@link #changeHostKey} replaced). */
  public void useHostKey(KeyPair key) {
    hostKey.set(key);
  }

  public int port() {
    return server.getPort();
  }

  @Override
  public void close() throws IOException {
    server.stop(true);
  }
}
