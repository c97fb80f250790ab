package ai.bespokelabs.sandbox.supervisor;

import ai.bespokelabs.sandbox.core.Ids;
import ai.bespokelabs.sandbox.core.bus.Addresses;
import ai.bespokelabs.sandbox.core.bus.Messages.DestroySandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.Resource;
import ai.bespokelabs.sandbox.core.bus.Messages.ResourceList;
import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError;
import ai.bespokelabs.sandbox.core.repo.LifecycleEvents;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.core.eventbus.Message;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.Tuple;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Compares what a provider lists with the database. For an organization: live sandboxes the provider still
 * has get an observation (and the provider's cost, through the ledger); live sandboxes it no longer has
 * become {@code failed} with {@code provider_missing}. Across the deployment: resources carrying our marks
 * whose sandbox is unknown or already ended are orphans, deleted through durable, idempotent claims.
 */
public final class Reconciler {
  static final long LIST_TIMEOUT_MS = 60_000;
  static final long DESTROY_TIMEOUT_MS = 5 * 60_000L;
  /** The {@code orphan_cleanups.node_id} of a node-independent backend's resource. */
  static final String ANY_NODE = "*";
  private static final Set<String> STATUSES = Set.of("provisioning", "running", "stopping", "terminated", "failed");

  /** The outcome of one reconciliation run. */
  public record Result(String backend, String status, int updated, int missing, int orphans) {
    public JsonObject toJson() {
      return new JsonObject().put("backend", backend).put("status", status).put("updated", updated)
          .put("missing", missing).put("orphans", orphans);
    }
  }

  /**
   * How long after finding a resource without a live sandbox it is looked up again before it is deleted: a
   * create may ask the provider while its sandbox row is still being inserted.
   */
  static final long ORPHAN_RECHECK_MS = 2_000;

  private final Vertx vertx;
  private final Pool pool;

  public Reconciler(Vertx vertx, Pool pool) {
    this.vertx = vertx;
    this.pool = pool;
  }

  /** Lists the provider's resources at {@code listAddress}; a failure is a partial outage, never a change. */
  Future<List<Resource>> list(String listAddress) {
    return vertx.eventBus().<ResourceList>request(listAddress, null,
            new DeliveryOptions().addHeader(Addresses.ACTION, Addresses.LIST).setSendTimeout(LIST_TIMEOUT_MS))
        .map(Message::body)
        .map(ResourceList::resources);
  }

  /**
   * Reconciles one organization's sandboxes of {@code backend} hosted by {@code nodeId} (null: any node)
   * against the provider's list. Only sandboxes that were running before {@code now} (taken before listing)
   * are judged, so one created meanwhile is never mistaken for missing.
   */
  public Future<Result> reconcile(String orgId, String backend, String nodeId, String listAddress,
      OffsetDateTime now) {
    return list(listAddress).transform(ar -> {
      if (ar.failed()) {
        return Future.succeededFuture(new Result(backend, "partial_outage", 0, 0, 0));
      }
      for (Resource r : ar.result()) {
        if (!STATUSES.contains(r.status())) {
          return Future.failedFuture(
              ai.bespokelabs.sandbox.core.error.ApiException.invalid("unsupported provider lifecycle status: " + r.status()));
        }
      }
      return apply(orgId, backend, nodeId, ar.result(), now);
    });
  }

  /**
   * One periodic pass over a backend: a single listing, applied to every organization with sandboxes there,
   * then orphan cleanup. A listing failure changes nothing.
   */
  public Future<Void> sweep(String backend, String nodeId, String listAddress, String destroyAddress,
      OffsetDateTime now, OffsetDateTime staleBefore) {
    return list(listAddress).compose(resources -> pool.preparedQuery("SELECT DISTINCT organization_id FROM sandboxes"
            + " WHERE backend = $1 AND ($2::text IS NULL OR node_id = $2) AND status IN ('creating', 'running', 'stopping')"
            + " AND provider_resource_id IS NOT NULL")
        .execute(Tuple.of(backend, nodeId))
        .compose(orgs -> {
          Future<Void> chain = Future.succeededFuture();
          for (Row r : orgs) {
            String org = r.getString(0);
            chain = chain.compose(v -> apply(org, backend, nodeId, resources, now).mapEmpty());
          }
          return chain;
        })
        .compose(v -> cleanOrphans(backend, nodeId, resources, destroyAddress, now, staleBefore))
        .mapEmpty());
  }

  private Future<Result> apply(String orgId, String backend, String nodeId, List<Resource> resources,
      OffsetDateTime now) {
    Map<String, Resource> byResource = new HashMap<>();
    resources.forEach(r -> byResource.put(r.resourceId(), r));
    return pool.withTransaction(conn -> conn.preparedQuery("""
            SELECT id, status, provider_resource_id FROM sandboxes
            WHERE organization_id = $1 AND backend = $2 AND ($3::text IS NULL OR node_id = $3)
              AND (status IN ('creating', 'running', 'stopping')
                   OR (status IN ('destroyed', 'failed') AND provider_resource_id IS NOT NULL))
              AND COALESCE(running_at, created_at) < $4
            FOR UPDATE""")
        .execute(Tuple.of(orgId, backend, nodeId, now))
        .compose(rows -> {
          int[] counts = new int[3];
          Future<Void> chain = Future.succeededFuture();
          for (Row r : rows) {
            String id = r.getString("id");
            String status = r.getString("status");
            String rid = r.getString("provider_resource_id");
            boolean live = status.equals("creating") || status.equals("running") || status.equals("stopping");
            Resource seen = rid == null ? null : byResource.get(rid);
            if (!live) {
              if (seen != null) {
                counts[2]++;
              }
              continue;
            }
            if (rid == null || (seen == null && status.equals("stopping"))) {
              // a sandbox being terminated whose resource is gone is finished by its termination, not failed
              continue;
            }
            String obs = "obs:" + id + ":" + now.toInstant().toEpochMilli();
            if (seen != null) {
              counts[0]++;
              chain = chain.compose(v -> observe(conn, orgId, id, obs, seen, now));
            } else {
              counts[1]++;
              chain = chain.compose(v -> missing(conn, orgId, id, rid, obs, now, backend));
            }
          }
          return chain.map(v -> new Result(backend, "ok", counts[0], counts[1], counts[2]));
        }));
  }

  private static Future<Void> observe(io.vertx.sqlclient.SqlConnection conn, String orgId, String id, String obs,
      Resource seen, OffsetDateTime now) {
    return conn.preparedQuery("INSERT INTO provider_observations (id, organization_id, sandbox_id, observation_id,"
            + " provider_resource_id, status, observed_at, provider_cost_usd) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"
            + " ON CONFLICT DO NOTHING")
        .execute(Tuple.of(Ids.newId("obs"), orgId, id, obs, seen.resourceId(), seen.status()).addValue(now)
            .addValue(seen.providerCostUsd()))
        .compose(r -> conn.preparedQuery("UPDATE sandboxes SET last_provider_observed_at = $2, version = version + 1"
                + " WHERE id = $1").execute(Tuple.of(id, now)))
        .compose(r -> LifecycleEvents.append(conn, orgId, id, null, "sandbox.observed", seen.status(), now,
            new JsonObject().put("observation_id", obs).put("provider_cost_usd",
                seen.providerCostUsd() == null ? null : seen.providerCostUsd().toPlainString())));
  }

  private static Future<Void> missing(io.vertx.sqlclient.SqlConnection conn, String orgId, String id, String rid,
      String obs, OffsetDateTime now, String backend) {
    ProviderError error = ProviderError.of(ErrorCode.NOT_FOUND, backend, "reconcile", false,
        ProviderError.Outcome.FAILED);
    return conn.preparedQuery("INSERT INTO provider_observations (id, organization_id, sandbox_id, observation_id,"
            + " provider_resource_id, status, observed_at, missing) VALUES ($1, $2, $3, $4, $5, 'failed', $6, true)"
            + " ON CONFLICT DO NOTHING")
        .execute(Tuple.of(Ids.newId("obs"), orgId, id, obs, rid, now))
        .compose(r -> conn.preparedQuery("""
                UPDATE sandboxes SET status = 'failed', failed_at = $2, provider_missing = true,
                  last_provider_observed_at = $2, latest_error = $3, retry_status = 'not_retryable',
                  error = 'Sandbox operation failed.', version = version + 1
                WHERE id = $1""").execute(Tuple.of(id, now, error.toJson())))
        .compose(r -> LifecycleEvents.append(conn, orgId, id, null, "sandbox.failed", "failed", now,
            new JsonObject().put("code", "not_found").put("op", "reconcile").put("observation_id", obs)));
  }

  /**
   * Deletes the orphans among {@code resources}: resources whose sandbox is unknown or ended. Each is claimed
   * first (a row in {@code orphan_cleanups}), so several nodes never delete one twice and a confirmed deletion
   * is never repeated; a failed or stale claim is retried. A resource is judged twice, {@link #ORPHAN_RECHECK_MS}
   * apart, before it counts as an orphan. Completes with the number deleted.
   */
  public Future<Integer> cleanOrphans(String backend, String nodeId, List<Resource> resources, String destroyAddress,
      OffsetDateTime now, OffsetDateTime staleBefore) {
    return notLive(resources).compose(first -> {
      if (first.isEmpty()) {
        return Future.succeededFuture(0);
      }
      // a create may ask the provider while its row is being inserted: judge again once such a row would be there
      return vertx.timer(ORPHAN_RECHECK_MS).compose(t -> notLive(first)).compose(orphans -> {
        Future<Integer> chain = Future.succeededFuture(0);
        for (Resource r : orphans) {
          chain = chain.compose(n -> cleanOne(backend, nodeId, r, destroyAddress, now, staleBefore)
              .map(deleted -> deleted ? n + 1 : n));
        }
        return chain;
      });
    });
  }

  /** The resources whose sandbox is unknown or ended. */
  private Future<List<Resource>> notLive(List<Resource> resources) {
    if (resources.isEmpty()) {
      return Future.succeededFuture(List.of());
    }
    List<String> sandboxIds = new ArrayList<>();
    resources.forEach(r -> sandboxIds.add(r.sandboxId()));
    return pool.preparedQuery("SELECT id FROM sandboxes WHERE id = ANY($1) AND status IN ('creating', 'running',"
            + " 'stopping')")
        .execute(Tuple.tuple().addArrayOfString(sandboxIds.toArray(String[]::new)))
        .map(rows -> {
          Set<String> live = new HashSet<>();
          rows.forEach(r -> live.add(r.getString(0)));
          return resources.stream().filter(r -> !live.contains(r.sandboxId())).toList();
        });
  }

  private Future<Boolean> cleanOne(String backend, String nodeId, Resource r, String destroyAddress,
      OffsetDateTime now, OffsetDateTime staleBefore) {
    return pool.preparedQuery("""
            INSERT INTO orphan_cleanups (backend, provider_resource_id, node_id, status, observed_at, claimed_at)
            VALUES ($1, $2, $3, 'claimed', $4, $4)
            ON CONFLICT (backend, provider_resource_id) DO UPDATE SET status = 'claimed', claimed_at = $4
            WHERE orphan_cleanups.status = 'failed'
               OR (orphan_cleanups.status = 'claimed' AND orphan_cleanups.claimed_at < $5)
               OR orphan_cleanups.status = 'deleted'
            RETURNING provider_resource_id""")
        // a node-independent backend's resources belong to no node: recorded as "*"
        .execute(Tuple.of(backend, r.resourceId(), nodeId == null ? ANY_NODE : nodeId, now, staleBefore))
        .compose(claimed -> {
          if (claimed.size() == 0) {
            return Future.succeededFuture(false);
          }
          return vertx.eventBus().request(destroyAddress, new DestroySandbox(r.sandboxId(), r.resourceId()),
                  new DeliveryOptions().addHeader(Addresses.ACTION, Addresses.DESTROY).setSendTimeout(DESTROY_TIMEOUT_MS))
              .transform(ar -> pool.preparedQuery("UPDATE orphan_cleanups SET status = $3, completed_at = $4"
                      + " WHERE backend = $1 AND provider_resource_id = $2")
                  .execute(Tuple.of(backend, r.resourceId(), ar.succeeded() ? "deleted" : "failed", now))
                  .map(ar.succeeded()));
        });
  }
}
