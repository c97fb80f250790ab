package ai.bespokelabs.sandbox.gateway.auth;

import ai.bespokelabs.sandbox.core.Hmac;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.model.ApiKeyRecord;
import ai.bespokelabs.sandbox.core.repo.ApiKeyRepository;
import io.vertx.core.Future;
import java.time.Clock;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * Resolves {@code Authorization: Bearer bsk_live_...} to a {@link Principal} with the seed's 401 messages.
 *
 * <p>Keys that authenticated are kept in memory for {@link #CACHE_TTL_NANOS}, so a busy client costs no
 * database read per request. A revocation is applied at once on this node ({@link #forget}) and PostgreSQL
 * notifies every node, which forgets the key too; the time limit is the backstop should a notification be
 * lost. Unknown keys are never cached, expiry is checked on every request, and last use is written at most
 * once a second per key.
 */
public final class Authenticator {
  private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(Authenticator.class);
  public static final String KEY_PREFIX = "bsk_live_";
  /** The 401 of a request that brings neither a Bearer header nor a valid dashboard session. */
  public static final String NO_CREDENTIALS = "Bearer API key or dashboard session required";
  static final long CACHE_TTL_NANOS = TimeUnit.SECONDS.toNanos(5);
  static final long TOUCH_INTERVAL_NANOS = TimeUnit.SECONDS.toNanos(1);
  /** More live keys than this on one node: the cache starts over rather than grow without bound. */
  static final int CACHE_CAPACITY = 10_000;

  private record Cached(ApiKeyRecord key, long loadedAt) {}

  private final ApiKeyRepository keys;
  private final Hmac hmac;
  private final Clock clock;
  private final Map<String, Cached> byDigest = new ConcurrentHashMap<>();
  private final Map<String, Long> touchedAt = new ConcurrentHashMap<>();

  public Authenticator(ApiKeyRepository keys, Hmac hmac, Clock clock) {
    this.keys = keys;
    this.hmac = hmac;
    this.clock = clock;
  }

  public Future<Principal> authenticate(String authorization) {
    if (authorization == null) {
      return Future.failedFuture(ApiException.unauthorized(NO_CREDENTIALS));
    }
    if (!authorization.startsWith("Bearer ")) {
      return Future.failedFuture(ApiException.unauthorized("Bearer API key required"));
    }
    return authenticateKey(authorization.substring("Bearer ".length()).trim());
  }

  /** Resolves a product key's secret (from a Bearer header or a dashboard login). */
  public Future<Principal> authenticateKey(String secret) {
    if (secret == null || !secret.startsWith(KEY_PREFIX) || secret.length() > 512) {
      return Future.failedFuture(ApiException.unauthorized("invalid API key"));
    }
    String digest = hmac.hex(secret);
    long now = System.nanoTime();
    Cached cached = byDigest.get(digest);
    if (cached != null && now - cached.loadedAt() < CACHE_TTL_NANOS) {
      try {
        return Future.succeededFuture(admit(cached.key()));
      } catch (ApiException e) {
        return Future.failedFuture(e);
      }
    }
    return keys.findByDigest(digest).map(found -> {
      ApiKeyRecord k = found.orElseThrow(() -> ApiException.unauthorized("invalid API key"));
      if (k.revokedAt() == null) {
        if (byDigest.size() >= CACHE_CAPACITY) {
          byDigest.clear();
        }
        byDigest.put(digest, new Cached(k, now));
      } else {
        byDigest.remove(digest);
      }
      return admit(k);
    });
  }

  /** Forgets a key (revoked): its next use reads the database again. */
  public void forget(String keyId) {
    byDigest.values().removeIf(c -> c.key().id().equals(keyId));
    touchedAt.remove(keyId);
  }

  private Principal admit(ApiKeyRecord k) {
    if (k.revokedAt() != null) {
      throw ApiException.unauthorized("invalid API key");
    }
    OffsetDateTime now = OffsetDateTime.now(clock).withOffsetSameInstant(ZoneOffset.UTC);
    if (k.expiresAt() != null && !k.expiresAt().isAfter(now)) {
      throw ApiException.unauthorized("API key has expired");
    }
    touch(k.id(), now);
    return new Principal(k.id(), k.name(), k.organizationId(), k.scopes(), "api_key", null);
  }

  private void touch(String keyId, OffsetDateTime now) {
    long t = System.nanoTime();
    Long last = touchedAt.get(keyId);
    if (last != null && t - last < TOUCH_INTERVAL_NANOS) {
      return;
    }
    if (touchedAt.size() >= CACHE_CAPACITY) {
      touchedAt.clear();
    }
    touchedAt.put(keyId, t);
    keys.touch(keyId, now).onFailure(e -> LOG.warn("Recording the use of key {} failed: {}", keyId, e.toString()));
  }
}
