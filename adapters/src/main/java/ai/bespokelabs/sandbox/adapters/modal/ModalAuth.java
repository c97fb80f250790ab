package ai.bespokelabs.sandbox.adapters.modal;

import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.function.Supplier;

/**
 * The short-lived auth token Modal's clients send as {@code x-modal-auth-token} beside the token id and secret,
 * as Modal's own libraries keep it: fetched with {@code AuthTokenGet}, its expiry read from the JWT's {@code exp}
 * claim (20 minutes when it has none), and fetched again before it expires, once the last
 * {@link #REFRESH_WINDOW_MS} (or, for a short-lived token, the last half of its life) has begun. One fetch at a
 * time: calls that need a token meanwhile wait for the same one. {@link #renew} drops a token the server called
 * expired. Touched only on the adapter's context; the token is never logged.
 */
final class ModalAuth {
  /** How long a token without an {@code exp} claim is used (as Modal's clients do). */
  static final long DEFAULT_LIFETIME_MS = 20 * 60_000L;
  /** A token is renewed this long before it expires. */
  static final long REFRESH_WINDOW_MS = 5 * 60_000L;

  private final Supplier<Future<String>> fetch;
  private String token;
  private long refreshAtMs;
  private Future<String> pending;

  /** @param fetch {@code AuthTokenGet}: a fresh token */
  ModalAuth(Supplier<Future<String>> fetch) {
    this.fetch = fetch;
  }

  /** The current token, fetched first when there is none or it is due for renewal. */
  Future<String> token() {
    if (token != null && System.currentTimeMillis() < refreshAtMs) {
      return Future.succeededFuture(token);
    }
    if (pending == null) {
      long asked = System.currentTimeMillis();
      Future<String> f = fetch.get().map(t -> {
        long exp = expiryMs(t);
        long expires = exp > 0 ? exp : asked + DEFAULT_LIFETIME_MS;
        token = t;
        refreshAtMs = expires - Math.min(REFRESH_WINDOW_MS, Math.max(0, expires - asked) / 2);
        return t;
      });
      pending = f;
      f.onComplete(ar -> pending = null);
      return f;
    }
    return pending;
  }

  /** A token the server refused as expired: dropped (unless already replaced), and a fresh one fetched. */
  Future<String> renew(String refused) {
    if (refused != null && refused.equals(token)) {
      token = null;
    }
    return token();
  }

  /** The {@code exp} claim of a JWT in milliseconds, or 0 when it has none. */
  static long expiryMs(String jwt) {
    String[] parts = jwt.split("\\.");
    if (parts.length != 3) {
      return 0;
    }
    try {
      JsonObject claims = new JsonObject(new String(Base64.getUrlDecoder().decode(parts[1]), StandardCharsets.UTF_8));
      Number exp = claims.getNumber("exp");
      return exp == null ? 0 : (long) (exp.doubleValue() * 1000);
    } catch (RuntimeException e) {
      return 0;
    }
  }
}
