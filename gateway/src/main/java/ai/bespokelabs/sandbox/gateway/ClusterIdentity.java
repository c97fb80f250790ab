package ai.bespokelabs.sandbox.gateway;

import ai.bespokelabs.sandbox.core.config.ClusterConfig;
import ai.bespokelabs.sandbox.core.config.ConfigException;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.net.PemKeyCertOptions;
import io.vertx.core.net.PemTrustOptions;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.SecureRandom;
import java.security.Signature;
import java.security.cert.CertPathValidator;
import java.security.cert.CertPathValidatorException;
import java.security.cert.CertificateException;
import java.security.cert.CertificateFactory;
import java.security.cert.CertificateParsingException;
import java.security.cert.PKIXParameters;
import java.security.cert.TrustAnchor;
import java.security.cert.X509Certificate;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.net.ssl.KeyManager;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManager;
import javax.net.ssl.TrustManagerFactory;
import javax.net.ssl.X509ExtendedTrustManager;

/**
 * A clustered node's identity, read once at start from its PEM files ({@code BESPOKE_CLUSTER_TLS_CA},
 * {@code _CERT}, {@code _KEY}) and checked before anything starts: the CA holds certificates, the node's
 * certificate chains to one of them, is valid now, may serve both ends of a TLS connection, and names the
 * node's cluster address (an IP address SAN equal to {@code BESPOKE_CLUSTER_HOST}, a DNS SAN matching it when
 * it is a name, or, under Kubernetes where pod addresses change, any DNS SAN), and the key is an unencrypted
 * PKCS#8 key of that certificate. Every failure is a {@link ConfigException} naming the setting; no message
 * carries key material.
 *
 * <p>Both cluster channels are built from it: the membership transport's {@link SSLContext} and the event
 * bus's PEM options, which get the very bytes checked here.
 */
final class ClusterIdentity {
  static final String CA = "BESPOKE_CLUSTER_TLS_CA";
  static final String CERT = "BESPOKE_CLUSTER_TLS_CERT";
  static final String KEY = "BESPOKE_CLUSTER_TLS_KEY";
  /** TLS 1.3 only: every member is this gateway, so nothing older has to be spoken. */
  static final String PROTOCOL = "TLSv1.3";

  private static final Pattern PEM = Pattern.compile(
      "-----BEGIN ([A-Z0-9 ]+)-----\\s*([A-Za-z0-9+/=\\s]+?)\\s*-----END \\1-----");
  private static final Pattern IPV4 = Pattern.compile("[0-9]{1,3}(\\.[0-9]{1,3}){3}");
  private static final String SERVER_AUTH = "1.3.6.1.5.5.7.3.1";
  private static final String CLIENT_AUTH = "1.3.6.1.5.5.7.3.2";
  private static final String ANY_USAGE = "2.5.29.37.0";
  private static final int SAN_DNS = 2;
  private static final int SAN_IP = 7;

  private final List<X509Certificate> authorities;
  private final List<X509Certificate> chain;
  private final PrivateKey key;
  private final RefusedPeers refusals;
  private final byte[] caPem;
  private final byte[] certPem;
  private final byte[] keyPem;

  private ClusterIdentity(List<X509Certificate> authorities, List<X509Certificate> chain, PrivateKey key,
      byte[] caPem, byte[] certPem, byte[] keyPem) {
    this.authorities = authorities;
    this.chain = chain;
    this.key = key;
    this.refusals = new RefusedPeers(trusting(authorities));
    this.caPem = caPem;
    this.certPem = certPem;
    this.keyPem = keyPem;
  }

  /** Reads and checks the identity {@code config} names; a clustered node cannot start without one. */
  static ClusterIdentity load(ClusterConfig config) {
    ClusterConfig.Tls files = config.tls().orElseThrow(() -> new ConfigException("BESPOKE_CLUSTER=true needs "
        + CA + ", " + CERT + " and " + KEY));
    byte[] caPem = read(CA, files.ca());
    byte[] certPem = read(CERT, files.cert());
    byte[] keyPem = read(KEY, files.key());
    List<X509Certificate> authorities = certificates(CA, caPem);
    List<X509Certificate> chain = certificates(CERT, certPem);
    PrivateKey key = privateKey(keyPem);
    X509Certificate leaf = chain.get(0);
    if (authorities.contains(leaf)) {
      throw new ConfigException(CERT + " must be this node's certificate, signed by the CA, not the CA's own");
    }
    checkChain(chain, authorities);
    checkUsage(leaf);
    checkNames(leaf, config.host(), config.kubernetes());
    checkPair(leaf, key);
    return new ClusterIdentity(authorities, chain, key, caPem, certPem, keyPem);
  }

  /** A TLS 1.3 context presenting this node's certificate and trusting the cluster's CA alone. */
  SSLContext sslContext() {
    try {
      SSLContext context = SSLContext.getInstance(PROTOCOL);
      context.init(keyManagers(), trustManagers(), new SecureRandom());
      return context;
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("cannot build the cluster's TLS context: " + e.getClass().getSimpleName(), e);
    }
  }

  /** What presents this node's certificate in a handshake. */
  KeyManager[] keyManagers() {
    try {
      char[] none = new char[0];
      KeyStore keys = KeyStore.getInstance("PKCS12");
      keys.load(null, none);
      keys.setKeyEntry("node", key, none, chain.toArray(new X509Certificate[0]));
      KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
      kmf.init(keys, none);
      return kmf.getKeyManagers();
    } catch (GeneralSecurityException | IOException e) {
      throw new IllegalStateException("cannot hold the cluster key: " + e.getClass().getSimpleName(), e);
    }
  }

  /** What accepts a membership peer's certificate: only one chained to the cluster's CA; a refusal is logged. */
  TrustManager[] trustManagers() {
    return new TrustManager[] {refusals};
  }

  private static X509ExtendedTrustManager trusting(List<X509Certificate> authorities) {
    try {
      KeyStore trusted = KeyStore.getInstance("PKCS12");
      trusted.load(null, new char[0]);
      for (int i = 0; i < authorities.size(); i++) {
        trusted.setCertificateEntry("ca-" + i, authorities.get(i));
      }
      TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
      tmf.init(trusted);
      for (TrustManager tm : tmf.getTrustManagers()) {
        if (tm instanceof X509ExtendedTrustManager x) {
          return x;
        }
      }
      throw new IllegalStateException("no X.509 trust manager");
    } catch (GeneralSecurityException | IOException e) {
      throw new IllegalStateException("cannot hold the cluster CA: " + e.getClass().getSimpleName(), e);
    }
  }

  /** This node's key and certificate for the event bus (the bytes checked at load). */
  PemKeyCertOptions keyCert() {
    return new PemKeyCertOptions().addKeyValue(Buffer.buffer(keyPem)).addCertValue(Buffer.buffer(certPem));
  }

  /** The cluster's CA for the event bus. */
  PemTrustOptions trust() {
    return new PemTrustOptions().addCertValue(Buffer.buffer(caPem));
  }

  private static byte[] read(String setting, Path file) {
    try {
      return Files.readAllBytes(file);
    } catch (IOException | SecurityException e) {
      throw new ConfigException(setting + ": cannot read " + file + " (" + reason(e) + ")");
    }
  }

  private static String reason(Exception e) {
    return e instanceof java.nio.file.NoSuchFileException ? "no such file"
        : e instanceof java.nio.file.AccessDeniedException ? "permission denied"
        : e.getClass().getSimpleName();
  }

  /** The certificates of a PEM file, in order; anything else in it is refused. */
  private static List<X509Certificate> certificates(String setting, byte[] pem) {
    List<X509Certificate> certs = new ArrayList<>();
    try {
      CertificateFactory factory = CertificateFactory.getInstance("X.509");
      for (Block b : blocks(pem)) {
        if (!b.type().equals("CERTIFICATE")) {
          throw new ConfigException(setting + " must hold PEM certificates only, not " + b.type());
        }
        certs.add((X509Certificate) factory.generateCertificate(new ByteArrayInputStream(b.der())));
      }
    } catch (CertificateException | IllegalArgumentException e) {
      throw new ConfigException(setting + " holds a certificate that cannot be parsed");
    }
    if (certs.isEmpty()) {
      throw new ConfigException(setting + " holds no PEM certificate (-----BEGIN CERTIFICATE-----)");
    }
    return certs;
  }

  /** The one unencrypted PKCS#8 key of the key file; its messages never quote the file. */
  private static PrivateKey privateKey(byte[] pem) {
    List<Block> blocks;
    try {
      blocks = blocks(pem);
    } catch (IllegalArgumentException e) {
      throw new ConfigException(KEY + " is not a PEM file");
    }
    List<Block> keys = blocks.stream().filter(b -> b.type().endsWith("PRIVATE KEY")).toList();
    if (keys.size() != 1) {
      throw new ConfigException(KEY + " must hold exactly one PEM private key (-----BEGIN PRIVATE KEY-----)");
    }
    Block b = keys.get(0);
    if (!b.type().equals("PRIVATE KEY")) {
      throw new ConfigException(KEY + " must be an unencrypted PKCS#8 key (-----BEGIN PRIVATE KEY-----), not "
          + b.type() + "; convert it with: openssl pkcs8 -topk8 -nocrypt -in old.key -out node.key");
    }
    PKCS8EncodedKeySpec spec = new PKCS8EncodedKeySpec(b.der());
    for (String algorithm : List.of("RSA", "EC", "Ed25519", "Ed448", "RSASSA-PSS")) {
      try {
        return KeyFactory.getInstance(algorithm).generatePrivate(spec);
      } catch (GeneralSecurityException wrongAlgorithm) {
        // the next one
      }
    }
    throw new ConfigException(KEY + " holds a PKCS#8 key of no supported algorithm (RSA, EC, Ed25519, Ed448)");
  }

  private static void checkChain(List<X509Certificate> chain, List<X509Certificate> authorities) {
    try {
      Set<TrustAnchor> anchors = new HashSet<>();
      authorities.forEach(a -> anchors.add(new TrustAnchor(a, null)));
      PKIXParameters params = new PKIXParameters(anchors);
      params.setRevocationEnabled(false);
      List<X509Certificate> path = chain.stream().filter(c -> !authorities.contains(c)).toList();
      CertPathValidator.getInstance("PKIX")
          .validate(CertificateFactory.getInstance("X.509").generateCertPath(path), params);
    } catch (CertPathValidatorException e) {
      throw new ConfigException(CERT + " is not a valid certificate of the CA in " + CA + " ("
          + (e.getReason() == null ? "" : e.getReason().toString().toLowerCase(Locale.ROOT).replace('_', ' ') + ": ")
          + e.getMessage() + ")");
    } catch (GeneralSecurityException e) {
      throw new ConfigException(CERT + " cannot be checked against " + CA + " (" + e.getClass().getSimpleName() + ")");
    }
  }

  /** A node is server and client of its peers; a certificate restricted to one of them fails every handshake. */
  private static void checkUsage(X509Certificate leaf) {
    try {
      List<String> usages = leaf.getExtendedKeyUsage();
      if (usages != null && !usages.contains(ANY_USAGE)
          && !(usages.contains(SERVER_AUTH) && usages.contains(CLIENT_AUTH))) {
        throw new ConfigException(CERT + " must allow both TLS server and client authentication"
            + " (extendedKeyUsage serverAuth,clientAuth)");
      }
    } catch (CertificateParsingException e) {
      throw new ConfigException(CERT + " has an unreadable extended key usage");
    }
  }

  private static void checkNames(X509Certificate leaf, String host, boolean kubernetes) {
    List<String> dns = new ArrayList<>();
    List<String> ips = new ArrayList<>();
    try {
      Collection<List<?>> names = leaf.getSubjectAlternativeNames();
      for (List<?> n : names == null ? List.<List<?>>of() : names) {
        int type = (Integer) n.get(0);
        if (type == SAN_DNS) {
          dns.add(((String) n.get(1)).toLowerCase(Locale.ROOT));
        } else if (type == SAN_IP) {
          ips.add((String) n.get(1));
        }
      }
    } catch (CertificateParsingException e) {
      throw new ConfigException(CERT + " has unreadable subject alternative names");
    }
    boolean ip = IPV4.matcher(host).matches() || host.contains(":");
    boolean named = ip ? ips.stream().anyMatch(a -> sameAddress(a, host))
        : dns.stream().anyMatch(d -> matchesName(d, host.toLowerCase(Locale.ROOT)));
    if (!named && !(kubernetes && !dns.isEmpty())) {
      throw new ConfigException(CERT + " does not name BESPOKE_CLUSTER_HOST " + host + " (it needs "
          + (ip ? "an IP address" : "a DNS") + " subject alternative name " + host
          + (kubernetes ? ", or under Kubernetes a DNS name" : "") + "; it has " + (dns.isEmpty() && ips.isEmpty()
          ? "none" : String.join(", ", dns) + (dns.isEmpty() || ips.isEmpty() ? "" : ", ") + String.join(", ", ips))
          + ")");
    }
  }

  private static boolean sameAddress(String a, String b) {
    try {
      return InetAddress.getByName(a).equals(InetAddress.getByName(b)); // literals: no lookup
    } catch (IOException e) {
      return false;
    }
  }

  private static boolean matchesName(String pattern, String host) {
    if (pattern.startsWith("*.")) {
      int dot = host.indexOf('.');
      return dot > 0 && host.substring(dot).equals(pattern.substring(1));
    }
    return pattern.equals(host);
  }

  /** The key signs what the certificate's public key verifies. */
  private static void checkPair(X509Certificate leaf, PrivateKey key) {
    String algorithm = switch (key.getAlgorithm()) {
      case "RSA" -> "SHA256withRSA";
      case "EC" -> "SHA256withECDSA";
      default -> key.getAlgorithm();
    };
    try {
      byte[] probe = new byte[32];
      new SecureRandom().nextBytes(probe);
      Signature signer = Signature.getInstance(algorithm);
      signer.initSign(key);
      signer.update(probe);
      byte[] signature = signer.sign();
      Signature verifier = Signature.getInstance(algorithm);
      verifier.initVerify(leaf.getPublicKey());
      verifier.update(probe);
      if (!verifier.verify(signature)) {
        throw new ConfigException(KEY + " is not the key of the certificate in " + CERT);
      }
    } catch (GeneralSecurityException e) {
      throw new ConfigException(KEY + " is not the key of the certificate in " + CERT);
    }
  }

  private record Block(String type, byte[] der) {}

  private static List<Block> blocks(byte[] pem) {
    String text = new String(pem, StandardCharsets.US_ASCII);
    List<Block> blocks = new ArrayList<>();
    Matcher m = PEM.matcher(text);
    while (m.find()) {
      blocks.add(new Block(m.group(1), Base64.getMimeDecoder().decode(m.group(2))));
    }
    return blocks;
  }

  @Override
  public String toString() {
    return "ClusterIdentity[" + chain.get(0).getSubjectX500Principal().getName() + "]"; // never the key
  }
}
