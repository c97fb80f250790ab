package ai.bespokelabs.sandbox.core;

import java.security.SecureRandom;
import java.util.Base64;
import java.util.HexFormat;
import java.util.regex.Pattern;

/** Identifiers ({@code <prefix>_<32 hex>}) and random tokens. */
public final class Ids {
  private static final SecureRandom RANDOM = new SecureRandom();
  private static final Pattern HEX32 = Pattern.compile("[0-9a-f]{32}");

  private Ids() {}

  public static String newId(String prefix) {
    byte[] bytes = new byte[16];
    RANDOM.nextBytes(bytes);
    return prefix + "_" + HexFormat.of().formatHex(bytes);
  }

  /** True when {@code id} is {@code prefix_} followed by 32 lowercase hex digits. */
  public static boolean isValid(String prefix, String id) {
    return id != null
        && id.length() == prefix.length() + 33
        && id.startsWith(prefix + "_")
        && HEX32.matcher(id).region(prefix.length() + 1, id.length()).matches();
  }

  /** URL-safe random token of {@code bytes} random bytes, like Python's token_urlsafe. */
  public static String urlSafeToken(int bytes) {
    byte[] b = new byte[bytes];
    RANDOM.nextBytes(b);
    return Base64.getUrlEncoder().withoutPadding().encodeToString(b);
  }
}
