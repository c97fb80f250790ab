package ai.bespokelabs.sandbox.core.config;

import io.vertx.core.json.JsonObject;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The one table of setting names: each environment variable (the same name is read from system properties,
 * command-line flags and a {@code BESPOKE_CONFIG_FILE}) and the key it sets in {@code conf/gateway.json},
 * a dotted path into that file's sections.
 */
final class Variables {
  /**
   * The backends' own settings ({@link BackendSettings}) on the class path, by backend name; they are listed
   * in {@link #KEYS} after {@code BESPOKE_ALLOWED_BACKENDS}.
   */
  static final List<BackendSettings> BACKENDS = declared();

  /**
   * Variable name to key in {@code conf/gateway.json} (in the order of that file), the backends' settings
   * under {@code providers.<backend>} after {@code BESPOKE_ALLOWED_BACKENDS}.
   */
  static final Map<String, String> KEYS = withBackends(BACKENDS, table(
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
      "BESPOKE_METRICS_PORT", "operations.metricsPort",
      "BESPOKE_METRICS_TOKEN", "operations.metricsToken",
      "BESPOKE_LOG_FORMAT", "operations.logFormat"));

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

  /** The backends' declared defaults, nested as in a config file ({@code providers.<backend>.<key>}). */
  static JsonObject backendDefaults() {
    JsonObject out = new JsonObject();
    for (BackendSettings b : BACKENDS) {
      for (BackendSettings.Setting s : b.settings()) {
        put(out, PROVIDER_SECTION + b.name() + "." + s.key(), s.defaultValue());
      }
    }
    return out;
  }

  private static List<BackendSettings> declared() {
    List<BackendSettings> out = new java.util.ArrayList<>();
    java.util.ServiceLoader.load(BackendSettings.class, Variables.class.getClassLoader()).forEach(out::add);
    out.sort(java.util.Comparator.comparing(BackendSettings::name));
    return List.copyOf(out);
  }

  /** {@code core} with every backend's settings inserted after {@code BESPOKE_ALLOWED_BACKENDS}. */
  private static Map<String, String> withBackends(List<BackendSettings> backends, Map<String, String> core) {
    Map<String, String> out = new LinkedHashMap<>();
    core.forEach((variable, key) -> {
      out.put(variable, key);
      if (variable.equals("BESPOKE_ALLOWED_BACKENDS")) {
        for (BackendSettings b : backends) {
          if (!java.util.regex.Pattern.matches("[a-z0-9][a-z0-9_-]{0,62}", b.name())) {
            throw new IllegalStateException("backend name " + b.name() + " cannot name a settings section");
          }
          for (BackendSettings.Setting s : b.settings()) {
            String k = PROVIDER_SECTION + b.name() + "." + s.key();
            if (core.containsKey(s.variable()) || out.containsKey(s.variable()) || out.containsValue(k)) {
              throw new IllegalStateException("backend " + b.name() + " declares " + s.variable() + " (" + k
                  + "), which another setting already names");
            }
            out.put(s.variable(), k);
          }
        }
      }
    });
    return java.util.Collections.unmodifiableMap(out);
  }

  private static Map<String, String> table(String... pairs) {
    Map<String, String> out = new LinkedHashMap<>();
    for (int i = 0; i < pairs.length; i += 2) {
      out.put(pairs[i], pairs[i + 1]);
    }
    return java.util.Collections.unmodifiableMap(out);
  }
}
