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

  /** The {@code limit} query parameter, as FastAPI's {@code Query(ge=1, le=max)} validates it. */
  static int limit(String raw, int def, int max) {
    if (raw == null) {
      return def;
    }
    long n;
    try {
      n = Long.parseLong(raw.strip());
    } catch (NumberFormatException e) {
      throw query("int_parsing", "Input should be a valid integer, unable to parse string as an integer", raw, null);
    }
    if (n < 1) {
      throw query("greater_than_equal", "Input should be greater than or equal to 1", raw,
          new io.vertx.core.json.JsonObject().put("ge", 1));
    }
    if (n > max) {
      throw query("less_than_equal", "Input should be less than or equal to " + max, raw,
          new io.vertx.core.json.JsonObject().put("le", max));
    }
    return (int) n;
  }

  private static ApiException query(String type, String msg, String input, io.vertx.core.json.JsonObject ctx) {
    return new ApiException(422, new io.vertx.core.json.JsonArray()
        .add(Body.error(type, "query", java.util.List.of("limit"), msg, input, ctx)));
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
