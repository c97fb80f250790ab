package ai.bespokelabs.sandbox.testkit;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.GeneralSecurityException;
import java.security.Key;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * A cluster CA and node certificates for tests and benchmarks, made with the JDK's {@code keytool} (always
 * there where Java is) in a directory of their own: {@code ca.pem}, and per node {@code <name>.pem} and
 * {@code <name>.key} (unencrypted PKCS#8, mode 0600), EC P-256, valid for a week, for TLS server and client.
 */
public final class ClusterCertificates {
  private static final String PASSWORD = "keystore-of-a-test";

  private final Path dir;
  private final Path store;

  private ClusterCertificates(Path dir) {
    this.dir = dir;
    this.store = dir.resolve("keys.p12");
  }

  /** A new CA named {@code caName} in {@code dir} (created if needed). */
  public static ClusterCertificates newCa(Path dir, String caName) {
    try {
      Files.createDirectories(dir);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    ClusterCertificates certs = new ClusterCertificates(dir);
    certs.keytool("-genkeypair", "-alias", "ca", "-keyalg", "EC", "-groupname", "secp256r1", "-sigalg",
        "SHA256withECDSA", "-dname", "CN=" + caName, "-validity", "7", "-ext", "bc:c", "-ext", "ku:c=keyCertSign,cRLSign");
    try {
      certs.write("ca.pem", pem("CERTIFICATE", certs.load().getCertificate("ca").getEncoded()));
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException(e);
    }
    return certs;
  }

  /** The CA's certificate. */
  public Path ca() {
    return dir.resolve("ca.pem");
  }

  /**
   * A node certificate named {@code name}, signed by this CA, with {@code subjectAltNames} in keytool's form
   * ({@code "ip:127.0.0.1"}, {@code "dns:*.gw.svc"}); returns the settings that name its three files.
   */
  public Map<String, String> node(String name, String... subjectAltNames) {
    List<String> args = new ArrayList<>(List.of("-genkeypair", "-alias", name, "-keyalg", "EC", "-groupname",
        "secp256r1", "-sigalg", "SHA256withECDSA", "-dname", "CN=" + name, "-validity", "7", "-signer", "ca",
        "-ext", "eku=serverAuth,clientAuth", "-ext", "ku=digitalSignature,keyAgreement"));
    if (subjectAltNames.length > 0) {
      args.addAll(List.of("-ext", "san=" + String.join(",", subjectAltNames)));
    }
    keytool(args.toArray(new String[0]));
    KeyStore ks = load();
    try {
      Certificate[] chain = ks.getCertificateChain(name);
      Key key = ks.getKey(name, PASSWORD.toCharArray());
      Path cert = write(name + ".pem", pem("CERTIFICATE", chain[0].getEncoded()));
      Path keyFile = write(name + ".key", pem("PRIVATE KEY", key.getEncoded()));
      Files.setPosixFilePermissions(keyFile, PosixFilePermissions.fromString("rw-------"));
      return Map.of("BESPOKE_CLUSTER_TLS_CA", ca().toString(), "BESPOKE_CLUSTER_TLS_CERT", cert.toString(),
          "BESPOKE_CLUSTER_TLS_KEY", keyFile.toString());
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException(e);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private KeyStore load() {
    try (InputStream in = Files.newInputStream(store)) {
      KeyStore ks = KeyStore.getInstance("PKCS12");
      ks.load(in, PASSWORD.toCharArray());
      return ks;
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException(e);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private void keytool(String... args) {
    List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "keytool").toString()));
    cmd.addAll(List.of(args));
    cmd.addAll(List.of("-keystore", store.toString(), "-storetype", "PKCS12", "-storepass", PASSWORD, "-keypass",
        PASSWORD, "-noprompt"));
    try {
      Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
        p.destroyForcibly();
        throw new IllegalStateException("keytool " + args[0] + " failed: " + out);
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  private Path write(String name, String text) {
    try {
      return Files.writeString(dir.resolve(name), text);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static String pem(String type, byte[] der) {
    return "-----BEGIN " + type + "-----\n" + Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII))
        .encodeToString(der) + "\n-----END " + type + "-----\n";
  }
}
