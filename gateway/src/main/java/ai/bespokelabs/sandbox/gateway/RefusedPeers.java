package ai.bespokelabs.sandbox.gateway;

import java.net.Socket;
import java.security.cert.CertificateException;
import java.security.cert.X509Certificate;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.X509ExtendedTrustManager;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The cluster's trust manager, which says when it refuses a peer: a process presenting a certificate the
 * cluster's CA did not sign (or an expired one) is refused in the handshake, and the log names its address and
 * the reason, at most once a minute however hard it tries, with the count since start. A peer presenting no
 * certificate at all is refused by TLS before any certificate is looked at, without a line here.
 */
final class RefusedPeers extends X509ExtendedTrustManager {
  private static final Logger LOG = LoggerFactory.getLogger(RefusedPeers.class);
  private static final long WARN_EVERY_NANOS = TimeUnit.MINUTES.toNanos(1);
  private final X509ExtendedTrustManager delegate;
  private final AtomicLong refused = new AtomicLong();
  private final AtomicLong lastWarned = new AtomicLong(System.nanoTime() - WARN_EVERY_NANOS);

  RefusedPeers(X509ExtendedTrustManager delegate) {
    this.delegate = delegate;
  }

  @Override
  public void checkClientTrusted(X509Certificate[] chain, String authType, Socket socket) throws CertificateException {
    checked(peer(socket), chain, () -> delegate.checkClientTrusted(chain, authType, socket));
  }

  @Override
  public void checkClientTrusted(X509Certificate[] chain, String authType, SSLEngine engine) throws CertificateException {
    checked(peer(engine), chain, () -> delegate.checkClientTrusted(chain, authType, engine));
  }

  @Override
  public void checkServerTrusted(X509Certificate[] chain, String authType, Socket socket) throws CertificateException {
    checked(peer(socket), chain, () -> delegate.checkServerTrusted(chain, authType, socket));
  }

  @Override
  public void checkServerTrusted(X509Certificate[] chain, String authType, SSLEngine engine) throws CertificateException {
    checked(peer(engine), chain, () -> delegate.checkServerTrusted(chain, authType, engine));
  }

  @Override
  public void checkClientTrusted(X509Certificate[] chain, String authType) throws CertificateException {
    checked("?", chain, () -> delegate.checkClientTrusted(chain, authType));
  }

  @Override
  public void checkServerTrusted(X509Certificate[] chain, String authType) throws CertificateException {
    checked("?", chain, () -> delegate.checkServerTrusted(chain, authType));
  }

  /** One of the delegate's checks. */
  @FunctionalInterface
  private interface Check {
    void run() throws CertificateException;
  }

  private void checked(String peer, X509Certificate[] chain, Check check) throws CertificateException {
    try {
      check.run();
    } catch (CertificateException e) {
      throw refused(peer, chain, e);
    }
  }

  private static String peer(Socket socket) {
    return socket == null || socket.getInetAddress() == null ? "?" : socket.getInetAddress().getHostAddress();
  }

  private static String peer(SSLEngine engine) {
    return engine == null || engine.getPeerHost() == null ? "?" : engine.getPeerHost();
  }

  @Override
  public X509Certificate[] getAcceptedIssuers() {
    return delegate.getAcceptedIssuers();
  }

  private CertificateException refused(String peer, X509Certificate[] chain, CertificateException e) {
    long total = refused.incrementAndGet();
    long now = System.nanoTime();
    long last = lastWarned.get();
    if (now - last >= WARN_EVERY_NANOS && lastWarned.compareAndSet(last, now)) {
      String subject = chain == null || chain.length == 0 ? "none" : chain[0].getSubjectX500Principal().getName();
      LOG.warn("Refused a cluster peer at {}: its certificate ({}) is not one of this cluster's ({}); {} refused"
          + " since start", peer, subject, e.getMessage(), total);
    }
    return e;
  }
}
