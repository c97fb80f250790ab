package ai.bespokelabs.sandbox.gateway.sandbox;

import ai.bespokelabs.sandbox.core.Hmac;
import ai.bespokelabs.sandbox.core.Ids;
import ai.bespokelabs.sandbox.core.Times;
import ai.bespokelabs.sandbox.core.bus.BusFailures;
import ai.bespokelabs.sandbox.core.bus.Messages.CreateSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.SandboxCreated;
import ai.bespokelabs.sandbox.core.bus.Messages.SetTimeout;
import ai.bespokelabs.sandbox.core.bus.Messages.SnapshotSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.SnapshotTaken;
import ai.bespokelabs.sandbox.core.bus.RuntimeClient;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import ai.bespokelabs.sandbox.core.model.SandboxConfig;
import ai.bespokelabs.sandbox.core.model.SandboxRecord;
import ai.bespokelabs.sandbox.core.policy.PolicyDecision;
import ai.bespokelabs.sandbox.core.pricing.PricingCatalog;
import ai.bespokelabs.sandbox.core.repo.PolicyRepository;
import ai.bespokelabs.sandbox.core.repo.SandboxRepository;
import ai.bespokelabs.sandbox.core.repo.SandboxRepository.NewSandbox;
import ai.bespokelabs.sandbox.core.sandbox.Terminations;
import ai.bespokelabs.sandbox.gateway.auth.Principal;
import ai.bespokelabs.sandbox.gateway.http.CreateRequest;
import ai.bespokelabs.sandbox.gateway.http.PolicyHints;
import ai.bespokelabs.sandbox.gateway.placement.Placement;
import ai.bespokelabs.sandbox.gateway.placement.Placement.Candidate;
import ai.bespokelabs.sandbox.gateway.placement.Placements;
import ai.bespokelabs.sandbox.gateway.routing.Backends;
import ai.bespokelabs.sandbox.gateway.routing.ExecRoutes;
import ai.bespokelabs.sandbox.ledger.CostLedger;
import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import java.time.Clock;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The life of a sandbox, whoever asks: create (the claim with its policy check, the provider's create, the
 * record of its outcome, and the destroy of a sandbox made for a create that did not go through), adopt,
 * snapshot, new deadlines and termination ({@link Terminations}, the one way sandboxes end). The HTTP layer
 * parses and authorizes; this does the work.
 */
public final class SandboxService {
  private static final Logger LOG = LoggerFactory.getLogger(SandboxService.class);

  private final RuntimeClient runtime;
  private final Terminations terminations;
  private final Backends backends;
  private final Hmac hmac;
  private final PricingCatalog pricing;
  private final SandboxRepository sandboxes;
  private final PolicyRepository policies;
  private final CostLedger ledger;
  private final ExecRoutes routes;
  private final PolicyHints policyHints;
  private final Placements placements;
  private final Clock clock;

  public SandboxService(RuntimeClient runtime, Terminations terminations, Backends backends, Hmac hmac,
      PricingCatalog pricing, SandboxRepository sandboxes, PolicyRepository policies, CostLedger ledger,
      ExecRoutes routes, PolicyHints policyHints, Placements placements, Clock clock) {
    this.runtime = runtime;
    this.terminations = terminations;
    this.backends = backends;
    this.hmac = hmac;
    this.pricing = pricing;
    this.sandboxes = sandboxes;
    this.policies = policies;
    this.ledger = ledger;
    this.routes = routes;
    this.policyHints = policyHints;
    this.placements = placements;
    this.clock = clock;
  }

  /** Whether this node takes no new sandboxes of {@code backend} now (it is draining and they would live here). */
  public boolean refuses(String backend) {
    return backends.draining() && backends.isNodeBound(backend);
  }

  // ---- create ----------------------------------------------------------------------------------------

  /**
   * Creates a sandbox for {@code p}: claimed with the organization's policy (a denial is the contract's 403),
   * made by its backend, recorded running or failed. A request with an {@code idempotencyKey} seen before answers
   * with that request's sandbox.
   */
  public Future<SandboxRecord> create(Principal p, CreateRequest req, String idempotencyKey) {
    if (req.isAuto()) {
      return createAuto(p, req, idempotencyKey);
    }
    OffsetDateTime now = Times.now(clock);
    NewSandbox row = row(p, req, req.backend(), idempotencyKey, null, now);
    if (idempotencyKey == null && policyHints.unrestricted(p.organizationId())) {
      return createEarly(p, req, row);
    }
    return claim(p, row, now).compose(claim -> {
      if (claim.replay()) {
        return Future.succeededFuture(claim.sandbox());
      }
      SandboxRecord sbx = claim.sandbox();
      return provisioned(sbx, provision(sbx.id(), sbx.organizationId(), sbx.createToken(), req));
    });
  }

  /** The row a create inserts for {@code backend}, at the catalog's rate for it. */
  private NewSandbox row(Principal p, CreateRequest req, String backend, String idempotencyKey, JsonObject placement,
      OffsetDateTime now) {
    SandboxConfig config = req.config();
    return new NewSandbox(Ids.newId("sbx"), p.organizationId(), backend, config, idempotencyKey,
        hmac.hex(req.fingerprintInput()), Ids.newId("ctk"), backends.nodeId(), p.keyId(),
        pricing.hourlyRate(backend, config.cpu(), config.memoryMb()), pricing.source(),
        config.timeoutSecs() == null ? null : now.plusSeconds(config.timeoutSecs()), now, placement);
  }

  /**
   * Claims {@code row} under the organization's policy: a denial fails with the contract's 403; the claim is a
   * fresh row or the replay of an earlier request with the same key. Remembers whether the organization has
   * guardrails.
   */
  private Future<SandboxRepository.Claim> claim(Principal p, NewSandbox row, OffsetDateTime now) {
    SandboxConfig config = row.config();
    PolicyDecision.Request asked = new PolicyDecision.Request(row.backend(), config.gpu(), config.timeoutSecs());
    return sandboxes.claimCreation(row, asked, CostLedger::spend,
        () -> ledger.accrueForSpendLimits(p.organizationId(), now)).map(claim -> {
      if (claim.unrestricted()) {
        policyHints.rememberUnrestricted(p.organizationId());
      } else {
        policyHints.forget(p.organizationId());
      }
      if (claim.denial() != null) {
        throw new ApiException(403, claim.denial().detail());
      }
      return claim;
    });
  }

  /**
   * A create without an idempotency key for an organization this node saw without policy guardrails moments
   * ago: the provider is asked at once while the sandbox row is inserted, instead of after, which takes a
   * database round trip off every create. The insert still decides: when it finds a guardrail after all (a
   * policy set meanwhile), or fails, the provider's sandbox is destroyed once it exists and the create goes
   * the guarded way (or answers the failure). Nothing can be limited by an organization without guardrails,
   * and without a key there is no earlier request the insert could find instead.
   */
  private Future<SandboxRecord> createEarly(Principal p, CreateRequest req, NewSandbox row) {
    Future<SandboxCreated> made = provision(row.id(), row.organizationId(), row.createToken(), req);
    return sandboxes.claimIfUnrestricted(row).transform(claimed -> {
      if (claimed.succeeded() && claimed.result() != null) {
        policyHints.rememberUnrestricted(p.organizationId());
        return provisioned(claimed.result().sandbox(), made);
      }
      made.onSuccess(created -> undo(row.id(), req.backend(), created));
      if (claimed.failed()) {
        return Future.<SandboxRecord>failedFuture(claimed.cause());
      }
      policyHints.forget(p.organizationId());
      return create(p, req, null);
    });
  }

  /** Destroys a sandbox the provider made for a create whose row was never inserted (best effort). */
  private void undo(String sandboxId, String backend, SandboxCreated created) {
    terminations.discard(backend, created.nodeId(), sandboxId, created.providerResourceId())
        .onFailure(e -> LOG.warn("Sandbox {} of {} was created for a create that did not go through and could not"
            + " be destroyed; reconciliation will remove it", created.providerResourceId(), backend));
  }

  /** Asks the backend to make the sandbox. */
  private Future<SandboxCreated> provision(String sandboxId, String organizationId, String createToken,
      CreateRequest req) {
    return runtime.create(new CreateSandbox(sandboxId, organizationId, req.backend(), createToken, req.config(),
        req.workspace()));
  }

  /** Records the provider's answer for a claimed sandbox: running, or failed with the contract error. */
  private Future<SandboxRecord> provisioned(SandboxRecord sbx, Future<SandboxCreated> made) {
    return made.transform(ar -> {
      if (ar.succeeded()) {
        return sandboxes.completeCreation(sbx.id(), ar.result().providerResourceId(), ar.result().nodeId(),
            ar.result().quotedHourlyRateUsd(), Times.now(clock)).onSuccess(routes::remember);
      }
      RuntimeException failure = BusFailures.decode(ar.cause(), sbx.backend(), "create");
      return sandboxes.failCreation(sbx.id(), errorOf(failure, sbx.backend()), Times.now(clock))
          .compose(v -> Future.<SandboxRecord>failedFuture(failure));
    });
  }

  /** The contract error of a failed create: the provider's, or a configuration error for anything else. */
  private static ProviderError errorOf(RuntimeException failure, String backend) {
    return failure instanceof ProviderException pe ? pe.error()
        : ProviderError.of(ErrorCode.CONFIGURATION, backend, "create", false, ProviderError.Outcome.FAILED);
  }

  /** The backend a create without one gets: the organization's policy {@code default_backend}, or null. */
  public Future<String> defaultBackend(String organizationId) {
    return policies.current(organizationId).map(ai.bespokelabs.sandbox.core.model.Policy::defaultBackend);
  }

  // ---- backend auto ----------------------------------------------------------------------------------

  /**
   * Creates a {@code backend: "auto"} sandbox: the plan ({@link Placements}) ranks the backends that fit; the
   * sandbox is claimed once, on the first, and tried there. A create that fails with nothing allocated on a
   * backend that cannot serve now (a retryable failure, or its credentials or installation missing) moves the
   * same row to the next backend, each try an attempt of its own; an ambiguous one ({@code outcome: "unknown"})
   * never does: something may exist there, so it fails as a named backend's create would, cleanup included.
   * Every try and its reason is recorded in the sandbox's {@code placement}. A replay of the same idempotency key
   * answers the sandbox the first request made, wherever it was placed.
   */
  private Future<SandboxRecord> createAuto(Principal p, CreateRequest req, String idempotencyKey) {
    return placements.plan(p.organizationId(), req.requirements()).compose(planned -> {
      List<Candidate> plan = new ArrayList<>();
      for (Candidate c : planned) {
        plan.add(Candidate.NOT_TRIED.equals(c.status()) && refuses(c.backend())
            ? c.with(Candidate.REJECTED, "this gateway node is draining") : c);
      }
      List<String> order = plan.stream().filter(c -> Candidate.NOT_TRIED.equals(c.status())).map(Candidate::backend)
          .toList();
      if (order.isEmpty()) {
        return Future.failedFuture(noPlacement(plan));
      }
      OffsetDateTime now = Times.now(clock);
      NewSandbox row = row(p, req, order.get(0), idempotencyKey, Placement.record(null, plan), now);
      return claim(p, row, now).compose(claim -> claim.replay() ? Future.succeededFuture(claim.sandbox())
          : tryPlacing(claim.sandbox(), req, plan, order, 0));
    });
  }

  /** Tries {@code order[i]} for the claimed sandbox, failing over as {@link #createAuto} says. */
  private Future<SandboxRecord> tryPlacing(SandboxRecord sbx, CreateRequest req, List<Candidate> plan,
      List<String> order, int i) {
    String backend = order.get(i);
    return provision(sbx.id(), sbx.organizationId(), sbx.createToken(), req.on(backend)).transform(ar -> {
      if (ar.succeeded()) {
        List<Candidate> done = mark(plan, backend, Candidate.CHOSEN, null);
        return sandboxes.completeCreation(sbx.id(), ar.result().providerResourceId(), ar.result().nodeId(),
            ar.result().quotedHourlyRateUsd(), Placement.record(backend, done), Times.now(clock))
            .onSuccess(routes::remember);
      }
      RuntimeException failure = BusFailures.decode(ar.cause(), backend, "create");
      ProviderError error = errorOf(failure, backend);
      boolean onward = failsOver(error) && i + 1 < order.size();
      List<Candidate> tried = mark(plan, backend, Candidate.FAILED, failureReason(error, onward));
      if (!onward) {
        return sandboxes.failCreation(sbx.id(), error, Placement.record(null, tried), Times.now(clock))
            .compose(v -> Future.<SandboxRecord>failedFuture(failure));
      }
      String next = order.get(i + 1);
      LOG.info("Sandbox {}: creation on {} failed ({}), trying {}", sbx.id(), backend, error.code().wire(), next);
      return sandboxes.retarget(sbx.id(), error, next,
              pricing.hourlyRate(next, req.config().cpu(), req.config().memoryMb()), Placement.record(null, tried),
              Times.now(clock))
          .compose(moved -> moved.isEmpty() ? Future.<SandboxRecord>failedFuture(failure)
              : tryPlacing(moved.get(), req, tried, order, i + 1));
    });
  }

  /**
   * Whether a failed create may move on: nothing was allocated, and the backend cannot serve now (a retryable
   * refusal or outage, or missing credentials or installation) rather than the request being wrong everywhere.
   */
  static boolean failsOver(ProviderError e) {
    return e.outcome() == ProviderError.Outcome.FAILED && (e.retryable() || e.code() == ErrorCode.AUTHENTICATION
        || e.code() == ErrorCode.BACKEND_NOT_INSTALLED);
  }

  private static String failureReason(ProviderError e, boolean onward) {
    StringBuilder b = new StringBuilder("create failed: ").append(e.code().wire());
    if (e.context().get("provider_status") != null) {
      b.append(" (provider status ").append(e.context().get("provider_status")).append(')');
    }
    if (e.outcome() == ProviderError.Outcome.UNKNOWN) {
      b.append("; the outcome is unknown, so no other backend was tried");
    } else if (!onward && !failsOver(e)) {
      b.append("; not a failure another backend would avoid");
    }
    return b.toString();
  }

  private static List<Candidate> mark(List<Candidate> plan, String backend, String status, String reason) {
    List<Candidate> out = new ArrayList<>(plan.size());
    for (Candidate c : plan) {
      out.add(c.backend().equals(backend) ? c.with(status, reason) : c);
    }
    return out;
  }

  /** The 422 of a request no backend can take: every backend, with why. */
  static ApiException noPlacement(List<Candidate> plan) {
    StringBuilder b = new StringBuilder("no backend can take this sandbox");
    String sep = ": ";
    for (Candidate c : plan) {
      b.append(sep).append(c.backend()).append(" (").append(c.reason()).append(')');
      sep = "; ";
    }
    return ApiException.invalid(b.toString());
  }

  // ---- adopt, snapshot, deadline ----------------------------------------------------------------------

  /**
   * Attaches this node to the still-running provider resource {@code resource} of the organization's sandbox
   * {@code id} (from a verified session state): the backend checks the resource is there and is this sandbox's,
   * and the sandbox is served from this node from then on.
   */
  public Future<SandboxRecord> adopt(String organizationId, String id, String backend, String resource) {
    return sandboxes.find(organizationId, id).compose(found -> {
      SandboxRecord sbx = found.orElseThrow(() -> ApiException.notFound("sandbox not found"));
      if (!"running".equals(sbx.status()) || !resource.equals(sbx.providerResourceId())) {
        throw ApiException.conflict("sandbox is " + sbx.status());
      }
      CreateSandbox msg = new CreateSandbox(sbx.id(), organizationId, backend, sbx.createToken(), sbx.config());
      return runtime.adopt(msg, resource)
          .compose(created -> sandboxes.adopted(organizationId, id, created.nodeId(), Times.now(clock)))
          .onSuccess(v -> routes.forget(id))
          .map(updated -> updated.orElseThrow(() -> ApiException.conflict("sandbox is no longer running")));
    });
  }

  /** Snapshots a running sandbox where its backend can. */
  public Future<SnapshotTaken> snapshot(SandboxRecord sbx) {
    if (!"running".equals(sbx.status())) {
      throw ApiException.conflict("sandbox is " + sbx.status());
    }
    return runtime.snapshot(sbx.backend(), sbx.nodeId(),
        new SnapshotSandbox(sbx.id(), sbx.organizationId(), sbx.providerResourceId()));
  }

  /**
   * Sets a new deadline {@code secs} from now (shorter or longer) on the organization's sandbox {@code found}. The
   * organization's {@code max_sandbox_lifetime_secs} bounds the sandbox's whole life: a deadline past
   * {@code created_at} plus the limit is denied (403, recorded like a create's denial). Once the deadline is stored
   * the backend is told ({@link RuntimeClient#setTimeout}); if that fails the provider error is the answer and the
   * stored deadline stays.
   */
  public Future<SandboxRecord> setDeadline(Principal p, SandboxRecord found, int secs) {
    String id = found.id();
    return policies.current(p.organizationId()).compose(policy -> {
      OffsetDateTime now = Times.now(clock);
      OffsetDateTime deadline = now.plusSeconds(secs);
      Integer max = policy.maxSandboxLifetimeSecs();
      if (max != null && deadline.isAfter(found.createdAt().plusSeconds(max))) {
        Duration life = Duration.between(found.createdAt(), deadline);
        long lifeSecs = life.getSeconds() + (life.getNano() > 0 ? 1 : 0);
        PolicyDecision.Denial denial = new PolicyDecision.Denial("max_sandbox_lifetime_secs",
            "Requested sandbox lifetime exceeds organization policy.", lifeSecs, max);
        return policies.recordDenial(p.organizationId(), p.keyId(),
                new PolicyDecision.Request(found.backend(), null, secs), denial, now)
            .compose(v -> Future.<Optional<SandboxRecord>>failedFuture(new ApiException(403, denial.detail())));
      }
      return sandboxes.setDeadline(p.organizationId(), id, deadline, now);
    }).compose(updated -> {
      if (updated.isEmpty()) {
        return sandboxes.find(p.organizationId(), id).map(again -> {
          SandboxRecord sbx = again.orElseThrow(() -> ApiException.notFound("sandbox not found"));
          throw ApiException.conflict("sandbox is " + sbx.status());
        });
      }
      SandboxRecord sbx = updated.get();
      return runtime.setTimeout(sbx.backend(), sbx.nodeId(), new SetTimeout(sbx.id(), sbx.providerResourceId(), secs))
          .transform(ar -> ar.succeeded() || hostGone(sbx, ar.cause())
              ? Future.succeededFuture(sbx) : Future.failedFuture(ar.cause()));
    });
  }

  /**
   * A node-bound sandbox whose node no longer answers: its sandbox has no lifetime of its own to move (the
   * node-bound backends keep none), so the stored deadline is all there is.
   */
  private boolean hostGone(SandboxRecord sbx, Throwable t) {
    return backends.isNodeBound(sbx.backend()) && RuntimeClient.unreachable(t);
  }

  // ---- terminate -------------------------------------------------------------------------------------

  /**
   * Terminates the organization's sandbox {@code id} for the key of {@code p} ({@code expectedVersion}: the
   * version the caller saw, null for any): the sandbox as it is when it was already ending, else once its backend
   * destroyed it. A provider failure is recorded and answered as the provider's error.
   */
  public Future<SandboxRecord> terminate(Principal p, String id, Integer expectedVersion) {
    return sandboxes.beginTermination(p.organizationId(), id, expectedVersion, Times.now(clock)).compose(sbx -> {
      if (!"stopping".equals(sbx.status())) {
        return Future.succeededFuture(sbx);
      }
      routes.forget(id); // here at once; PostgreSQL tells the other nodes
      return terminations.terminate(new Terminations.Ending(sbx.id(), sbx.backend(), sbx.nodeId(),
          sbx.providerResourceId(), "operator"), p.keyId(), () -> Times.now(clock));
    });
  }
}
