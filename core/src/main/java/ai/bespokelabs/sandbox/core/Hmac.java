package ai.bespokelabs.sandbox.core;

import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.util.HexFormat;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/** HMAC-SHA256 with the server pepper; the only way secrets are stored. */
public final class Hmac {
  private final ThreadLocal<Mac> mac;

  public Hmac(Secret pepper) {
    byte[] key = pepper.reveal().getBytes(StandardCharsets.UTF_8);
    this.mac = ThreadLocal.withInitial(() -> {
      try {
        Mac m = Mac.getInstance("HmacSHA256");
        m.init(new SecretKeySpec(key, "HmacSHA256"));
        return m;
      } catch (GeneralSecurityException e) {
        throw new IllegalStateException("HmacSHA256 is unavailable", e);
      }
    });
  }

  public String hex(String value) {
    Mac m = mac.get();
    return HexFormat.of().formatHex(m.doFinal(value.getBytes(StandardCharsets.UTF_8)));
  }

  /** Constant-time comparison of two strings. */
  public static boolean constantTimeEquals(String a, String b) {
    if (a == null || b == null) {
      return false;
    }
    return MessageDigest.isEqual(a.getBytes(StandardCharsets.UTF_8), b.getBytes(StandardCharsets.UTF_8));
  }
}
