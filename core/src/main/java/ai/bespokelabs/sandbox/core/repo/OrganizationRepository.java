package ai.bespokelabs.sandbox.core.repo;

import io.vertx.core.Future;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Tuple;
import java.time.OffsetDateTime;

/** Organizations; created together with their initial key. */
public final class OrganizationRepository {
  private final Pool pool;

  public OrganizationRepository(Pool pool) {
    this.pool = pool;
  }

  /** Inserts the organization and its first key in one transaction. */
  public Future<Void> createWithInitialKey(String orgId, String name, OffsetDateTime now, ApiKeyRepository.NewKey key) {
    return pool.withTransaction(conn -> conn
        .preparedQuery("INSERT INTO organizations (id, name, created_at) VALUES ($1, $2, $3)")
        .execute(Tuple.of(orgId, name, now))
        .compose(r -> ApiKeyRepository.insert(conn, key)));
  }
}
