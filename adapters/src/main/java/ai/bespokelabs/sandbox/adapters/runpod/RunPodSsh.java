package ai.bespokelabs.sandbox.adapters.runpod;

import ai.bespokelabs.sandbox.core.config.ConfigException;
import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.util.Iterator;
import java.time.Duration;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.apache.sshd.client.SshClient;
import org.apache.sshd.client.future.ConnectFuture;
import org.apache.sshd.client.session.ClientSession;
import org.apache.sshd.common.AttributeRepository;
import org.apache.sshd.common.NamedResource;
import org.apache.sshd.common.config.keys.KeyUtils;
import org.apache.sshd.common.digest.BuiltinDigests;
import org.apache.sshd.common.config.keys.PublicKeyEntry;
import org.apache.sshd.common.config.keys.writer.openssh.OpenSSHKeyPairResourceWriter;
import org.apache.sshd.common.keyprovider.KeyPairProvider;
import org.apache.sshd.common.util.security.SecurityUtils;
import org.apache.sshd.core.CoreModuleProperties;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * SSH to pods with Apache MINA SSHD's asynchronous client (no system {@code ssh}, no thread per connection: its
 * futures complete on MINA's I/O threads and are handed back to the adapter's context). The gateway's key pair
 * comes from {@code BESPOKE_RUNPOD_SSH_KEY} or is generated into the data directory on first start (ECDSA
 * P-256, OpenSSH format, mode 600); its public key is logged once at start and handed to each pod as
 * {@code PUBLIC_KEY}. Host keys are pinned per pod ({@link HostKeyPins}). One session per pod is kept and
 * shared by its executions; a closed one is replaced on next use. Each session sends a heartbeat every request
 * timeout and is closed after {@link #HEARTBEATS_MISSED} go unanswered, so a connection that died silently
 * ends like a dropped one.
 */
final class RunPodSsh {
  private static final Logger LOG = LoggerFactory.getLogger(RunPodSsh.class);
  static final String USER = "root";
  /** Heartbeats (one per request timeout) a session may leave unanswered before it is closed as dead. */
  static final int HEARTBEATS_MISSED = 2;

  private final RunPodClient client;
  private final RunPodPods pods;
  private final HostKeyPins pins;
  private final Map<String, Future<ClientSession>> sessions = new ConcurrentHashMap<>();
  private final Map<String, Map<String, String>> envs = new ConcurrentHashMap<>();
  private volatile SshClient ssh;
  private volatile KeyPair keyPair;
  private volatile String publicKey;
  private volatile String fingerprint;

  RunPodSsh(RunPodClient client, RunPodPods pods) {
    this.client = client;
    this.pods = pods;
    this.pins = new HostKeyPins(client.settings().hostKeys());
  }

  /** Loads or generates the key pair and the pins and starts the SSH client (blocking work on a worker). */
  Future<Void> start() {
    return client.vertx().executeBlocking(() -> {
      keyPair = loadOrGenerate(client.settings().sshKey());
      publicKey = PublicKeyEntry.toString(keyPair.getPublic()) + " bespoke-gateway";
      fingerprint = KeyUtils.getFingerPrint(BuiltinDigests.sha256, keyPair.getPublic());
      pins.load();
      SshClient c = SshClient.setUpDefaultClient();
      c.setServerKeyVerifier(pins);
      // a connection that died silently (no reset: a pod's network gone) is noticed and closed, so executions
      // reconnect instead of waiting forever
      Duration beat = Duration.ofMillis(client.requestTimeoutMs());
      CoreModuleProperties.HEARTBEAT_REQUEST.set(c, "keepalive@openssh.com");
      CoreModuleProperties.HEARTBEAT_INTERVAL.set(c, beat);
      CoreModuleProperties.HEARTBEAT_REPLY_WAIT.set(c, beat);
      CoreModuleProperties.HEARTBEAT_NO_REPLY_MAX.set(c, HEARTBEATS_MISSED);
      c.start();
      ssh = c;
      LOG.info("runpod: the gateway's SSH public key (register it with RunPod or let pods take it as PUBLIC_KEY; "
          + "also served at GET /v1/providers/runpod): {} ({})", publicKey, fingerprint);
      return null;
    });
  }

  /** The gateway's public key in OpenSSH form. */
  String publicKey() {
    String k = publicKey;
    if (k == null) {
      throw new IllegalStateException("runpod SSH is not started");
    }
    return k;
  }

  /** The public key's SHA256 fingerprint as OpenSSH shows it ({@code SHA256:<base64>}). */
  String fingerprint() {
    publicKey();
    return fingerprint;
  }

  /**
   * The gateway's key pair from {@code path} (any type and format {@code ssh-keygen} writes: ed25519, ecdsa, rsa;
   * OpenSSH, PEM or PKCS#8), generated there when absent. A file that cannot be read or holds no usable
   * unencrypted private key is a {@link ConfigException} naming the setting.
   */
  static KeyPair loadOrGenerate(Path path) throws IOException, GeneralSecurityException {
    if (Files.exists(path)) {
      if (!Files.isRegularFile(path) || !Files.isReadable(path)) {
        throw new ConfigException("BESPOKE_RUNPOD_SSH_KEY cannot be read (it must be a readable private key file)");
      }
      Iterable<KeyPair> found;
      try (InputStream in = Files.newInputStream(path)) {
        found = SecurityUtils.loadKeyPairIdentities(null, NamedResource.ofName(path.getFileName().toString()), in,
            null);
      } catch (java.nio.file.AccessDeniedException e) {
        throw new ConfigException("BESPOKE_RUNPOD_SSH_KEY cannot be read (it must be a readable private key file)");
      } catch (GeneralSecurityException | IOException | RuntimeException e) {
        throw new ConfigException("BESPOKE_RUNPOD_SSH_KEY does not hold an unencrypted OpenSSH, PEM or PKCS#8"
            + " private key of a supported type (ed25519, ecdsa, rsa)");
      }
      Iterator<KeyPair> it = found == null ? null : found.iterator();
      if (it == null || !it.hasNext()) {
        throw new ConfigException("BESPOKE_RUNPOD_SSH_KEY holds no private key");
      }
      return it.next();
    }
    KeyPair kp = KeyUtils.generateKeyPair(KeyPairProvider.ECDSA_SHA2_NISTP256, 256);
    Files.createDirectories(path.toAbsolutePath().getParent());
    Path tmp = path.resolveSibling(path.getFileName() + ".tmp");
    Files.deleteIfExists(tmp);
    Files.createFile(tmp, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
    try (OutputStream out = Files.newOutputStream(tmp)) {
      OpenSSHKeyPairResourceWriter.INSTANCE.writePrivateKey(kp, "bespoke-gateway", null, out);
    }
    Files.move(tmp, path);
    LOG.info("runpod: generated the gateway's SSH key pair in {}", path);
    return kp;
  }

  /** The pod's SSH session, connected and authenticated (reused while open). */
  Future<ClientSession> session(String podId, String op) {
    return client.onContext(() -> {
      Future<ClientSession> known = sessions.get(podId);
      if (known != null && (known.failed() || known.succeeded() && !known.result().isOpen())) {
        sessions.remove(podId, known);
        known = null;
      }
      if (known != null) {
        return known;
      }
      Future<ClientSession> fresh = connect(podId, op);
      sessions.put(podId, fresh);
      return fresh;
    });
  }

  private Future<ClientSession> connect(String podId, String op) {
    return pods.get(podId, op).compose(pod -> {
      RunPodPods.SshEndpoint at = RunPodPods.sshEndpoint(pod);
      if (at == null) {
        return Future.failedFuture(new ProviderException(ProviderError.of(ErrorCode.CONNECTION,
            RunPodProvider.BACKEND, op, true, ProviderError.Outcome.FAILED)
            .withContext("provider_code", "ssh_not_mapped")));
      }
      envs.put(podId, env(pod.getValue("env")));
      long timeoutMs = client.requestTimeoutMs();
      Future<ClientSession> connected = mina(client.context(), p -> {
        try {
          ConnectFuture cf = ssh.connect(USER, at.host(), at.port(), AttributeRepository.ofKeyValuePair(
              HostKeyPins.POD, podId), null);
          cf.addListener(f -> {
            if (!f.isConnected()) {
              p.tryFail(f.getException() == null ? new IOException("ssh connect failed") : f.getException());
              return;
            }
            ClientSession s = f.getClientSession();
            s.addPublicKeyIdentity(keyPair);
            try {
              s.auth().addListener(a -> {
                if (a.isSuccess()) {
                  p.tryComplete(s);
                } else {
                  s.close(true);
                  p.tryFail(a.getException() == null ? new IOException("ssh authentication failed") : a.getException());
                }
              });
            } catch (IOException e) {
              s.close(true);
              p.tryFail(e);
            }
          });
        } catch (IOException e) {
          p.tryFail(e);
        }
      });
      Future<ClientSession> bounded = connected.timeout(timeoutMs, TimeUnit.MILLISECONDS);
      bounded.onFailure(t -> connected.onSuccess(late -> late.close(true))); // one connected after giving up
      return bounded.recover(t -> Future.failedFuture(sshError(podId, op, t)));
    });
  }

  /** The env vars the pod was created with (not the gateway's public key), as read when its session opened. */
  Map<String, String> sandboxEnv(String podId) {
    return envs.getOrDefault(podId, Map.of());
  }

  private static Map<String, String> env(Object value) {
    Map<String, String> out = new TreeMap<>();
    if (value instanceof JsonObject o) {
      o.forEach(e -> {
        if (e.getValue() instanceof String v && !"PUBLIC_KEY".equals(e.getKey())) {
          out.put(e.getKey(), v);
        }
      });
    }
    return out;
  }

  /** An SSH failure on the contract: a changed host key is a non-retryable connection error. */
  ProviderException sshError(String podId, String op, Throwable t) {
    if (t instanceof ProviderException p) {
      return p;
    }
    if (pins.refused(podId)) {
      return new ProviderException(ProviderError.of(ErrorCode.CONNECTION, RunPodProvider.BACKEND, op, false,
          ProviderError.Outcome.FAILED).withContext("provider_code", "host_key_changed"), t);
    }
    return RunPodErrors.transportError(op, t, false);
  }

  /** A Vert.x future completed on {@code context} by a MINA callback. */
  static <T> Future<T> mina(Context context, Consumer<Promise<T>> start) {
    Promise<T> done = Promise.promise();
    Promise<T> bridge = Promise.promise();
    bridge.future().onComplete(ar -> context.runOnContext(v -> done.handle(ar)));
    try {
      start.accept(bridge);
    } catch (RuntimeException e) {
      bridge.tryFail(e);
    }
    return done.future();
  }

  /** Closes the pod's session and drops its pinned host key (the pod is being terminated). */
  Future<Void> forget(String podId) {
    envs.remove(podId);
    Future<ClientSession> s = sessions.remove(podId);
    if (s != null) {
      s.onSuccess(session -> session.close(true));
    }
    return client.vertx().executeBlocking(() -> {
      pins.forget(podId);
      return null;
    });
  }

  Future<Void> close() {
    SshClient c = ssh;
    sessions.clear();
    if (c == null) {
      return Future.succeededFuture();
    }
    return client.vertx().executeBlocking(() -> {
      c.stop();
      return null;
    });
  }
}
