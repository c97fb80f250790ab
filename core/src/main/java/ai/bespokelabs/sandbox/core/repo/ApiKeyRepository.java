package ai.bespokelabs.sandbox.core.repo;

import ai.bespokelabs.sandbox.core.model.ApiKeyRecord;
import io.vertx.core.Future;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.RowSet;
import io.vertx.sqlclient.SqlClient;
import io.vertx.sqlclient.Tuple;
import java.time.OffsetDateTime;
import java.util.List;
import java.util.Optional;

/** Product keys. Only the HMAC digest of a secret is ever stored. */
public final class ApiKeyRepository {
  private final Pool pool;

  /** A key about to be inserted. */
  public record NewKey(ApiKeyRecord record, String digest) {}

  public ApiKeyRepository(Pool pool) {
    this.pool = pool;
  }

  static Future<Void> insert(SqlClient conn, NewKey key) {
    ApiKeyRecord k = key.record();
    return conn.preparedQuery("INSERT INTO api_keys (id, organization_id, name, key_prefix, key_digest, scopes,"
            + " created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)")
        .execute(Tuple.of(k.id(), k.organizationId(), k.name(), k.prefix(), key.digest(),
            k.scopes().toArray(String[]::new), k.createdAt(), k.expiresAt()))
        .mapEmpty();
  }

  public Future<Void> insert(NewKey key) {
    return insert(pool, key);
  }

  public Future<Optional<ApiKeyRecord>> findByDigest(String digest) {
    return pool.preparedQuery("SELECT " + ApiKeyRecord.COLUMNS + " FROM api_keys WHERE key_digest = $1")
        .execute(Tuple.of(digest))
        .map(rows -> first(rows).map(ApiKeyRecord::from));
  }

  /** Records use at {@code now}; never moves it back. Callers throttle, so hot keys are not a write per request. */
  public Future<Void> touch(String keyId, OffsetDateTime now) {
    return pool.preparedQuery("UPDATE api_keys SET last_used_at = $2 WHERE id = $1"
            + " AND (last_used_at IS NULL OR last_used_at < $2)")
        .execute(Tuple.of(keyId, now))
        .mapEmpty();
  }

  public Future<List<ApiKeyRecord>> list(String orgId) {
    return pool.preparedQuery("SELECT " + ApiKeyRecord.COLUMNS
            + " FROM api_keys WHERE organization_id = $1 ORDER BY created_at, id")
        .execute(Tuple.of(orgId))
        .map(rows -> {
          java.util.ArrayList<ApiKeyRecord> out = new java.util.ArrayList<>();
          rows.forEach(r -> out.add(ApiKeyRecord.from(r)));
          return out;
        });
  }

  /** An active (not revoked) key of the organization. */
  public Future<Optional<ApiKeyRecord>> findActive(String orgId, String keyId) {
    return pool.preparedQuery("SELECT " + ApiKeyRecord.COLUMNS
            + " FROM api_keys WHERE id = $1 AND organization_id = $2 AND revoked_at IS NULL")
        .execute(Tuple.of(keyId, orgId))
        .map(rows -> first(rows).map(ApiKeyRecord::from));
  }

  /** Revokes an active key of the organization; false when there was none. */
  public Future<Boolean> revoke(String orgId, String keyId, OffsetDateTime now) {
    return pool.preparedQuery("UPDATE api_keys SET revoked_at = $3"
            + " WHERE id = $1 AND organization_id = $2 AND revoked_at IS NULL")
        .execute(Tuple.of(keyId, orgId, now))
        .map(r -> r.rowCount() == 1);
  }

  static Optional<Row> first(RowSet<Row> rows) {
    var it = rows.iterator();
    return it.hasNext() ? Optional.of(it.next()) : Optional.empty();
  }
}
