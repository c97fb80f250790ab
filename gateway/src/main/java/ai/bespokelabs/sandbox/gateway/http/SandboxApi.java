package ai.bespokelabs.sandbox.gateway.http;

import ai.bespokelabs.sandbox.core.repo.SandboxHistoryRepository;
import ai.bespokelabs.sandbox.core.Hmac;
import ai.bespokelabs.sandbox.core.Ids;
import ai.bespokelabs.sandbox.core.Times;
import ai.bespokelabs.sandbox.core.bus.BusFailures;
import ai.bespokelabs.sandbox.core.bus.RuntimeClient;
import ai.bespokelabs.sandbox.core.bus.Messages.CreateSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.DestroySandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.SandboxCreated;
import ai.bespokelabs.sandbox.core.bus.Messages.SetTimeout;
import ai.bespokelabs.sandbox.core.config.GatewayConfig;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.error.ProviderError;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import ai.bespokelabs.sandbox.core.model.SandboxConfig;
import ai.bespokelabs.sandbox.core.model.SandboxRecord;
import ai.bespokelabs.sandbox.core.policy.PolicyDecision;
import ai.bespokelabs.sandbox.core.pricing.PricingCatalog;
import ai.bespokelabs.sandbox.core.repo.ExecutionRepository;
import ai.bespokelabs.sandbox.core.repo.PolicyRepository;
import ai.bespokelabs.sandbox.core.repo.SandboxRepository.NewSandbox;
import ai.bespokelabs.sandbox.core.repo.SandboxRepository;
import ai.bespokelabs.sandbox.gateway.routing.Backends;
import ai.bespokelabs.sandbox.gateway.routing.ExecRoutes;
import ai.bespokelabs.sandbox.gateway.http.PolicyHints;
import ai.bespokelabs.sandbox.gateway.auth.Principal;
import ai.bespokelabs.sandbox.gateway.auth.Scopes;
import ai.bespokelabs.sandbox.ledger.CostLedger;
import io.vertx.core.Future;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.OffsetDateTime;
import java.util.Base64;
import java.util.List;

/** The seed's sandbox API: create, list, get, detail, execute and terminate. */
public final class SandboxApi implements Endpoints {
  private static final int MAX_EXECUTIONS_IN_DETAIL = 200;

  private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(SandboxApi.class);
  private final RuntimeClient runtime;
  private final GatewayConfig config;
  private final Backends backends;
  private final Hmac hmac;
  private final PricingCatalog pricing;
  private final SandboxRepository sandboxes;
  private final SandboxHistoryRepository history;
  private final ExecutionRepository executions;
  private final PolicyRepository policies;
  private final CostLedger ledger;
  private final ExecRoutes routes;
  private final PolicyHints policyHints;
  private final Presets presets;
  private final Clock clock;

  public SandboxApi(RuntimeClient runtime, GatewayConfig config, Backends backends, Hmac hmac, PricingCatalog pricing,
      SandboxRepository sandboxes, SandboxHistoryRepository history, ExecutionRepository executions,
      PolicyRepository policies, CostLedger ledger, ExecRoutes routes, PolicyHints policyHints, Presets presets,
      Clock clock) {
    this.runtime = runtime;
    this.config = config;
    this.backends = backends;
    this.hmac = hmac;
    this.pricing = pricing;
    this.sandboxes = sandboxes;
    this.history = history;
    this.executions = executions;
    this.policies = policies;
    this.ledger = ledger;
    this.routes = routes;
    this.policyHints = policyHints;
    this.presets = presets;
    this.clock = clock;
  }

  public void register(Api api) {
    api.authed(HttpMethod.POST, "/v1/sandboxes", Scopes.SANDBOXES_CREATE, this::create);
    api.authed(HttpMethod.GET, "/v1/sandboxes", Scopes.SANDBOXES_READ, this::list);
    api.authed(HttpMethod.GET, "/v1/sandboxes/{sandbox_id}", Scopes.SANDBOXES_READ, this::get);
    api.authed(HttpMethod.GET, "/v1/sandboxes/{sandbox_id}/detail", Scopes.SANDBOXES_READ, this::detail);
    api.authed(HttpMethod.DELETE, "/v1/sandboxes/{sandbox_id}", Scopes.SANDBOXES_TERMINATE, this::terminate);
    api.authed(HttpMethod.POST, "/v1/sandboxes/{sandbox_id}/timeout", Scopes.SANDBOXES_CREATE, this::timeout);
    api.authed(HttpMethod.POST, "/v1/sandboxes/{sandbox_id}/snapshot", Scopes.SANDBOXES_CREATE, this::snapshot);
    presets.register(api);
    api.authed(HttpMethod.GET, "/v1/sandboxes/{sandbox_id}/session-state", Scopes.SANDBOXES_READ, this::sessionState);
    api.authed(HttpMethod.POST, "/v1/sandboxes/adopt", Scopes.SANDBOXES_CREATE, this::adopt);
  }

  // ---- session state and adopt ----------------------------------------------------------------------

  private static final String STATE_VERSION = "1";

  /** The signed fields of a session-state handle, in a fixed order. */
  private String stateSignature(String sandboxId, String organizationId, String backend, String resourceId,
      String issuedAt) {
    return hmac.hex(String.join("\n", "session-state", STATE_VERSION, sandboxId, organizationId, backend,
        resourceId == null ? "" : resourceId, issuedAt));
  }

  /**
   * A serializable handle to a running sandbox (the remote form of the seed's resume state): give it to
   * {@code POST /v1/sandboxes/adopt} to attach a gateway node to the sandbox's provider resource again, e.g.
   * after a restart. Signed with the server's pepper, so it cannot be forged or moved between organizations.
   */
  private Future<Reply> sessionState(RoutingContext ctx, Principal p) {
    return find(ctx, p).map(sbx -> {
      if (sbx.providerResourceId() == null) {
        throw ApiException.conflict("sandbox is " + sbx.status());
      }
      String issued = Wire.ts(Times.now(clock));
      return Reply.ok(new JsonObject().put("version", STATE_VERSION).put("sandbox_id", sbx.id())
          .put("organization_id", sbx.organizationId()).put("backend", sbx.backend())
          .put("provider_resource_id", sbx.providerResourceId()).put("issued_at", issued)
          .put("signature", stateSignature(sbx.id(), sbx.organizationId(), sbx.backend(), sbx.providerResourceId(),
              issued)));
    });
  }

  /**
   * Attaches this node to the still-running provider resource of a handle from {@code session-state}: the
   * backend checks the resource is there and is this sandbox's, and the sandbox is served from this node
   * from then on. The sandbox must be running and the caller's organization's.
   */
  private Future<Reply> adopt(RoutingContext ctx, Principal p) {
    Body body = Body.parse(Api.body(ctx));
    String version = body.string("version", true, 1, 8);
    String id = body.string("sandbox_id", true, 1, 64);
    String org = body.string("organization_id", true, 1, 64);
    String backend = body.string("backend", true, 1, 64);
    String resource = body.string("provider_resource_id", true, 1, 4096);
    String issued = body.string("issued_at", true, 1, 64);
    String signature = body.string("signature", true, 1, 128);
    body.check();
    if (!STATE_VERSION.equals(version) || !ai.bespokelabs.sandbox.core.Hmac.constantTimeEquals(signature,
        stateSignature(id, org, backend, resource, issued))) {
      throw ApiException.invalid("invalid session state");
    }
    if (!org.equals(p.organizationId())) {
      throw ApiException.notFound("sandbox not found");
    }
    if (!backends.isEnabled(backend)) {
      throw ApiException.invalid("backend is not enabled: " + backend);
    }
    return sandboxes.find(org, id).compose(found -> {
      SandboxRecord sbx = found.orElseThrow(() -> ApiException.notFound("sandbox not found"));
      if (!"running".equals(sbx.status()) || !resource.equals(sbx.providerResourceId())) {
        throw ApiException.conflict("sandbox is " + sbx.status());
      }
      CreateSandbox msg = new CreateSandbox(sbx.id(), org, backend, sbx.createToken(), sbx.config());
      return runtime.adopt(msg, resource)
          .compose(created -> sandboxes.adopted(org, id, created.nodeId(), Times.now(clock))
                  .onSuccess(v -> routes.forget(id)).map(updated -> reply(200,
                  updated.orElseThrow(() -> ApiException.conflict("sandbox is no longer running")))));
    });
  }

  // ---- snapshot --------------------------------------------------------------------------------------

  /** Snapshots a running sandbox where its backend can; create with the answered {@code snapshot_id}. */
  private Future<Reply> snapshot(RoutingContext ctx, Principal p) {
    return find(ctx, p).compose(sbx -> {
      if (!"running".equals(sbx.status())) {
        throw ApiException.conflict("sandbox is " + sbx.status());
      }
      var msg = new ai.bespokelabs.sandbox.core.bus.Messages.SnapshotSandbox(sbx.id(), sbx.organizationId(),
          sbx.providerResourceId());
      return runtime.snapshot(sbx.backend(), sbx.nodeId(), msg)
          .map(taken -> Reply.of(201, new JsonObject().put("snapshot_id", taken.snapshotId())
                  .put("sandbox_id", sbx.id()).put("backend", sbx.backend()).put("created_at", Wire.ts(Times.now(clock)))));
    });
  }

  // ---- create ----------------------------------------------------------------------------------------

  private Future<Reply> create(RoutingContext ctx, Principal p) {
    return create(p, Api.body(ctx), idempotencyKey(ctx));
  }

  /** A create as {@code POST /v1/sandboxes} does it, for callers that are not an HTTP request (MCP tools). */
  public Future<Reply> create(Principal p, io.vertx.core.buffer.Buffer body, String idempotencyKey) {
    CreateRequest parsed = CreateRequest.parse(Body.parse(body), backends,
        config.execution().gitAllowFileUrls(), config.execution().gitAllowPrivate());
    if (parsed.config().preset() == null) {
      return create(p, parsed, idempotencyKey);
    }
    return presets.resolve(p.organizationId(), parsed.config().preset())
        .compose(preset -> create(p, parsed.withPreset(preset), idempotencyKey));
  }

  private Future<Reply> create(Principal p, CreateRequest req, String idempotencyKey) {
    if (backends.draining() && backends.isNodeBound(req.backend())) { // an answer, not a failure: nothing broke
      return Future.succeededFuture(Reply.of(503, new JsonObject().put("detail", "this gateway node is draining and"
          + " takes no new " + req.backend() + " sandboxes; retry (another node takes it)")).withHeader("Retry-After", "1"));
    }
    OffsetDateTime now = Times.now(clock);
    SandboxConfig config = req.config();
    NewSandbox row = new NewSandbox(Ids.newId("sbx"), p.organizationId(), req.backend(), config,
        idempotencyKey, hmac.hex(req.fingerprintInput()), Ids.newId("ctk"), backends.nodeId(), p.keyId(),
        pricing.hourlyRate(req.backend(), config.cpu(), config.memoryMb()), pricing.source(),
        config.timeoutSecs() == null ? null : now.plusSeconds(config.timeoutSecs()), now);
    if (idempotencyKey == null && policyHints.unrestricted(p.organizationId())) {
      return createEarly(p, req, row);
    }
    PolicyDecision.Request asked = new PolicyDecision.Request(req.backend(), config.gpu(), config.timeoutSecs());
    return sandboxes.claimCreation(row, asked, CostLedger::spend,
        () -> ledger.accrueForSpendLimits(p.organizationId(), now)).compose(claim -> {
      if (claim.unrestricted()) {
        policyHints.rememberUnrestricted(p.organizationId());
      } else {
        policyHints.forget(p.organizationId());
      }
      if (claim.denial() != null) {
        throw new ApiException(403, claim.denial().detail());
      }
      if (claim.replay()) {
        return Future.succeededFuture(reply(201, claim.sandbox()));
      }
      SandboxRecord sbx = claim.sandbox();
      return provisioned(sbx, provision(sbx.id(), sbx.organizationId(), sbx.backend(), sbx.createToken(), req));
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
  private Future<Reply> createEarly(Principal p, CreateRequest req, NewSandbox row) {
    Future<SandboxCreated> made = provision(row.id(), row.organizationId(), req.backend(), row.createToken(), req);
    return sandboxes.claimIfUnrestricted(row).transform(claimed -> {
      if (claimed.succeeded() && claimed.result() != null) {
        policyHints.rememberUnrestricted(p.organizationId());
        return provisioned(claimed.result().sandbox(), made);
      }
      made.onSuccess(created -> undo(row.id(), req.backend(), created));
      if (claimed.failed()) {
        return Future.<Reply>failedFuture(claimed.cause());
      }
      policyHints.forget(p.organizationId());
      return create(p, req, null);
    });
  }

  /** Destroys a sandbox the provider made for a create whose row was never inserted (best effort). */
  private void undo(String sandboxId, String backend, SandboxCreated created) {
    runtime.destroy(backend, created.nodeId(), new DestroySandbox(sandboxId, created.providerResourceId()))
        .onFailure(e -> LOG.warn("Sandbox {} of {} was created for a create that did not go through and could not"
            + " be destroyed; reconciliation will remove it", created.providerResourceId(), backend));
  }

  /** Asks the backend to make the sandbox. */
  private Future<SandboxCreated> provision(String sandboxId, String organizationId, String backend, String createToken,
      CreateRequest req) {
    CreateSandbox msg = new CreateSandbox(sandboxId, organizationId, backend, createToken, req.config(),
        req.workspace());
    return runtime.create(msg);
  }

  /** Records the provider's answer for a claimed sandbox: running, or failed with the contract error. */
  private Future<Reply> provisioned(SandboxRecord sbx, Future<SandboxCreated> made) {
    return made.transform(ar -> {
      if (ar.succeeded()) {
        return sandboxes.completeCreation(sbx.id(), ar.result().providerResourceId(), ar.result().nodeId(),
            ar.result().quotedHourlyRateUsd(), Times.now(clock)).map(done -> {
              routes.remember(done);
              return reply(201, done);
            });
      }
      RuntimeException failure = BusFailures.decode(ar.cause(), sbx.backend(), "create"); // decoded already
      ProviderError error = failure instanceof ProviderException pe ? pe.error()
          : ProviderError.of(ai.bespokelabs.sandbox.core.error.ErrorCode.CONFIGURATION, sbx.backend(), "create",
              false, ProviderError.Outcome.FAILED);
      return sandboxes.failCreation(sbx.id(), error, Times.now(clock)).compose(v -> Future.failedFuture(failure));
    });
  }

  // ---- read ------------------------------------------------------------------------------------------

  private Future<Reply> list(RoutingContext ctx, Principal p) {
    String limitRaw = ctx.queryParams().get("limit");
    String cursor = ctx.queryParams().get("cursor");
    int limit = 0;
    if (limitRaw != null) {
      try {
        limit = Integer.parseInt(limitRaw);
      } catch (NumberFormatException e) {
        limit = -1;
      }
      if (limit < 1 || limit > 1000) {
        throw ApiException.invalid("limit must be between 1 and 1000");
      }
    }
    OffsetDateTime afterTs = null;
    String afterId = null;
    if (cursor != null && !cursor.isEmpty()) {
      try {
        String[] parts = new String(Base64.getUrlDecoder().decode(cursor), StandardCharsets.UTF_8).split("\\|", 2);
        afterTs = OffsetDateTime.parse(parts[0]);
        afterId = parts[1];
      } catch (RuntimeException e) {
        throw ApiException.invalid("invalid pagination cursor");
      }
    }
    SandboxRepository.ListFilter filter = SandboxFilters.parse(ctx.queryParams());
    int pageSize = limit;
    return sandboxes.list(p.organizationId(), limit == 0 ? 0 : limit + 1, afterTs, afterId, filter).map(rows -> {
      if (pageSize > 0 && rows.size() > pageSize) {
        List<SandboxRecord> page = rows.subList(0, pageSize);
        SandboxRecord last = page.get(page.size() - 1);
        String next = Base64.getUrlEncoder().withoutPadding().encodeToString(
            (last.createdAt().toString() + "|" + last.id()).getBytes(StandardCharsets.UTF_8));
        return Reply.ok(Wire.sandboxes(page)).withHeader("X-Next-Cursor", next);
      }
      return Reply.ok(Wire.sandboxes(rows));
    });
  }

  private Future<Reply> get(RoutingContext ctx, Principal p) {
    return find(ctx, p).map(sbx -> reply(200, sbx));
  }

  private Future<Reply> detail(RoutingContext ctx, Principal p) {
    return find(ctx, p).compose(sbx -> ledger.accrue(p.organizationId(), Times.now(clock)).compose(v -> Future.all(
            history.attempts(sbx.id()), executions.list(sbx.id(), MAX_EXECUTIONS_IN_DETAIL),
            ledger.lifecycleCost(sbx.id()), history.observations(sbx.id())))
        .map(all -> {
          JsonArray attempts = new JsonArray();
          all.<List<ai.bespokelabs.sandbox.core.model.AttemptRecord>>resultAt(0).forEach(a -> attempts.add(Wire.attempt(a)));
          JsonArray executions = new JsonArray();
          all.<List<ai.bespokelabs.sandbox.core.model.ExecutionRecord>>resultAt(1)
              .forEach(e -> executions.add(Wire.execution(e)));
          return Reply.ok(new JsonObject()
              .put("sandbox", Wire.sandbox(sbx))
              .put("attempts", attempts)
              .put("executions", executions)
              .put("cost", all.<java.util.Optional<JsonObject>>resultAt(2).orElse(null))
              .put("provider_observations", new JsonArray(all.<List<SandboxHistoryRepository.Observation>>resultAt(3)
                  .stream().map(Wire::observation).toList())));
        }));
  }

  private Future<SandboxRecord> find(RoutingContext ctx, Principal p) {
    String id = Api.idParam(ctx, "sandbox_id", "sbx", "sandbox not found");
    return sandboxes.find(p.organizationId(), id)
        .map(o -> o.orElseThrow(() -> ApiException.notFound("sandbox not found")));
  }

  // ---- terminate -------------------------------------------------------------------------------------

  private Future<Reply> terminate(RoutingContext ctx, Principal p) {
    String id = Api.idParam(ctx, "sandbox_id", "sbx", "sandbox not found");
    return terminate(p, id, ifMatch(ctx.request().getHeader("If-Match")));
  }

  /**
   * A terminate as {@code DELETE /v1/sandboxes/{id}} does it ({@code expected}: the If-Match version, or null),
   * for callers that are not an HTTP request (MCP tools).
   */
  public Future<Reply> terminate(Principal p, String id, Integer expected) {
    return sandboxes.beginTermination(p.organizationId(), id, expected, Times.now(clock)).compose(sbx -> {
      if (!"stopping".equals(sbx.status())) {
        return Future.succeededFuture(reply(200, sbx));
      }
      routes.forget(id); // here at once; PostgreSQL tells the other nodes
      DestroySandbox msg = new DestroySandbox(sbx.id(), sbx.providerResourceId(), "operator");
      return runtime.destroy(sbx.backend(), sbx.nodeId(), msg)
          .transform(ar -> {
            if (ar.succeeded()) {
              return sandboxes.finishTermination(sbx.id(), p.keyId(), "operator", Times.now(clock))
                  .map(done -> reply(200, done));
            }
            RuntimeException failure = BusFailures.decode(ar.cause(), sbx.backend(), "destroy");
            ProviderError error = failure instanceof ProviderException pe ? pe.error()
                : BusFailures.normalize(sbx.backend(), "destroy");
            return sandboxes.failTermination(sbx.id(), error, Times.now(clock))
                .compose(v -> Future.<Reply>failedFuture(new ProviderException(error)));
          });
    });
  }

  /**
   * Sets a new deadline {@code timeout_secs} from now (shorter or longer); the supervisor terminates the
   * sandbox then. The organization's {@code max_sandbox_lifetime_secs} bounds the sandbox's whole life: a
   * deadline past {@code created_at} plus the limit is denied (403, recorded like a create's denial), so
   * repeated extensions cannot keep it alive longer. Once the deadline is
   * stored the backend is told (({@link RuntimeClient#setTimeout})), so a provider with its own lifetime for the
   * sandbox keeps it alive that long; if that fails the provider error is answered and the stored deadline
   * stays.
   */
  private Future<Reply> timeout(RoutingContext ctx, Principal p) {
    String id = Api.idParam(ctx, "sandbox_id", "sbx", "sandbox not found");
    Body body = Body.parse(Api.body(ctx));
    Integer secs = body.integer("timeout_secs", 0, null);
    body.check();
    if (secs == null) {
      throw ApiException.invalid("timeout_secs is required");
    }
    return find(ctx, p).compose(found -> policies.current(p.organizationId()).compose(policy -> {
      OffsetDateTime now = Times.now(clock);
      OffsetDateTime deadline = now.plusSeconds(secs);
      Integer max = policy.maxSandboxLifetimeSecs();
      if (max != null && deadline.isAfter(found.createdAt().plusSeconds(max))) {
        java.time.Duration life = java.time.Duration.between(found.createdAt(), deadline);
        long lifeSecs = life.getSeconds() + (life.getNano() > 0 ? 1 : 0);
        PolicyDecision.Denial denial = new PolicyDecision.Denial("max_sandbox_lifetime_secs",
            "Requested sandbox lifetime exceeds organization policy.", lifeSecs, max);
        return policies.recordDenial(p.organizationId(), p.keyId(),
                new PolicyDecision.Request(found.backend(), null, secs), denial, now)
            .compose(v -> Future.<java.util.Optional<SandboxRecord>>failedFuture(new ApiException(403, denial.detail())));
      }
      return sandboxes.setDeadline(p.organizationId(), id, deadline, now);
    })).compose(updated -> {
      if (updated.isEmpty()) {
        return sandboxes.find(p.organizationId(), id).map(found -> {
          SandboxRecord sbx = found.orElseThrow(() -> ApiException.notFound("sandbox not found"));
          throw ApiException.conflict("sandbox is " + sbx.status());
        });
      }
      SandboxRecord sbx = updated.get();
      return runtime.setTimeout(sbx.backend(), sbx.nodeId(), new SetTimeout(sbx.id(), sbx.providerResourceId(), secs))
          .transform(ar -> ar.succeeded() || hostGone(sbx, ar.cause())
              ? Future.succeededFuture(reply(200, sbx))
              : Future.failedFuture(ar.cause()));
    });
  }

  /**
   * A node-bound sandbox whose node no longer answers: its sandbox has no lifetime of its own to move (the
   * node-bound backends keep none), so the stored deadline is all there is.
   */
  private boolean hostGone(SandboxRecord sbx, Throwable t) {
    return backends.isNodeBound(sbx.backend()) && RuntimeClient.unreachable(t);
  }

  /** A sandbox answer with its version as the {@code ETag} that {@code If-Match} takes back. */
  static Reply reply(int status, SandboxRecord sbx) {
    return Reply.of(status, Wire.sandbox(sbx)).withHeader("ETag", "\"" + sbx.version() + "\"");
  }

  /** Parses If-Match as the seed does: trim, drop {@code W/}, drop quotes, a positive integer. */
  static Integer ifMatch(String raw) {
    if (raw == null) {
      return null;
    }
    String v = raw.trim();
    if (v.startsWith("W/")) {
      v = v.substring(2);
    }
    v = v.replace("\"", "").trim();
    long n;
    try {
      n = Long.parseLong(v);
    } catch (NumberFormatException e) {
      throw ApiException.invalid("If-Match must contain a sandbox version");
    }
    if (n < 1 || n > Integer.MAX_VALUE) {
      throw ApiException.invalid("If-Match must contain a positive sandbox version");
    }
    return (int) n;
  }

  // ---- helpers ---------------------------------------------------------------------------------------

  /** The optional {@code Idempotency-Key} header: 1 to 255 characters. */
  static String idempotencyKey(RoutingContext ctx) {
    String key = ctx.request().getHeader("Idempotency-Key");
    if (key == null) {
      return null;
    }
    if (key.isEmpty() || key.length() > 255) {
      throw ApiException.invalid("idempotency key must contain 1 to 255 characters");
    }
    return key;
  }
}
