package ai.bespokelabs.sandbox.gateway.http;

import ai.bespokelabs.sandbox.core.Hmac;
import ai.bespokelabs.sandbox.core.Times;
import ai.bespokelabs.sandbox.core.config.GatewayConfig;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.model.SandboxRecord;
import ai.bespokelabs.sandbox.core.repo.ExecutionRepository;
import ai.bespokelabs.sandbox.core.repo.SandboxHistoryRepository;
import ai.bespokelabs.sandbox.core.repo.SandboxRepository;
import ai.bespokelabs.sandbox.gateway.auth.Principal;
import ai.bespokelabs.sandbox.gateway.auth.Scopes;
import ai.bespokelabs.sandbox.gateway.routing.Backends;
import ai.bespokelabs.sandbox.gateway.sandbox.SandboxService;
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

/**
 * The sandbox API: create, list, get, detail, adopt, snapshot, new deadlines and terminate. Parses and authorizes
 * each request and answers it; the {@link SandboxService} does the work.
 */
public final class SandboxApi implements Endpoints {
  private static final int MAX_EXECUTIONS_IN_DETAIL = 200;

  private final SandboxService service;
  private final GatewayConfig config;
  private final Backends backends;
  private final Hmac hmac;
  private final SandboxRepository sandboxes;
  private final SandboxHistoryRepository history;
  private final ExecutionRepository executions;
  private final CostLedger ledger;
  private final Presets presets;
  private final Clock clock;

  public SandboxApi(SandboxService service, GatewayConfig config, Backends backends, Hmac hmac,
      SandboxRepository sandboxes, SandboxHistoryRepository history, ExecutionRepository executions, CostLedger ledger,
      Presets presets, Clock clock) {
    this.service = service;
    this.config = config;
    this.backends = backends;
    this.hmac = hmac;
    this.sandboxes = sandboxes;
    this.history = history;
    this.executions = executions;
    this.ledger = ledger;
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
    return service.adopt(org, id, backend, resource).map(updated -> reply(200, updated));
  }

  // ---- snapshot --------------------------------------------------------------------------------------

  /** Snapshots a running sandbox where its backend can; create with the answered {@code snapshot_id}. */
  private Future<Reply> snapshot(RoutingContext ctx, Principal p) {
    return find(ctx, p).compose(sbx -> service.snapshot(sbx)
        .map(taken -> Reply.of(201, new JsonObject().put("snapshot_id", taken.snapshotId())
            .put("sandbox_id", sbx.id()).put("backend", sbx.backend()).put("created_at", Wire.ts(Times.now(clock))))));
  }

  // ---- create ----------------------------------------------------------------------------------------

  private Future<Reply> create(RoutingContext ctx, Principal p) {
    return create(p, Api.body(ctx), idempotencyKey(ctx));
  }

  /** A create as {@code POST /v1/sandboxes} does it, for callers that are not an HTTP request (MCP tools). */
  public Future<Reply> create(Principal p, io.vertx.core.buffer.Buffer body, String idempotencyKey) {
    Body parsedBody = Body.parse(body);
    if (parsedBody.raw("backend") != null) {
      return create(p, parsedBody, idempotencyKey);
    }
    // no backend: the organization's default_backend when its policy sets one, else the missing field's 422
    return service.defaultBackend(p.organizationId()).compose(fallback -> {
      if (fallback != null) {
        parsedBody.json().put("backend", fallback);
      }
      return create(p, parsedBody, idempotencyKey);
    });
  }

  private Future<Reply> create(Principal p, Body body, String idempotencyKey) {
    CreateRequest parsed = CreateRequest.parse(body, backends,
        config.execution().gitAllowFileUrls(), config.execution().gitAllowPrivate());
    if (parsed.config().preset() == null) {
      return create(p, parsed, idempotencyKey);
    }
    return presets.resolve(p.organizationId(), parsed.config().preset())
        .compose(preset -> create(p, parsed.withPreset(preset), idempotencyKey));
  }

  private Future<Reply> create(Principal p, CreateRequest req, String idempotencyKey) {
    if (service.refuses(req.backend())) { // an answer, not a failure: nothing broke
      return Future.succeededFuture(Reply.of(503, new JsonObject().put("detail", "this gateway node is draining and"
          + " takes no new " + req.backend() + " sandboxes; retry (another node takes it)")).withHeader("Retry-After", "1"));
    }
    return service.create(p, req, idempotencyKey).map(sbx -> reply(201, sbx));
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
    return service.terminate(p, id, expected).map(sbx -> reply(200, sbx));
  }

  /**
   * Sets a new deadline {@code timeout_secs} from now (shorter or longer); the supervisor terminates the sandbox
   * then. The organization's {@code max_sandbox_lifetime_secs} bounds the sandbox's whole life
   * ({@link SandboxService#setDeadline}).
   */
  private Future<Reply> timeout(RoutingContext ctx, Principal p) {
    Api.idParam(ctx, "sandbox_id", "sbx", "sandbox not found");
    Body body = Body.parse(Api.body(ctx));
    Integer secs = body.integer("timeout_secs", 0, null);
    body.check();
    if (secs == null) {
      throw ApiException.invalid("timeout_secs is required");
    }
    return find(ctx, p).compose(found -> service.setDeadline(p, found, secs)).map(sbx -> reply(200, sbx));
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
