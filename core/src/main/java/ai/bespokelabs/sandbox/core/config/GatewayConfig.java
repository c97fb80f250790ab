package ai.bespokelabs.sandbox.core.config;

import ai.bespokelabs.sandbox.core.Secret;
import java.math.BigDecimal;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/**
 * The gateway's typed configuration, built once by {@link ConfigLoader}. Secrets are {@link Secret}s so
 * the record can be logged safely; {@code pepper} and {@code adminToken} are empty until the composition
 * root resolves them (configured value, else generated and kept in the data directory).
 */
public record GatewayConfig(
    String host,
    int port,
    Path dataDir,
    Optional<Secret> databaseUrl,
    int databasePoolSize,
    Optional<Secret> pepper,
    Optional<Secret> adminToken,
    Optional<List<String>> allowedBackends,
    BigDecimal customerMarkup,
    int supervisionIntervalSecs,
    int maxRequestBodyBytes,
    int execOutputLimitBytes,
    int execTimeoutSecs,
    int execJournalBytes,
    Optional<String> nodeId,
    int httpInstances,
    int shutdownGraceSecs,
    Optional<java.nio.file.Path> pricingFile,
    long maxUploadBytes,
    boolean gitAllowFileUrls,
    boolean gitAllowPrivate,
    List<Path> workdirRoots,
    ProviderSettings providers) {

  public GatewayConfig withSecrets(Secret pepper, Secret adminToken) {
    return new GatewayConfig(host, port, dataDir, databaseUrl, databasePoolSize, Optional.of(pepper),
        Optional.of(adminToken), allowedBackends, customerMarkup, supervisionIntervalSecs, maxRequestBodyBytes,
        execOutputLimitBytes, execTimeoutSecs, execJournalBytes, nodeId, httpInstances, shutdownGraceSecs, pricingFile, maxUploadBytes, gitAllowFileUrls, gitAllowPrivate, workdirRoots, providers);
  }

  public GatewayConfig withNodeId(String id) {
    return new GatewayConfig(host, port, dataDir, databaseUrl, databasePoolSize, pepper, adminToken,
        allowedBackends, customerMarkup, supervisionIntervalSecs, maxRequestBodyBytes, execOutputLimitBytes,
        execTimeoutSecs, execJournalBytes, Optional.of(id), httpInstances, shutdownGraceSecs, pricingFile, maxUploadBytes, gitAllowFileUrls, gitAllowPrivate, workdirRoots, providers);
  }

  public GatewayConfig withPort(int newPort) {
    return new GatewayConfig(host, newPort, dataDir, databaseUrl, databasePoolSize, pepper, adminToken,
        allowedBackends, customerMarkup, supervisionIntervalSecs, maxRequestBodyBytes, execOutputLimitBytes,
        execTimeoutSecs, execJournalBytes, nodeId, httpInstances, shutdownGraceSecs, pricingFile, maxUploadBytes, gitAllowFileUrls, gitAllowPrivate, workdirRoots, providers);
  }

  public String requireNodeId() {
    return nodeId.orElseThrow(() -> new IllegalStateException("node id is not resolved"));
  }
}
