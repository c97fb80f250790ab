package ai.bespokelabs.sandbox.core.config;

import ai.bespokelabs.sandbox.core.Secret;
import java.util.Optional;

/**
 * The gateway's typed configuration, built once by {@link ConfigLoader}, one record per section of
 * {@code conf/gateway.json}. Secrets are {@link Secret}s so the record can be logged safely.
 */
public record GatewayConfig(
    HttpConfig http,
    DashboardConfig dashboard,
    NodeConfig node,
    DatabaseConfig database,
    ClusterConfig cluster,
    SecretsConfig secrets,
    ExecutionConfig execution,
    LedgerConfig ledger,
    ProvidersConfig providers,
    OperationsConfig operations) {

  public GatewayConfig withSecrets(Secret pepper, Secret adminToken) {
    return new GatewayConfig(http, dashboard, node, database, cluster,
        new SecretsConfig(Optional.of(pepper), Optional.of(adminToken)), execution, ledger, providers, operations);
  }

  public GatewayConfig withNodeId(String id) {
    return new GatewayConfig(http, dashboard, node.withId(id), database, cluster, secrets, execution, ledger, providers,
        operations);
  }

  public GatewayConfig withPort(int newPort) {
    return new GatewayConfig(http.withPort(newPort), dashboard, node, database, cluster, secrets, execution, ledger,
        providers, operations);
  }
}
