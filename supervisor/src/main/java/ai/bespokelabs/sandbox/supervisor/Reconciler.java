package ai.bespokelabs.sandbox.supervisor;

import ai.bespokelabs.sandbox.core.bus.Messages.ListResources;
import ai.bespokelabs.sandbox.core.bus.Messages.Resource;
import ai.bespokelabs.sandbox.core.bus.Messages.ResourceList;
import ai.bespokelabs.sandbox.core.bus.RuntimeClient;
import ai.bespokelabs.sandbox.core.sandbox.Terminations;
import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError;
import ai.bespokelabs.sandbox.core.repo.ReconciliationRepository;
import ai.bespokelabs.sandbox.core.repo.ReconciliationRepository.Candidate;
import ai.bespokelabs.sandbox.core.repo.ReconciliationRepository.Change;
import ai.bespokelabs.sandbox.core.repo.ReconciliationRepository.Missing;
import ai.bespokelabs.sandbox.core.repo.ReconciliationRepository.Observed;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.HashMap;
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
  private final ReconciliationRepository repository;
  private final RuntimeClient runtime;
  private final Terminations terminations;

  /** @param terminations how orphans are destroyed */
  public Reconciler(Vertx vertx, ReconciliationRepository repository, RuntimeClient runtime,
      Terminations terminations) {
    this.vertx = vertx;
    this.repository = repository;
    this.runtime = runtime;
    this.terminations = terminations;
  }

  /**
   * Lists the resources of {@code backend} (a node-bound one's on {@code nodeId}), telling it the {@code known}
   * resource ids (a backend that cannot list looks these up); a failure is a partial outage, never a change.
   */
  Future<List<Resource>> list(String backend, String nodeId, List<String> known) {
    return runtime.list(backend, nodeId, new ListResources(known)).map(ResourceList::resources);
  }

  /**
   * Reconciles one organization's sandboxes of {@code backend} hosted by {@code nodeId} (null: any node)
   * against the provider's list. Only sandboxes that were running before {@code now} (taken before listing)
   * are judged, so one created meanwhile is never mistaken for missing. The listing is told the live resource
   * ids, read after {@code now}: a sandbox's resource id is stored as it starts running, so every sandbox
   * judged is among them.
   */
  public Future<Result> reconcile(String orgId, String backend, String nodeId, OffsetDateTime now) {
    return repository.liveResourceIds(backend, nodeId).compose(known -> list(backend, nodeId, known).transform(ar -> {
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
    }));
  }

  /**
   * One periodic pass over a backend: a single listing, applied to every organization with sandboxes there,
   * then orphan cleanup. A listing failure changes nothing.
   */
  public Future<Void> sweep(String backend, String nodeId, OffsetDateTime now, OffsetDateTime staleBefore) {
    return repository.liveResourceIds(backend, nodeId).compose(known -> list(backend, nodeId, known)
        .compose(resources -> repository.organizationsWithLiveSandboxes(backend, nodeId)
            .compose(orgs -> {
              Future<Void> chain = Future.succeededFuture();
              for (String org : orgs) {
                chain = chain.compose(v -> apply(org, backend, nodeId, resources, now).mapEmpty());
              }
              return chain;
            })
            .compose(v -> cleanOrphans(backend, nodeId, resources, now, staleBefore))))
        .mapEmpty();
  }

  private Future<Result> apply(String orgId, String backend, String nodeId, List<Resource> resources,
      OffsetDateTime now) {
    Map<String, Resource> byResource = new HashMap<>();
    resources.forEach(r -> byResource.put(r.resourceId(), r));
    int[] counts = new int[3];
    return repository.record(orgId, backend, nodeId, now, now, candidates -> {
      List<Change> changes = new ArrayList<>();
      for (Candidate c : candidates) {
        String rid = c.providerResourceId();
        boolean live = c.status().equals("creating") || c.status().equals("running") || c.status().equals("stopping");
        Resource seen = rid == null ? null : byResource.get(rid);
        if (!live) {
          if (seen != null) {
            counts[2]++;
          }
          continue;
        }
        if (rid == null || (seen == null && c.status().equals("stopping"))) {
          // a sandbox being terminated whose resource is gone is finished by its termination, not failed
          continue;
        }
        String obs = "obs:" + c.id() + ":" + now.toInstant().toEpochMilli();
        if (seen != null) {
          counts[0]++;
          changes.add(new Observed(c.id(), obs, seen.resourceId(), seen.status(), seen.providerCostUsd()));
        } else {
          counts[1]++;
          changes.add(new Missing(c.id(), obs, rid, ProviderError.of(ErrorCode.NOT_FOUND, backend, "reconcile",
              false, ProviderError.Outcome.FAILED)));
        }
      }
      return changes;
    }).map(v -> new Result(backend, "ok", counts[0], counts[1], counts[2]));
  }

  /**
   * Deletes the orphans among {@code resources}: resources whose sandbox is unknown or ended. Each is claimed
   * first (a row in {@code orphan_cleanups}), so several nodes never delete one twice and a confirmed deletion
   * is never repeated; a failed or stale claim is retried. A resource is judged twice, {@link #ORPHAN_RECHECK_MS}
   * apart, before it counts as an orphan. Completes with the number deleted.
   */
  public Future<Integer> cleanOrphans(String backend, String nodeId, List<Resource> resources, OffsetDateTime now,
      OffsetDateTime staleBefore) {
    return notLive(resources).compose(first -> {
      if (first.isEmpty()) {
        return Future.succeededFuture(0);
      }
      // a create may ask the provider while its row is being inserted: judge again once such a row would be there
      return vertx.timer(ORPHAN_RECHECK_MS).compose(t -> notLive(first)).compose(orphans -> {
        Future<Integer> chain = Future.succeededFuture(0);
        for (Resource r : orphans) {
          chain = chain.compose(n -> cleanOne(backend, nodeId, r, now, staleBefore)
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
    return repository.live(sandboxIds)
        .map(live -> resources.stream().filter(r -> !live.contains(r.sandboxId())).toList());
  }

  private Future<Boolean> cleanOne(String backend, String nodeId, Resource r, OffsetDateTime now,
      OffsetDateTime staleBefore) {
    // a node-independent backend's resources belong to no node: recorded as "*"
    return repository.claimOrphan(backend, r.resourceId(), nodeId == null ? ANY_NODE : nodeId, now, staleBefore)
        .compose(claimed -> {
          if (!claimed) {
            return Future.succeededFuture(false);
          }
          return terminations.discard(backend, nodeId, r.sandboxId(), r.resourceId())
              .transform(ar -> repository.orphanCleaned(backend, r.resourceId(), ar.succeeded(), now)
                  .map(ar.succeeded()));
        });
  }
}
