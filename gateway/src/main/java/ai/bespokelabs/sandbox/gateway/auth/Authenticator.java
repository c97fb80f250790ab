package ai.bespokelabs.sandbox.gateway.auth;

import ai.bespokelabs.sandbox.core.Hmac;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.model.ApiKeyRecord;
import ai.bespokelabs.sandbox.core.repo.ApiKeyRepository;
import io.vertx.core.Future;
import java.time.Clock;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;

/** Resolves {@code Authorization: Bearer bsk_live_...} to a {@link Principal} with the seed's 401 messages. */
public final class Authenticator {
  public static final String KEY_PREFIX = "bsk_live_";

  private final ApiKeyRepository keys;
  private final Hmac hmac;
  private final Clock clock;

  public Authenticator(ApiKeyRepository keys, Hmac hmac, Clock clock) {
    this.keys = keys;
    this.hmac = hmac;
    this.clock = clock;
  }

  public Future<Principal> authenticate(String authorization) {
    if (authorization == null) {
      return Future.failedFuture(ApiException.unauthorized("Bearer API key or dashboard session required"));
    }
    if (!authorization.startsWith("Bearer ")) {
      return Future.failedFuture(ApiException.unauthorized("Bearer API key required"));
    }
    String secret = authorization.substring("Bearer ".length()).trim();
    if (!secret.startsWith(KEY_PREFIX) || secret.length() > 512) {
      return Future.failedFuture(ApiException.unauthorized("invalid API key"));
    }
    return keys.findByDigest(hmac.hex(secret)).map(found -> {
      ApiKeyRecord k = found.orElseThrow(() -> ApiException.unauthorized("invalid API key"));
      if (k.revokedAt() != null) {
        throw ApiException.unauthorized("invalid API key");
      }
      OffsetDateTime now = OffsetDateTime.now(clock).withOffsetSameInstant(ZoneOffset.UTC);
      if (k.expiresAt() != null && !k.expiresAt().isAfter(now)) {
        throw ApiException.unauthorized("API key has expired");
      }
      keys.touch(k.id(), now);
      return new Principal(k.id(), k.name(), k.organizationId(), k.scopes(), "api_key");
    });
  }
}
