package ai.bespokelabs.sandbox.core.config;

import io.vertx.core.json.JsonObject;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

/**
 * The one table of setting names: each environment variable (the same name is read from system properties,
 * command-line flags and a {@code BESPOKE_CONFIG_FILE}) and the key it sets in {@code conf/gateway.json},
 * a dotted path into that file's sections.
 */
final class Variables {
  /** Variable name to key in {@code conf/gateway.json}, in the order of that file. */
  static final Map<String, String> KEYS = table(
      "HOST", "http.host",
      "PORT", "http.port",
      "BESPOKE_HTTP_INSTANCES", "http.instances",
      "BESPOKE_MAX_REQUEST_BODY_BYTES", "http.maxRequestBodyBytes",
      "BESPOKE_MAX_UPLOAD_BYTES", "http.maxUploadBytes",
      "BESPOKE_HTTP_IDLE_TIMEOUT_SECS", "http.idleTimeoutSecs",
      "BESPOKE_HTTP_MAX_CONNECTIONS_PER_CLIENT", "http.maxConnectionsPerClient",
      "BESPOKE_TRUSTED_PROXIES", "http.trustedProxies",
      "BESPOKE_PUBLIC_URL", "http.publicUrl",
      "BESPOKE_DASHBOARD_SESSION_TTL_SECS", "dashboard.sessionTtlSecs",
      "BESPOKE_SESSION_COOKIE_SECURE", "dashboard.cookieSecure",
      "BESPOKE_ENABLE_LOCAL_DASHBOARD_LOGIN", "dashboard.localLogin",
      "BESPOKE_DATA_DIR", "node.dataDir",
      "BESPOKE_NODE_ID", "node.id",
      "BESPOKE_SHUTDOWN_GRACE_SECS", "node.shutdownGraceSecs",
      "BESPOKE_SUPERVISION_INTERVAL_SECS", "node.supervisionIntervalSecs",
      "BESPOKE_SANDBOX_ROOT", "node.sandboxRoot",
      "BESPOKE_DATABASE_URL", "database.url",
      "BESPOKE_DATABASE_POOL_SIZE", "database.poolSize",
      "BESPOKE_CLUSTER", "cluster.enabled",
      "BESPOKE_CLUSTER_HOST", "cluster.host",
      "BESPOKE_CLUSTER_PORT", "cluster.port",
      "BESPOKE_CLUSTER_NAME", "cluster.name",
      "BESPOKE_CLUSTER_TLS_CA", "cluster.tlsCa",
      "BESPOKE_CLUSTER_TLS_CERT", "cluster.tlsCert",
      "BESPOKE_CLUSTER_TLS_KEY", "cluster.tlsKey",
      "BESPOKE_CLUSTER_MEMBERS", "cluster.members",
      "BESPOKE_CLUSTER_KUBERNETES", "cluster.kubernetes",
      "BESPOKE_CLUSTER_KUBERNETES_SERVICE", "cluster.kubernetesService",
      "BESPOKE_DRAIN_SECS", "cluster.drainSecs",
      "BESPOKE_API_KEY_PEPPER", "secrets.pepper",
      "BESPOKE_CONTROL_PLANE_ADMIN_TOKEN", "secrets.adminToken",
      "BESPOKE_MAX_OUTPUT_BYTES", "execution.outputLimitBytes",
      "BESPOKE_EXEC_TIMEOUT_SECS", "execution.timeoutSecs",
      "BESPOKE_EXEC_JOURNAL_BYTES", "execution.journalBytes",
      "BESPOKE_WORKDIR_ROOTS", "execution.workdirRoots",
      "BESPOKE_GIT_ALLOW_FILE_URLS", "execution.gitAllowFileUrls",
      "BESPOKE_GIT_ALLOW_PRIVATE", "execution.gitAllowPrivate",
      "BESPOKE_SANDBOX_UIDS", "execution.sandboxUids",
      "BESPOKE_SANDBOX_UID_LOCKS", "execution.sandboxUidLocks",
      "BESPOKE_SANDBOX_ALLOW_CIDRS", "execution.sandboxAllowCidrs",
      "BESPOKE_CUSTOMER_MARKUP", "ledger.customerMarkup",
      "BESPOKE_PRICING_FILE", "ledger.pricingFile",
      "BESPOKE_ALLOWED_BACKENDS", "providers.allowed",
      "DOCKER_HOST", "providers.docker.host",
      "BESPOKE_DOCKER_IMAGE", "providers.docker.image",
      "BESPOKE_DOCKER_IMAGES", "providers.docker.images",
      "BESPOKE_DOCKER_EGRESS_ELSEWHERE", "providers.docker.egressElsewhere",
      "E2B_API_KEY", "providers.e2b.apiKey",
      "E2B_API_URL", "providers.e2b.apiUrl",
      "E2B_DOMAIN", "providers.e2b.domain",
      "E2B_SANDBOX_URL", "providers.e2b.sandboxUrl",
      "E2B_TEMPLATE", "providers.e2b.template",
      "E2B_SCOPE", "providers.e2b.scope",
      "E2B_SANDBOX_TIMEOUT_SECS", "providers.e2b.sandboxTimeoutSecs",
      "E2B_REQUEST_TIMEOUT_SECS", "providers.e2b.requestTimeoutSecs",
      "DAYTONA_API_KEY", "providers.daytona.apiKey",
      "DAYTONA_API_URL", "providers.daytona.apiUrl",
      "DAYTONA_TARGET", "providers.daytona.target",
      "DAYTONA_SNAPSHOT", "providers.daytona.snapshot",
      "DAYTONA_CREATE_TIMEOUT_SECS", "providers.daytona.createTimeoutSecs",
      "DAYTONA_REQUEST_TIMEOUT_SECS", "providers.daytona.requestTimeoutSecs",
      "DAYTONA_MAX_CONNECTIONS", "providers.daytona.maxConnections",
      "RAY_ADDRESS", "providers.ray.address",
      "RAY_JOB_TOKEN", "providers.ray.jobToken",
      "RAY_REQUEST_TIMEOUT_SECS", "providers.ray.requestTimeoutSecs",
      "TENSORLAKE_API_KEY", "providers.tensorlake.apiKey",
      "TENSORLAKE_API_URL", "providers.tensorlake.apiUrl",
      "TENSORLAKE_SANDBOX_URL", "providers.tensorlake.sandboxUrl",
      "TENSORLAKE_CREATE_TIMEOUT_SECS", "providers.tensorlake.createTimeoutSecs",
      "TENSORLAKE_REQUEST_TIMEOUT_SECS", "providers.tensorlake.requestTimeoutSecs",
      "CODECAPSULES_API_KEY", "providers.codecapsules.apiKey",
      "CODECAPSULES_API_URL", "providers.codecapsules.apiUrl",
      "CODECAPSULES_FLAVOR", "providers.codecapsules.flavor",
      "CODECAPSULES_TTL_MINUTES", "providers.codecapsules.ttlMinutes",
      "CODECAPSULES_REQUEST_TIMEOUT_SECS", "providers.codecapsules.requestTimeoutSecs",
      "MODAL_TOKEN_ID", "providers.modal.tokenId",
      "MODAL_TOKEN_SECRET", "providers.modal.tokenSecret",
      "MODAL_SERVER_URL", "providers.modal.serverUrl",
      "MODAL_ENVIRONMENT", "providers.modal.environment",
      "MODAL_APP_NAME", "providers.modal.appName",
      "MODAL_IMAGE", "providers.modal.image",
      "MODAL_SANDBOX_TIMEOUT_SECS", "providers.modal.sandboxTimeoutSecs",
      "MODAL_CREATE_TIMEOUT_SECS", "providers.modal.createTimeoutSecs",
      "MODAL_REQUEST_TIMEOUT_SECS", "providers.modal.requestTimeoutSecs",
      "RUNPOD_API_KEY", "providers.runpod.apiKey",
      "RUNPOD_API_URL", "providers.runpod.apiUrl",
      "RUNPOD_IMAGE", "providers.runpod.image",
      "RUNPOD_GPU_TYPE", "providers.runpod.gpuType",
      "BESPOKE_RUNPOD_SSH_KEY", "providers.runpod.sshKey",
      "RUNPOD_CREATE_TIMEOUT_SECS", "providers.runpod.createTimeoutSecs",
      "RUNPOD_REQUEST_TIMEOUT_SECS", "providers.runpod.requestTimeoutSecs",
      "BESPOKE_METRICS_PORT", "operations.metricsPort",
      "BESPOKE_METRICS_TOKEN", "operations.metricsToken",
      "BESPOKE_LOG_FORMAT", "operations.logFormat");

  /** Former names, read when the current one is not given in the same place. */
  static final Map<String, String> FORMER_NAMES = Map.of("BESPOKE_EXEC_OUTPUT_LIMIT_BYTES",
      "BESPOKE_MAX_OUTPUT_BYTES");

  /** The variable naming a config file; it has no key in {@code conf/gateway.json}. */
  static final String CONFIG_FILE = "BESPOKE_CONFIG_FILE";

  private static final String PROVIDER_SECTION = "providers.";

  private Variables() {}

  /** Whether {@code variable} configures one provider (its settings reach {@link ProviderSettings}). */
  static boolean isProviderVariable(String variable) {
    String key = KEYS.get(variable);
    return key != null && key.startsWith(PROVIDER_SECTION) && key.indexOf('.', PROVIDER_SECTION.length()) > 0;
  }

  /** The value at a dotted {@code key} of a nested object, if there is one. */
  static Optional<Object> at(JsonObject root, String key) {
    JsonObject section = root;
    String[] parts = key.split("\\.");
    for (int i = 0; i < parts.length - 1 && section != null; i++) {
      section = section.getValue(parts[i]) instanceof JsonObject o ? o : null;
    }
    return section == null ? Optional.empty() : Optional.ofNullable(section.getValue(parts[parts.length - 1]));
  }

  /** Sets a dotted {@code key} of a nested object, creating its sections. */
  static void put(JsonObject root, String key, Object value) {
    JsonObject section = root;
    String[] parts = key.split("\\.");
    for (int i = 0; i < parts.length - 1; i++) {
      if (!(section.getValue(parts[i]) instanceof JsonObject)) {
        section.put(parts[i], new JsonObject());
      }
      section = section.getJsonObject(parts[i]);
    }
    section.put(parts[parts.length - 1], value);
  }

  /**
   * One source's settings as the nested object of {@code conf/gateway.json}. Settings are named by their
   * variables (a former name is read when the current one is not given here); a config file ({@code strict})
   * may also use the file's own nested keys, and may name nothing else. Other names are ignored (the
   * environment holds much else). Null values are left out, so they never hide another source's value.
   */
  static JsonObject nest(JsonObject given, boolean strict, String source) {
    JsonObject out = new JsonObject();
    for (Map.Entry<String, Object> e : given) {
      String name = e.getKey();
      if (KEYS.containsKey(name) || FORMER_NAMES.containsKey(name) || !strict) {
        continue;
      }
      if (!isSection(name) || !(e.getValue() instanceof JsonObject section)) {
        throw new ConfigException(source + ": unknown setting " + name);
      }
      nestSection(out, name, section, source);
    }
    FORMER_NAMES.forEach((former, current) -> {
      Object value = given.getValue(current) != null ? given.getValue(current) : given.getValue(former);
      if (value != null) {
        put(out, KEYS.get(current), value);
      }
    });
    KEYS.forEach((variable, key) -> {
      Object value = given.getValue(variable);
      if (value != null && !FORMER_NAMES.containsValue(variable)) {
        put(out, key, value);
      }
    });
    return out;
  }

  private static void nestSection(JsonObject out, String prefix, JsonObject section, String source) {
    for (Map.Entry<String, Object> e : section) {
      String key = prefix + "." + e.getKey();
      if (e.getValue() instanceof JsonObject inner && isSection(key)) {
        nestSection(out, key, inner, source);
      } else if (!KEYS.containsValue(key)) {
        throw new ConfigException(source + ": unknown setting " + key);
      } else if (e.getValue() != null) {
        put(out, key, e.getValue());
      }
    }
  }

  /** Whether {@code key} names a section of {@code conf/gateway.json} (such as {@code http}). */
  private static boolean isSection(String key) {
    return KEYS.values().stream().anyMatch(k -> k.startsWith(key + "."));
  }

  /** Every setting of a nested object as text under its variable name; absent and null ones are left out. */
  static Map<String, String> byVariable(JsonObject nested) {
    Map<String, String> out = new LinkedHashMap<>();
    KEYS.forEach((variable, key) -> at(nested, key).ifPresent(v -> out.put(variable, String.valueOf(v))));
    return out;
  }

  private static Map<String, String> table(String... pairs) {
    Map<String, String> out = new LinkedHashMap<>();
    for (int i = 0; i < pairs.length; i += 2) {
      out.put(pairs[i], pairs[i + 1]);
    }
    return java.util.Collections.unmodifiableMap(out);
  }
}
