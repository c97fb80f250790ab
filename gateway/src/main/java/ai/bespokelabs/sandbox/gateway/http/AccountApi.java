package ai.bespokelabs.sandbox.gateway.http;

import ai.bespokelabs.sandbox.core.Hmac;
import ai.bespokelabs.sandbox.core.Ids;
import ai.bespokelabs.sandbox.core.Times;
import ai.bespokelabs.sandbox.core.config.GatewayConfig;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.model.ApiKeyRecord;
import ai.bespokelabs.sandbox.core.repo.ApiKeyRepository.NewKey;
import ai.bespokelabs.sandbox.core.repo.ApiKeyRepository;
import ai.bespokelabs.sandbox.core.repo.OrganizationRepository;
import ai.bespokelabs.sandbox.gateway.auth.Authenticator;
import ai.bespokelabs.sandbox.gateway.auth.Principal;
import ai.bespokelabs.sandbox.gateway.auth.Scopes;
import ai.bespokelabs.sandbox.gateway.auth.WebSessions;
import io.vertx.core.Future;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;
import java.time.Clock;
import java.time.OffsetDateTime;
import java.util.List;
import java.util.TreeSet;

/** Health, organization bootstrap, product keys and the session (capabilities) endpoint. */
public final class AccountApi implements Endpoints {
  private final GatewayConfig config;
  private final Hmac hmac;
  private final Clock clock;
  private final Authenticator authenticator;
  private final OrganizationRepository organizations;
  private final ApiKeyRepository keys;
  private final WebSessions sessions;

  public AccountApi(GatewayConfig config, Hmac hmac, Clock clock, Authenticator authenticator,
      OrganizationRepository organizations, ApiKeyRepository keys, WebSessions sessions) {
    this.sessions = sessions;
    this.config = config;
    this.hmac = hmac;
    this.clock = clock;
    this.authenticator = authenticator;
    this.organizations = organizations;
    this.keys = keys;
  }

  public void register(Api api) {
    api.open(HttpMethod.GET, "/healthz", ctx -> Future.succeededFuture(Reply.ok(new JsonObject().put("status", "ok"))));
    api.open(HttpMethod.POST, "/v1/organizations", this::createOrganization);
    api.authed(HttpMethod.GET, "/v1/api-keys", Scopes.KEYS_WRITE, this::listKeys);
    api.authed(HttpMethod.POST, "/v1/api-keys", Scopes.KEYS_WRITE, this::createKey);
    api.authed(HttpMethod.DELETE, "/v1/api-keys/{key_id}", Scopes.KEYS_WRITE, this::revokeKey);
    api.authed(HttpMethod.GET, "/v1/session", null, this::session);
  }

  private Future<Reply> createOrganization(RoutingContext ctx) {
    String given = ctx.request().getHeader("X-Control-Plane-Admin");
    String expected = config.secrets().adminToken().map(t -> t.reveal()).orElse(null);
    if (expected == null) {
      throw new ApiException(503, "organization bootstrap is disabled");
    }
    if (!Hmac.constantTimeEquals(given, expected)) {
      throw ApiException.unauthorized("invalid control-plane admin token");
    }
    Body body = Body.parse(Api.body(ctx));
    String name = body.string("name", true, 1, 200);
    body.check();
    OffsetDateTime now = Times.now(clock);
    String orgId = Ids.newId("org");
    Issued key = issue(orgId, "Initial key", List.of(Scopes.ALL), null, now);
    return organizations.createWithInitialKey(orgId, name, now, key.newKey())
        .map(v -> Reply.of(201, new JsonObject()
            .put("organization", new JsonObject().put("id", orgId).put("name", name).put("created_at", Wire.ts(now)))
            .put("api_key", Wire.issuedKey(key.newKey().record(), key.secret()))));
  }

  private Future<Reply> listKeys(RoutingContext ctx, Principal p) {
    return keys.list(p.organizationId()).map(keys -> {
      JsonArray out = new JsonArray();
      keys.forEach(k -> out.add(Wire.apiKey(k)));
      return Reply.ok(out);
    });
  }

  private Future<Reply> createKey(RoutingContext ctx, Principal p) {
    Body body = Body.parse(Api.body(ctx));
    String name = body.string("name", true, 1, 200);
    List<String> scopes = body.stringList("scopes");
    OffsetDateTime expiresAt = body.datetime("expires_at");
    body.check();
    TreeSet<String> unique = new TreeSet<>(scopes == null ? List.of(Scopes.ALL) : scopes);
    if (unique.isEmpty()) {
      throw ApiException.invalid("scopes must not be empty");
    }
    for (String scope : unique) {
      if (!Scopes.isKnown(scope)) {
        throw ApiException.invalid("unknown scope: " + scope);
      }
    }
    Scopes.firstNotCovered(p.scopes(), unique).ifPresent(missing -> {
      throw ApiException.forbidden("API key requires scope: " + missing + " to issue a key with it");
    });
    OffsetDateTime now = Times.now(clock);
    if (expiresAt != null && !expiresAt.isAfter(now)) {
      throw ApiException.invalid("expires_at must be in the future");
    }
    Issued key = issue(p.organizationId(), name, List.copyOf(unique), expiresAt, now);
    return keys.insert(key.newKey())
        .map(v -> Reply.of(201, Wire.issuedKey(key.newKey().record(), key.secret())));
  }

  private Future<Reply> revokeKey(RoutingContext ctx, Principal p) {
    String id = Api.idParam(ctx, "key_id", "key", "API key not found");
    return keys.findActive(p.organizationId(), id).compose(target -> {
      ApiKeyRecord key = target.orElseThrow(() -> ApiException.notFound("API key not found"));
      Scopes.firstNotCovered(p.scopes(), key.scopes()).ifPresent(missing -> {
        throw ApiException.forbidden("API key requires scope: " + missing + " to revoke a key with it");
      });
      return keys.revoke(p.organizationId(), id, Times.now(clock));
    }).map(done -> {
      if (!done) {
        throw ApiException.notFound("API key not found");
      }
      authenticator.forget(id); // here at once; PostgreSQL tells the other nodes

      return Reply.noContent();
    });
  }

  private Future<Reply> session(RoutingContext ctx, Principal p) {
    boolean admin = p.has(Scopes.POLICIES_WRITE) && p.has(Scopes.PROVIDERS_WRITE);
    String role = admin ? "administrator" : p.has(Scopes.SANDBOXES_TERMINATE) ? "operator" : "observer";
    JsonArray scopes = new JsonArray(p.scopes().stream().sorted().toList());
    JsonObject out = new JsonObject()
        .put("api_key_id", p.keyId())
        .put("scopes", scopes)
        .put("role", role)
        .put("can_terminate", p.has(Scopes.SANDBOXES_TERMINATE))
        .put("can_view_policy", p.has(Scopes.POLICIES_READ) && p.has(Scopes.USAGE_READ))
        .put("can_manage_policy", p.has(Scopes.POLICIES_WRITE))
        .put("can_view_providers", p.has(Scopes.PROVIDERS_READ))
        .put("can_manage_providers", p.has(Scopes.PROVIDERS_WRITE))
        .put("can_create", p.has(Scopes.SANDBOXES_CREATE))
        .put("can_view_alerts", p.has(Scopes.ALERTS_READ))
        .put("can_view_audit", p.has(Scopes.AUDIT_READ))
        .put("can_export", p.has(Scopes.EXPORTS_READ))
        .put("can_view_usage", p.has(Scopes.USAGE_READ))
        .put("auth_mode", p.authMode());
    if (p.sessionId() != null) {
      out.put("csrf_token", sessions.csrfToken(p.sessionId()));
    }
    return Future.succeededFuture(Reply.ok(out));
  }

  private record Issued(NewKey newKey, String secret) {}

  private Issued issue(String orgId, String name, List<String> scopes, OffsetDateTime expiresAt, OffsetDateTime now) {
    String secret = Authenticator.KEY_PREFIX + Ids.urlSafeToken(32);
    ApiKeyRecord rec = new ApiKeyRecord(Ids.newId("key"), orgId, name, secret.substring(0, 17), scopes, now, null,
        expiresAt, null);
    return new Issued(new NewKey(rec, hmac.hex(secret)), secret);
  }
}
