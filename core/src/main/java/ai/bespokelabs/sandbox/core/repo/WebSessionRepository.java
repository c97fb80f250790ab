package ai.bespokelabs.sandbox.core.repo;

import ai.bespokelabs.sandbox.core.model.ApiKeyRecord;
import io.vertx.core.Future;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Tuple;
import java.time.OffsetDateTime;
import java.util.Optional;

/** Dashboard sessions ({@code web_sessions}). Only the HMAC digests of the session and CSRF tokens are stored. */
public final class WebSessionRepository {
  /** A session about to be stored. */
  public record NewSession(String id, String organizationId, String apiKeyId, String tokenDigest, String csrfDigest,
      OffsetDateTime createdAt, OffsetDateTime expiresAt) {}

  /** A valid session with the key it was made from. */
  public record ActiveSession(String id, String csrfDigest, OffsetDateTime expiresAt, ApiKeyRecord key) {}

  private final Pool pool;

  public WebSessionRepository(Pool pool) {
    this.pool = pool;
  }

  public Future<Void> insert(NewSession s) {
    return pool.preparedQuery("INSERT INTO web_sessions (id, organization_id, api_key_id, token_digest, csrf_digest,"
            + " created_at, last_used_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $6, $7)")
        .execute(Tuple.of(s.id(), s.organizationId(), s.apiKeyId(), s.tokenDigest(), s.csrfDigest(), s.createdAt(),
            s.expiresAt()))
        .mapEmpty();
  }

  /**
   * The session whose token has this digest, if it is valid at {@code now}: not revoked, not expired, and its
   * key neither revoked nor expired. Records its use.
   */
  public Future<Optional<ActiveSession>> findActive(String tokenDigest, OffsetDateTime now) {
    return pool.preparedQuery("UPDATE web_sessions s SET last_used_at = $2 FROM api_keys k"
            + " WHERE s.token_digest = $1 AND k.id = s.api_key_id AND s.revoked_at IS NULL AND s.expires_at > $2"
            + " AND k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > $2)"
            + " RETURNING s.id AS session_id, s.csrf_digest, s.expires_at AS session_expires_at, k.id, k.organization_id,"
            + " k.name, k.key_prefix, k.scopes, k.created_at, k.last_used_at, k.expires_at, k.revoked_at")
        .execute(Tuple.of(tokenDigest, now))
        .map(rows -> ApiKeyRepository.first(rows).map(r -> new ActiveSession(r.getString("session_id"),
            r.getString("csrf_digest"), r.getOffsetDateTime("session_expires_at"), ApiKeyRecord.from(r))));
  }

  /** Revokes a session; false when it was not active. */
  public Future<Boolean> revoke(String sessionId, OffsetDateTime now) {
    return pool.preparedQuery("UPDATE web_sessions SET revoked_at = $2 WHERE id = $1 AND revoked_at IS NULL")
        .execute(Tuple.of(sessionId, now))
        .map(r -> r.rowCount() == 1);
  }
}
