package ai.bespokelabs.sandbox.core;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.regex.Pattern;

/**
 * Redacts what may be a secret before it is stored for humans to read (audit details): values under keys
 * that name credentials become {@code [REDACTED]}, product keys and bearer tokens inside any string are
 * masked, and strings are cut to 1,000 characters.
 */
public final class Redaction {
  private static final Pattern SECRET_KEY =
      Pattern.compile("authorization|cookie|csrf|password|secret|token|api[_-]?key|credential", Pattern.CASE_INSENSITIVE);
  private static final Pattern PRODUCT_KEY = Pattern.compile("bsk_live_[A-Za-z0-9_-]*");
  private static final Pattern BEARER = Pattern.compile("(?i)bearer\\s+\\S+");
  static final int MAX_STRING = 1000;
  public static final String REDACTED = "[REDACTED]";

  private Redaction() {}

  public static JsonObject redact(JsonObject in) {
    JsonObject out = new JsonObject();
    in.forEach(e -> out.put(e.getKey(), SECRET_KEY.matcher(e.getKey()).find() ? REDACTED : value(e.getValue())));
    return out;
  }

  private static Object value(Object v) {
    if (v instanceof JsonObject o) {
      return redact(o);
    }
    if (v instanceof JsonArray a) {
      JsonArray out = new JsonArray();
      a.forEach(x -> out.add(value(x)));
      return out;
    }
    if (v instanceof String s) {
      String masked = BEARER.matcher(PRODUCT_KEY.matcher(s).replaceAll("bsk_live_[REDACTED]")).replaceAll("Bearer [REDACTED]");
      return masked.length() > MAX_STRING ? masked.substring(0, MAX_STRING) : masked;
    }
    return v;
  }
}
