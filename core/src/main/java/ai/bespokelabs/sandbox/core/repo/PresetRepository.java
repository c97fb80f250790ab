package ai.bespokelabs.sandbox.core.repo;

import ai.bespokelabs.sandbox.core.model.Preset;
import io.vertx.core.Future;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.pgclient.PgException;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.Tuple;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/** Organizations' own presets (the built-in ones are not stored). */
public final class PresetRepository {
  private final Pool pool;

  public PresetRepository(Pool pool) {
    this.pool = pool;
  }

  public Future<Optional<Preset>> find(String organizationId, String name) {
    return pool.preparedQuery("SELECT * FROM presets WHERE organization_id = $1 AND name = $2")
        .execute(Tuple.of(organizationId, name))
        .map(rows -> rows.size() == 0 ? Optional.empty() : Optional.of(from(rows.iterator().next())));
  }

  /** The organization's presets by name. */
  public Future<List<Preset>> list(String organizationId) {
    return pool.preparedQuery("SELECT * FROM presets WHERE organization_id = $1 ORDER BY name")
        .execute(Tuple.of(organizationId)).map(rows -> {
          List<Preset> out = new ArrayList<>();
          rows.forEach(r -> out.add(from(r)));
          return out;
        });
  }

  /** Stores a preset; false when the organization already has one of that name. */
  public Future<Boolean> insert(String organizationId, Preset p, String keyId, OffsetDateTime now) {
    JsonObject config = new JsonObject().put("cpu", p.cpu()).put("memory_mb", p.memoryMb())
        .put("timeout_secs", p.timeoutSecs()).put("image", p.image());
    return pool.preparedQuery("INSERT INTO presets (organization_id, name, description, config, setup_commands,"
            + " created_at, created_by_api_key_id) VALUES ($1, $2, $3, $4, $5, $6, $7)")
        .execute(Tuple.of(organizationId, p.name(), p.description(), config, new JsonArray(p.setup()), now, keyId))
        .map(true)
        .recover(t -> t instanceof PgException pg && "23505".equals(pg.getSqlState())
            ? Future.succeededFuture(false) : Future.failedFuture(t));
  }

  /** Deletes a preset; false when there was none. */
  public Future<Boolean> delete(String organizationId, String name) {
    return pool.preparedQuery("DELETE FROM presets WHERE organization_id = $1 AND name = $2")
        .execute(Tuple.of(organizationId, name)).map(rows -> rows.rowCount() > 0);
  }

  private static Preset from(Row r) {
    JsonObject c = (JsonObject) r.getJson("config");
    List<String> setup = new ArrayList<>();
    ((JsonArray) r.getJson("setup_commands")).forEach(o -> setup.add((String) o));
    Number cpu = c.getNumber("cpu");
    return new Preset(r.getString("name"), r.getString("description"), cpu == null ? null : cpu.doubleValue(),
        c.getInteger("memory_mb"), c.getInteger("timeout_secs"), c.getString("image"), setup, false);
  }
}
