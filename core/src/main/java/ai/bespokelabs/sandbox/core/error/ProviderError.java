package ai.bespokelabs.sandbox.core.error;

import io.vertx.core.json.JsonObject;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * The provider error payload of the wire contract: exactly {@code message, code, backend, op, retryable,
 * outcome, context}. The message is fixed per code and the context passes an allow-list only, so no
 * provider text (which may echo credentials) ever reaches a client.
 */
public record ProviderError(
    ErrorCode code, String backend, String op, boolean retryable, Outcome outcome, Map<String, Object> context) {

  /** {@code failed}: proven to have had no side effect; {@code unknown}: the provider may have acted. */
  public enum Outcome {
    FAILED, UNKNOWN;

    public String wire() {
      return this == FAILED ? "failed" : "unknown";
    }
  }

  private static final Set<String> CLEANUP = Set.of("not_found", "deleted", "unknown");
  private static final Pattern SAFE_ID = Pattern.compile("^[A-Za-z0-9_.:/-]{1,255}$");

  public ProviderError {
    context = sanitize(context == null ? Map.of() : context);
    if ("create".equals(op) && outcome == Outcome.UNKNOWN) {
      retryable = false;
    }
  }

  public static ProviderError of(ErrorCode code, String backend, String op, boolean retryable, Outcome outcome) {
    return new ProviderError(code, backend, op, retryable, outcome, Map.of());
  }

  public ProviderError withContext(String key, Object value) {
    Map<String, Object> ctx = new LinkedHashMap<>(context);
    ctx.put(key, value);
    return new ProviderError(code, backend, op, retryable, outcome, ctx);
  }

  public int httpStatus() {
    return code.httpStatus();
  }

  public JsonObject toJson() {
    return new JsonObject()
        .put("message", code.publicMessage())
        .put("code", code.wire())
        .put("backend", backend)
        .put("op", op)
        .put("retryable", retryable)
        .put("outcome", outcome.wire())
        .put("context", new JsonObject(new LinkedHashMap<>(context)));
  }

  public static ProviderError fromJson(JsonObject j) {
    JsonObject ctx = j.getJsonObject("context", new JsonObject());
    return new ProviderError(ErrorCode.fromWire(j.getString("code")), j.getString("backend"), j.getString("op"),
        j.getBoolean("retryable", false),
        "failed".equals(j.getString("outcome")) ? Outcome.FAILED : Outcome.UNKNOWN, ctx.getMap());
  }

  /** Keeps only the allow-listed context keys with safe values. */
  static Map<String, Object> sanitize(Map<String, Object> raw) {
    Map<String, Object> out = new LinkedHashMap<>();
    raw.forEach((k, v) -> {
      switch (k) {
        case "cleanup_status" -> {
          if (v instanceof String s && CLEANUP.contains(s)) {
            out.put(k, s);
          }
        }
        case "exit_code", "provider_status" -> {
          if (v instanceof Integer || v instanceof Long || v instanceof Short) {
            out.put(k, ((Number) v).longValue());
          }
        }
        case "provider_code", "provider_resource_id" -> {
          if (v instanceof String s && safeIdentifier(s)) {
            out.put(k, s);
          }
        }
        case "retry_after_secs", "retry_after_ms" -> {
          if ((v instanceof Integer || v instanceof Long) && ((Number) v).longValue() >= 0) {
            out.put(k, ((Number) v).longValue());
          }
        }
        default -> { }
      }
    });
    // A provider's wait hint is reported both ways: milliseconds (precise) and whole seconds (rounded up).
    if (out.get("retry_after_ms") instanceof Long ms && !out.containsKey("retry_after_secs")) {
      out.put("retry_after_secs", (ms + 999) / 1000);
    } else if (out.get("retry_after_secs") instanceof Long secs && !out.containsKey("retry_after_ms")) {
      out.put("retry_after_ms", secs * 1000);
    }
    return Map.copyOf(out);
  }

  static boolean safeIdentifier(String s) {
    String lower = s.toLowerCase(java.util.Locale.ROOT);
    return SAFE_ID.matcher(s).matches()
        && !s.contains("bsk_live_")
        && !lower.contains("api_key")
        && !lower.contains("password")
        && !lower.contains("secret");
  }
}
