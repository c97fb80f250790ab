package ai.bespokelabs.sandbox.gateway;

import ai.bespokelabs.sandbox.core.agent.SecretBox;
import ai.bespokelabs.sandbox.core.repo.AgentRunRepository;
import ai.bespokelabs.sandbox.core.repo.AgentSecretRepository;
import ai.bespokelabs.sandbox.gateway.agent.AgentRuns;
import ai.bespokelabs.sandbox.gateway.http.AgentApi;
import ai.bespokelabs.sandbox.gateway.mcp.McpApi;
import ai.bespokelabs.sandbox.gateway.placement.PlacementApi;
import ai.bespokelabs.sandbox.gateway.placement.Placements;
import ai.bespokelabs.sandbox.gateway.mcp.McpTools;
import ai.bespokelabs.sandbox.gateway.http.PolicyHints;
import ai.bespokelabs.sandbox.gateway.routing.ExecRoutes;
import ai.bespokelabs.sandbox.gateway.routing.Backends;
import ai.bespokelabs.sandbox.core.Hmac;
import ai.bespokelabs.sandbox.core.bus.BusRuntimeClient;
import ai.bespokelabs.sandbox.core.bus.RuntimeClient;
import ai.bespokelabs.sandbox.core.sandbox.Terminations;
import ai.bespokelabs.sandbox.core.config.GatewayConfig;
import ai.bespokelabs.sandbox.core.db.Wakeups;
import ai.bespokelabs.sandbox.core.pricing.PricingCatalog;
import ai.bespokelabs.sandbox.core.repo.ApiKeyRepository;
import ai.bespokelabs.sandbox.core.repo.ExecutionRepository;
import ai.bespokelabs.sandbox.core.repo.NodeLoss;
import ai.bespokelabs.sandbox.core.repo.NodeRepository;
import ai.bespokelabs.sandbox.core.repo.OperationsRepository;
import ai.bespokelabs.sandbox.core.repo.OrganizationRepository;
import ai.bespokelabs.sandbox.core.repo.PolicyRepository;
import ai.bespokelabs.sandbox.core.repo.PresetRepository;
import ai.bespokelabs.sandbox.core.repo.ProviderHealthRepository;
import ai.bespokelabs.sandbox.core.repo.ReconciliationRepository;
import ai.bespokelabs.sandbox.core.repo.SandboxHistoryRepository;
import ai.bespokelabs.sandbox.core.repo.SandboxLogRepository;
import ai.bespokelabs.sandbox.core.repo.ReadinessRepository;
import ai.bespokelabs.sandbox.core.repo.SandboxRepository;
import ai.bespokelabs.sandbox.core.repo.WebSessionRepository;
import ai.bespokelabs.sandbox.core.repo.LifecycleFeedRepository;
import ai.bespokelabs.sandbox.gateway.auth.Authenticator;
import ai.bespokelabs.sandbox.gateway.auth.WebSessions;
import ai.bespokelabs.sandbox.gateway.exec.ExecutionRecorder;
import ai.bespokelabs.sandbox.gateway.exec.ExecutionService;
import ai.bespokelabs.sandbox.gateway.sandbox.SandboxService;
import ai.bespokelabs.sandbox.gateway.http.AccountApi;
import ai.bespokelabs.sandbox.gateway.http.AuditTrail;
import ai.bespokelabs.sandbox.gateway.http.ConnectionGuard;
import ai.bespokelabs.sandbox.gateway.http.CostApi;
import ai.bespokelabs.sandbox.gateway.http.DashboardApi;
import ai.bespokelabs.sandbox.gateway.http.SandboxEvents;
import ai.bespokelabs.sandbox.gateway.http.Endpoints;
import ai.bespokelabs.sandbox.gateway.http.ExecutionApi;
import ai.bespokelabs.sandbox.gateway.http.FilesApi;
import ai.bespokelabs.sandbox.gateway.http.HttpVerticle;
import ai.bespokelabs.sandbox.gateway.http.ObservabilityApi;
import ai.bespokelabs.sandbox.gateway.http.OperationsApi;
import ai.bespokelabs.sandbox.gateway.http.PolicyApi;
import ai.bespokelabs.sandbox.gateway.http.Presets;
import ai.bespokelabs.sandbox.gateway.http.ProviderApi;
import ai.bespokelabs.sandbox.gateway.http.ReadinessApi;
import ai.bespokelabs.sandbox.gateway.http.SandboxApi;
import ai.bespokelabs.sandbox.ledger.CostLedger;
import ai.bespokelabs.sandbox.ledger.Exports;
import ai.bespokelabs.sandbox.ledger.LedgerHandler;
import ai.bespokelabs.sandbox.gateway.ops.GatewayMetrics;
import ai.bespokelabs.sandbox.gateway.ops.MeteredLedger;
import ai.bespokelabs.sandbox.gateway.ops.MetricsEndpoint;
import ai.bespokelabs.sandbox.gateway.http.Reply;
import io.vertx.core.Future;
import io.vertx.core.http.HttpMethod;
import ai.bespokelabs.sandbox.ledger.LedgerVerticle;
import ai.bespokelabs.sandbox.ledger.LifecycleCosts;
import ai.bespokelabs.sandbox.ledger.UsageMeter;
import ai.bespokelabs.sandbox.supervisor.AlertEvaluator;
import ai.bespokelabs.sandbox.supervisor.Reconciler;
import ai.bespokelabs.sandbox.supervisor.SupervisorVerticle;
import io.vertx.core.Vertx;
import io.vertx.ext.web.Router;
import io.vertx.sqlclient.Pool;
import java.time.Clock;
import java.util.List;

/**
 * The gateway's object graph, built once by {@link Gateway}: every repository and service, shared by the
 * verticles, and the verticles themselves. Each endpoint group is given only the collaborators it uses; each
 * HTTP verticle gets its own endpoint instances ({@link Endpoints}).
 */
final class Wiring {
  private final GatewayConfig config;
  private final Backends backends;
  private final Clock clock;
  private final Hmac hmac;
  private final Pool pool;
  private final PricingCatalog pricing;
  private final Wakeups wakeups;
  final GatewayMetrics metrics;

  final OrganizationRepository organizations;
  final ApiKeyRepository keys;
  final SandboxRepository sandboxes;
  /** Sandboxes due to end, claimed by the supervisor and by host backends at a node's stop. */
  final ai.bespokelabs.sandbox.core.repo.TerminationClaims claims;
  final SandboxHistoryRepository history;
  final ExecutionRepository executions;
  final PolicyRepository policies;
  final OperationsRepository operations;
  final PresetRepository presets;
  final ProviderHealthRepository health;
  final SandboxLogRepository logs;
  final NodeRepository nodes;
  final NodeLoss nodeLoss;
  final LifecycleCosts lifecycleCosts;
  final CostLedger ledger;
  final Exports exports;
  final AlertEvaluator alerts;
  final Reconciler reconciler;
  final Authenticator authenticator;
  final WebSessions webSessions;
  final LifecycleFeedRepository lifecycleFeed;
  final AuditTrail audit;
  final ExecRoutes routes;
  final PolicyHints policyHints;
  final ExecutionService executionService;
  final AgentRuns agentRuns;
  final AgentSecretRepository agentSecrets;
  /** The one way to the adapters. */
  final RuntimeClient runtime;
  /** The one way sandboxes end. */
  final Terminations terminations;
  final Placements placements;
  final SandboxService sandboxService;
  /** Every HTTP verticle's connections per client address. */
  private final ConnectionGuard.Clients clients = new ConnectionGuard.Clients();

  Wiring(Vertx vertx, GatewayConfig config, Backends backends, Clock clock, Hmac hmac, Pool pool,
      PricingCatalog pricing, Wakeups wakeups, GatewayMetrics metrics) {
    this.config = config;
    this.metrics = metrics;
    this.backends = backends;
    this.clock = clock;
    this.hmac = hmac;
    this.pool = pool;
    this.pricing = pricing;
    this.wakeups = wakeups;
    this.organizations = new OrganizationRepository(pool);
    this.keys = new ApiKeyRepository(pool);
    this.sandboxes = new SandboxRepository(pool);
    this.claims = new ai.bespokelabs.sandbox.core.repo.TerminationClaims(pool);
    this.history = new SandboxHistoryRepository(pool);
    this.executions = new ExecutionRepository(pool);
    this.policies = new PolicyRepository(pool);
    this.operations = new OperationsRepository(pool);
    this.presets = new PresetRepository(pool);
    this.health = new ProviderHealthRepository(pool);
    this.logs = new SandboxLogRepository(pool);
    this.nodes = new NodeRepository(pool);
    this.nodeLoss = new NodeLoss(pool);
    this.lifecycleCosts = new LifecycleCosts(config.ledger().customerMarkup());
    this.ledger = new CostLedger(pool, lifecycleCosts);
    this.exports = new Exports(pool);
    this.alerts = new AlertEvaluator(operations, policies, ledger::hourAndDay);
    this.runtime = new BusRuntimeClient(vertx, backends.nodeId(), backends::isNodeBound);
    this.terminations = new Terminations(runtime, sandboxes);
    this.reconciler = new Reconciler(vertx, new ReconciliationRepository(pool), runtime, terminations);
    this.authenticator = new Authenticator(keys, hmac, clock);
    this.lifecycleFeed = new LifecycleFeedRepository(pool);
    this.webSessions = new WebSessions(new WebSessionRepository(pool), authenticator, hmac, clock,
        config.dashboard().sessionTtlSecs(), config.dashboard().cookieSecure());
    this.audit = new AuditTrail(operations, clock);
    this.routes = new ExecRoutes();
    this.policyHints = new PolicyHints();
    this.placements = new Placements(backends, policies, health, pricing);
    this.sandboxService = new SandboxService(runtime, terminations, backends, hmac, pricing, sandboxes, policies, ledger,
        routes, policyHints, placements, clock);
    this.executionService = new ExecutionService(vertx, runtime, executions, sandboxes, backends, routes, hmac, clock,
        new ExecutionService.Settings(config.execution().timeoutSecs(), config.execution().outputLimitBytes(),
            config.ledger().customerMarkup()), metrics);
    this.agentSecrets = new AgentSecretRepository(pool, new SecretBox(config.secrets().pepper().orElseThrow()));
    this.agentRuns = new AgentRuns(executionService, sandboxes, new AgentRunRepository(pool), agentSecrets,
        pricing, clock);
  }

  Backends backends() {
    return backends;
  }

  Wakeups wakeups() {
    return wakeups;
  }

  /** One HTTP verticle's endpoints. */
  List<Endpoints> endpoints(Vertx vertx) {
    SandboxApi sandboxApi = new SandboxApi(sandboxService, config, backends, hmac, sandboxes, history, executions,
        ledger, new Presets(presets, clock), clock);
    List<Endpoints> all = new java.util.ArrayList<>(List.of(
        new AccountApi(config, hmac, clock, authenticator, organizations, keys, webSessions),
        new DashboardApi(config.dashboard(), webSessions, operations, clock),
        new SandboxEvents(vertx, lifecycleFeed),
        sandboxApi,
        new ExecutionApi(vertx, executionService),
        new AgentApi(vertx, agentRuns, agentSecrets, executionService, clock),
        new PlacementApi(placements),
        new McpApi(vertx, new McpTools(executionService, agentRuns, runtime, sandboxes, sandboxApi), audit, clock, McpApi.VERSION),
        new FilesApi(vertx, runtime, config, sandboxes),
        new ObservabilityApi(runtime, sandboxes, logs, clock),
        new PolicyApi(policies, ledger, backends, policyHints, clock),
        new CostApi(ledger, exports, history, clock),
        new ProviderApi(runtime, backends, health, reconciler, alerts, clock),
        new OperationsApi(operations, alerts, ledger, clock),
        new ReadinessApi(backends, pool, new ReadinessRepository(pool), config.node().supervisionIntervalSecs(),
            clock)));
    if (config.operations().metricsPort().isEmpty()) {
      // on the API's port unless it has one of its own
      all.add(api -> api.open(HttpMethod.GET, MetricsEndpoint.PATH, ctx -> {
        metricsEndpoint().handle(ctx.request());
        return Future.succeededFuture(Reply.HANDLED);
      }));
    }
    return List.copyOf(all);
  }

  MetricsEndpoint metricsEndpoint() {
    return new MetricsEndpoint(metrics, config.operations().metricsToken());
  }

  /** The router one HTTP verticle serves. */
  Router router(Vertx vertx) {
    return HttpVerticle.router(vertx, config, webSessions, audit, endpoints(vertx));
  }

  HttpVerticle http() {
    return new HttpVerticle(config, webSessions, audit, this::endpoints, clients);
  }

  LedgerVerticle ledgerVerticle() {
    return new LedgerVerticle(pool, wakeups, new MeteredLedger(
        new LedgerHandler(lifecycleCosts, new UsageMeter(config.ledger().customerMarkup())), metrics, clock));
  }

  SupervisorVerticle supervisor(List<SupervisorVerticle.Watch> watches) {
    return new SupervisorVerticle(nodes, claims, executions, wakeups, backends.nodeId(), clock,
        config.node().supervisionIntervalSecs(), terminations, watches,
        reconciler, alerts).countingClaims(metrics::claimed);
  }

  ExecutionRecorder recorder() {
    return new ExecutionRecorder(runtime, executionService);
  }
}
