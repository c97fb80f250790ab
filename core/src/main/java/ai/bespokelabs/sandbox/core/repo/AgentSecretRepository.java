package ai.bespokelabs.sandbox.core.repo;

import ai.bespokelabs.sandbox.core.Secret;
import ai.bespokelabs.sandbox.core.agent.SecretBox;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.Tuple;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** Organizations' stored agent secrets: sealed by {@link SecretBox} before they reach the database. */
public final class AgentSecretRepository {
  /** A stored secret's name and dates; its value is never read back for listing. */
  public record Entry(String name, OffsetDateTime createdAt, OffsetDateTime updatedAt) {}

  private final Pool pool;
  private final SecretBox box;

  public AgentSecretRepository(Pool pool, SecretBox box) {
    this.pool = pool;
    this.box = box;
  }

  /** Stores or replaces a secret; true when it was new. */
  public Future<Boolean> put(String organizationId, String name, Secret value, String keyId, OffsetDateTime now) {
    byte[] sealed = box.seal(organizationId, name, value.reveal());
    return pool.preparedQuery("INSERT INTO agent_secrets (organization_id, name, sealed, created_at, updated_at,"
            + " updated_by_api_key_id) VALUES ($1, $2, $3, $4, $4, $5) ON CONFLICT (organization_id, name) DO UPDATE"
            + " SET sealed = EXCLUDED.sealed, updated_at = EXCLUDED.updated_at,"
            + " updated_by_api_key_id = EXCLUDED.updated_by_api_key_id RETURNING (xmax = 0) AS inserted")
        .execute(Tuple.of(organizationId, name, Buffer.buffer(sealed), now, keyId))
        .map(rows -> rows.iterator().next().getBoolean("inserted"));
  }

  public Future<List<Entry>> list(String organizationId) {
    return pool.preparedQuery("SELECT name, created_at, updated_at FROM agent_secrets WHERE organization_id = $1"
            + " ORDER BY name").execute(Tuple.of(organizationId)).map(rows -> {
              List<Entry> out = new ArrayList<>();
              for (Row r : rows) {
                out.add(new Entry(r.getString("name"), r.getOffsetDateTime("created_at"),
                    r.getOffsetDateTime("updated_at")));
              }
              return out;
            });
  }

  /** Deletes a secret; false when there was none. */
  public Future<Boolean> delete(String organizationId, String name) {
    return pool.preparedQuery("DELETE FROM agent_secrets WHERE organization_id = $1 AND name = $2")
        .execute(Tuple.of(organizationId, name)).map(rows -> rows.rowCount() > 0);
  }

  /**
   * Every secret of the organization, opened, by name (values that do not open with this server's secret are
   * left out).
   */
  public Future<Map<String, Secret>> openAll(String organizationId) {
    return pool.preparedQuery("SELECT name, sealed FROM agent_secrets WHERE organization_id = $1 ORDER BY name")
        .execute(Tuple.of(organizationId)).map(rows -> {
          Map<String, Secret> out = new LinkedHashMap<>();
          for (Row r : rows) {
            String name = r.getString("name");
            box.open(organizationId, name, r.getBuffer("sealed").getBytes()).ifPresent(s -> out.put(name, s));
          }
          return out;
        });
  }
}
