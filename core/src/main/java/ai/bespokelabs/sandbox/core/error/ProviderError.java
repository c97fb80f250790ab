package ai.bespokelabs.sandbox.core.error;

import io.vertx.core.json.JsonObject;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * The provider error payload of the wire contract: exactly {@code message, code, backend, op, retryable,
 * outcome, context}. The message is fixed per code and the context passes an allow-list only, so no
 * provider text (which may echo credentials) ever reaches a client. The one exception is {@code reason}: a
 * sentence the gateway itself wrote about its own setup (what to install, which setting is wrong), which
 * replaces the fixed message of a {@code backend_not_installed} or {@code configuration} error; it never holds
 * provider text, a credential or a host path.
 *
 * @param reason the gateway's own explanation shown as {@code message}, or null for the code's fixed message
 */
public record ProviderError(ErrorCode code, String backend, String op, boolean retryable, Outcome outcome,
    Map<String, Object> context, String reason) {

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
    if (reason != null && (code != ErrorCode.BACKEND_NOT_INSTALLED && code != ErrorCode.CONFIGURATION
        || reason.isBlank() || reason.equals(code.publicMessage()))) {
      reason = null;
    }
  }

  public ProviderError(ErrorCode code, String backend, String op, boolean retryable, Outcome outcome,
      Map<String, Object> context) {
    this(code, backend, op, retryable, outcome, context, null);
  }

  public static ProviderError of(ErrorCode code, String backend, String op, boolean retryable, Outcome outcome) {
    return new ProviderError(code, backend, op, retryable, outcome, Map.of());
  }

  /**
   * A backend this node cannot serve: {@code backend_not_installed}, not retryable, nothing done, with the
   * gateway's own {@code reason} as its message.
   */
  public static ProviderError unavailable(String backend, String op, String reason) {
    return new ProviderError(ErrorCode.BACKEND_NOT_INSTALLED, backend, op, false, Outcome.FAILED, Map.of(), reason);
  }

  public ProviderError withContext(String key, Object value) {
    Map<String, Object> ctx = new LinkedHashMap<>(context);
    ctx.put(key, value);
    return new ProviderError(code, backend, op, retryable, outcome, ctx, reason);
  }

  /** The message clients see: the gateway's reason when there is one, else the code's fixed message. */
  public String message() {
    return reason != null ? reason : code.publicMessage();
  }

  public int httpStatus() {
    return code.httpStatus();
  }

  public JsonObject toJson() {
    return new JsonObject()
        .put("message", message())
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
        "failed".equals(j.getString("outcome")) ? Outcome.FAILED : Outcome.UNKNOWN, ctx.getMap(),
        j.getString("message"));
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
