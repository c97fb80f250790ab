package ai.bespokelabs.sandbox.gateway;

import ai.bespokelabs.sandbox.core.Hmac;
import ai.bespokelabs.sandbox.core.config.GatewayConfig;
import ai.bespokelabs.sandbox.core.repo.ApiKeyRepository;
import ai.bespokelabs.sandbox.core.repo.ExecutionRepository;
import ai.bespokelabs.sandbox.core.pricing.PricingCatalog;
import ai.bespokelabs.sandbox.core.repo.OperationsRepository;
import ai.bespokelabs.sandbox.core.repo.OrganizationRepository;
import ai.bespokelabs.sandbox.supervisor.AlertEvaluator;
import ai.bespokelabs.sandbox.core.repo.PolicyRepository;
import ai.bespokelabs.sandbox.core.repo.PresetRepository;
import ai.bespokelabs.sandbox.core.repo.SandboxRepository;
import ai.bespokelabs.sandbox.gateway.auth.Authenticator;
import ai.bespokelabs.sandbox.gateway.exec.ExecutionService;
import ai.bespokelabs.sandbox.ledger.CostLedger;
import ai.bespokelabs.sandbox.ledger.LifecycleCosts;
import io.vertx.core.Vertx;
import io.vertx.sqlclient.Pool;
import java.time.Clock;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;

/** Everything the HTTP verticle needs, built once by the composition root and shared by its instances. */
public record Services(GatewayConfig config, Backends backends, Clock clock, Hmac hmac, Pool pool,
    PricingCatalog pricing, OrganizationRepository organizations, ApiKeyRepository keys, SandboxRepository sandboxes,
    ExecutionRepository executions, PolicyRepository policies, CostLedger ledger, OperationsRepository operations,
    AlertEvaluator alerts, Authenticator authenticator, ExecRoutes routes, PresetRepository presets,
    PolicyHints policyHints, ExecutionService executionService) {

  public static Services create(GatewayConfig config, Backends backends, Clock clock, Hmac hmac, Pool pool,
      PricingCatalog pricing, Vertx vertx) {
    ApiKeyRepository keys = new ApiKeyRepository(pool);
    CostLedger ledger = new CostLedger(pool, new LifecycleCosts(config.ledger().customerMarkup()));
    SandboxRepository sandboxes = new SandboxRepository(pool);
    ExecutionRepository executions = new ExecutionRepository(pool);
    ExecRoutes routes = new ExecRoutes();
    return new Services(config, backends, clock, hmac, pool, pricing, new OrganizationRepository(pool), keys,
        sandboxes, executions, new PolicyRepository(pool),
        ledger, new OperationsRepository(pool), new AlertEvaluator(pool, ledger::hourAndDay),
        new Authenticator(keys, hmac, clock), routes, new PresetRepository(pool), new PolicyHints(),
        new ExecutionService(vertx, executions, sandboxes, backends, routes, hmac, clock, new ExecutionService.Settings(
            config.execution().timeoutSecs(), config.execution().outputLimitBytes(), config.ledger().customerMarkup())));
  }

  /** Now, in UTC, at the microsecond precision PostgreSQL stores. */
  public OffsetDateTime now() {
    return OffsetDateTime.now(clock).withOffsetSameInstant(ZoneOffset.UTC).truncatedTo(ChronoUnit.MICROS);
  }
}
