package ai.bespokelabs.sandbox.gateway.http;

import ai.bespokelabs.sandbox.core.Redaction;
import ai.bespokelabs.sandbox.core.Times;
import ai.bespokelabs.sandbox.core.repo.OperationsRepository;
import ai.bespokelabs.sandbox.gateway.auth.Principal;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;
import java.time.Clock;
import java.util.Locale;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The append-only audit trail: every authenticated mutation (POST, PUT, PATCH, DELETE) and every export,
 * recorded when its response ends with the outcome its status gives. Details are redacted.
 */
public final class AuditTrail {
  private static final Logger LOG = LoggerFactory.getLogger(AuditTrail.class);
  private static final Map<String, String> ACTIONS = Map.ofEntries(
      Map.entry("POST /v1/sandboxes", "sandbox.create"),
      Map.entry("DELETE /v1/sandboxes/{sandbox_id}", "sandbox.terminate"),
      Map.entry("POST /v1/sandboxes/{sandbox_id}/execute", "sandbox.execute"),
      Map.entry("PUT /v1/policies/current", "policy.update"),
      Map.entry("POST /v1/providers/{backend}/health-check", "provider.health_check"),
      Map.entry("POST /v1/reconciliation/{backend}", "provider.reconcile"),
      Map.entry("POST /v1/api-keys", "api_key.create"),
      Map.entry("DELETE /v1/api-keys/{key_id}", "api_key.revoke"),
      Map.entry("PUT /v1/alerts/configuration", "alerts.configure"),
      Map.entry("PUT /v1/retention/current", "retention.configure"),
      Map.entry("POST /v1/retention/apply", "retention.apply"));

  private final OperationsRepository operations;
  private final Clock clock;

  public AuditTrail(OperationsRepository operations, Clock clock) {
    this.operations = operations;
    this.clock = clock;
  }

  static boolean audited(HttpMethod method, String template) {
    return method != HttpMethod.GET || template.startsWith("/v1/exports/");
  }

  /** The reference's action name, else {@code "<method> <route template>"}. */
  static String action(HttpMethod method, String template) {
    String route = method.name() + " " + template;
    return ACTIONS.getOrDefault(route, method.name().toLowerCase(Locale.ROOT) + " " + template);
  }

  static String outcome(int status) {
    return status < 400 ? "success" : status < 500 ? "denied" : "failure";
  }

  /**
   * Records a call that did not come as its own HTTP request (an MCP tool call) as the REST call it stands for:
   * {@code method template} names the action, {@code status} the outcome that call would have had.
   */
  public void recordCall(Principal p, HttpMethod method, String template, String path, int status,
      java.time.OffsetDateTime at) {
    JsonObject details = new JsonObject().put("status_code", status).put("query", new JsonObject())
        .put("via", "mcp");
    operations.audit(p.organizationId(), p.keyId(), p.sessionId(), action(method, template), path, outcome(status),
            details, at)
        .onFailure(e -> LOG.error("Audit entry for {} {} could not be written: {}", method, template, e.toString()));
  }

  /** Records the request, stamped with its arrival, once its response has ended. */
  void record(RoutingContext ctx, Principal p, HttpMethod method, String template) {
    java.time.OffsetDateTime at = Times.now(clock);
    ctx.addEndHandler(ar -> {
      int status = ctx.response().getStatusCode();
      JsonObject query = new JsonObject();
      ctx.queryParams().forEach(e -> query.put(e.getKey(), e.getValue()));
      JsonObject details = Redaction.redact(new JsonObject().put("status_code", status).put("query", query));
      operations.audit(p.organizationId(), p.keyId(), p.sessionId(), action(method, template), ctx.normalizedPath(),
              outcome(status), details, at)
          .onFailure(e -> LOG.error("Audit entry for {} {} could not be written: {}", method, template, e.toString()));
    });
  }
}
