package ai.bespokelabs.sandbox.gateway.http;

import ai.bespokelabs.sandbox.core.error.ApiException;
import java.nio.charset.StandardCharsets;
import java.util.Base64;

/**
 * Offset pages as the contract has them: the cursor is the decimal row offset, base64url without padding,
 * absent for the first page; {@code limit} within a range.
 */
final class Paging {
  private Paging() {}

  static int limit(String raw, int def, int max) {
    if (raw == null) {
      return def;
    }
    try {
      int n = Integer.parseInt(raw);
      if (n >= 1 && n <= max) {
        return n;
      }
    } catch (NumberFormatException ignored) {
      // rejected below
    }
    throw ApiException.invalid("limit must be between 1 and " + max);
  }

  static long offset(String cursor) {
    if (cursor == null || cursor.isEmpty()) {
      return 0;
    }
    try {
      long n = Long.parseLong(new String(Base64.getUrlDecoder().decode(cursor), StandardCharsets.US_ASCII));
      if (n >= 0) {
        return n;
      }
    } catch (IllegalArgumentException ignored) {
      // rejected below
    }
    throw ApiException.invalid("invalid pagination cursor");
  }

  static String cursor(long offset) {
    return Base64.getUrlEncoder().withoutPadding().encodeToString(Long.toString(offset)
        .getBytes(StandardCharsets.US_ASCII));
  }
}
