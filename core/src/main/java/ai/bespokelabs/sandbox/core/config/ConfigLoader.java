package ai.bespokelabs.sandbox.core.config;

import ai.bespokelabs.sandbox.core.Secret;
import ai.bespokelabs.sandbox.core.net.Cidr;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonObject;
import io.vertx.config.ConfigRetriever;
import io.vertx.config.ConfigRetrieverOptions;
import io.vertx.config.ConfigStoreOptions;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.file.FileSystemOptions;
import java.io.IOException;
import java.io.InputStream;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;

/**
 * Builds {@link GatewayConfig} with vertx-config from layers, later ones winning: the defaults in
 * {@code conf/gateway.json} (on the classpath; every setting is there, nested in sections), an optional JSON
 * file named by {@code BESPOKE_CONFIG_FILE}, environment variables, system properties, and command-line
 * flags. Every layer but the defaults names settings by their variable names ({@link Variables}, the one
 * table of names); a config file may also use the nested keys of {@code conf/gateway.json}.
 *
 * <p>Loading is synchronous and runs on a short-lived Vert.x instance of its own: it comes before the
 * gateway's Vert.x instance exists, so that a bad setting stops the start before anything is started, and
 * the data directory's lock and secrets are taken from it first.
 */
public final class ConfigLoader {
  public static final String DEFAULTS_RESOURCE = "conf/gateway.json";

  private static final Pattern NAME = Pattern.compile("[a-z0-9][a-z0-9_-]{0,62}");
  private static final long LOAD_TIMEOUT_SECS = 30;
  private static final Pattern CLUSTER_NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,62}");
  private static final Pattern MEMBER = Pattern.compile("[A-Za-z0-9._\\[\\]:-]+:[0-9]{1,5}");

  /** The defaults of every setting: {@link #DEFAULTS_RESOURCE}'s, and those the backends declare. */
  static final JsonObject DEFAULTS = readDefaults();

  /**
   * The defaults by variable name (a null there is left out: unset, or, for {@code BESPOKE_DATA_DIR} and
   * {@code BESPOKE_HTTP_INSTANCES}, derived: {@code ~/.bespoke-sandbox}, one per core).
   */
  private static final Map<String, String> DEFAULT_VALUES = Variables.byVariable(DEFAULTS);

  private ConfigLoader() {}

  /**
   * This process's configuration: the defaults, the config file, the process environment, system
   * properties, then {@code flags} (settings given on the command line, by variable name).
   */
  public static GatewayConfig fromProcess(Map<String, String> flags) {
    Optional<String> file = nonBlank(flags.get(Variables.CONFIG_FILE))
        .or(() -> nonBlank(System.getProperty(Variables.CONFIG_FILE)))
        .or(() -> nonBlank(System.getenv(Variables.CONFIG_FILE)));
    String home = Optional.ofNullable(System.getenv("HOME")).orElse(System.getProperty("user.home"));
    JsonObject raw = new JsonObject().put("raw-data", true);
    return load(file, List.of(
        new ConfigStoreOptions().setType("env").setFormat(VariablesFormat.NAME).setConfig(raw.copy()),
        new ConfigStoreOptions().setType("sys").setFormat(VariablesFormat.NAME).setConfig(raw.copy().put("cache", false)),
        variables(flags)), home);
  }

  /** Loads from the classpath defaults, the optional file and {@code env} standing for the environment. */
  public static GatewayConfig load(Map<String, String> env) {
    return load(env, Map.of());
  }

  /** As {@link #load(Map)}, with {@code systemProperties} over {@code env}. */
  static GatewayConfig load(Map<String, String> env, Map<String, String> systemProperties) {
    Optional<String> file = nonBlank(systemProperties.get(Variables.CONFIG_FILE))
        .or(() -> nonBlank(env.get(Variables.CONFIG_FILE)));
    return load(file, List.of(variables(env), variables(systemProperties)),
        env.getOrDefault("HOME", System.getProperty("user.home")));
  }

  /** Builds the record from {@code given} (by variable name) over the defaults; used by tests. */
  public static GatewayConfig fromMap(Map<String, String> given, String home) {
    return load(Optional.empty(), List.of(variables(given)), home);
  }

  /**
   * The provider settings of {@code overrides} (by variable name) over the defaults, merged as a full load
   * merges them; for a backend built on its own, as its tests do.
   */
  static ProviderSettings providerSettings(Map<String, String> overrides) {
    JsonObject merged = retrieve(List.of(defaults(), variables(overrides)), Optional.empty());
    return ProviderSettings.from(Variables.byVariable(merged), DEFAULT_VALUES);
  }

  private static GatewayConfig load(Optional<String> file, List<ConfigStoreOptions> overrides, String home) {
    List<ConfigStoreOptions> stores = new ArrayList<>();
    stores.add(defaults());
    file.ifPresent(path -> stores.add(new ConfigStoreOptions().setType("file").setFormat(ConfigFileFormat.NAME)
        .setConfig(new JsonObject().put("path", path))));
    stores.addAll(overrides);
    return build(Variables.byVariable(retrieve(stores, file)), home);
  }

  private static ConfigStoreOptions defaults() {
    return new ConfigStoreOptions().setType("json").setConfig(DEFAULTS.copy());
  }

  private static ConfigStoreOptions variables(Map<String, String> values) {
    JsonObject given = new JsonObject();
    values.forEach((k, v) -> {
      if (v != null) {
        given.put(k, v);
      }
    });
    return new ConfigStoreOptions().setType("json").setFormat(VariablesFormat.NAME).setConfig(given);
  }

  /** The stores merged by a retriever on a Vert.x instance that lives for this call only. */
  private static JsonObject retrieve(List<ConfigStoreOptions> stores, Optional<String> file) {
    Vertx vertx = Vertx.vertx(new VertxOptions().setFileSystemOptions(
        new FileSystemOptions().setClassPathResolvingEnabled(false).setFileCachingEnabled(false)));
    try {
      ConfigRetriever retriever = ConfigRetriever.create(vertx,
          new ConfigRetrieverOptions().setScanPeriod(0).setStores(stores));
      return retriever.getConfig().eventually(retriever::close).await(LOAD_TIMEOUT_SECS, TimeUnit.SECONDS);
    } catch (Exception e) {
      for (Throwable t = e; t != null; t = t.getCause()) {
        if (t instanceof ConfigException c) {
          throw c;
        }
      }
      Throwable root = e;
      while (root.getCause() != null) {
        root = root.getCause();
      }
      throw new ConfigException(file.map(f -> "cannot read " + Variables.CONFIG_FILE + " " + f + ": ")
          .orElse("cannot load the configuration: ") + Optional.ofNullable(root.getMessage()).orElse(root.toString()));
    } finally {
      vertx.close().await();
    }
  }

  /** The typed configuration from every setting by variable name; validates each. */
  private static GatewayConfig build(Map<String, String> v, String home) {
    String dataDir = nonBlank(v.get("BESPOKE_DATA_DIR")).orElse(Path.of(home, ".bespoke-sandbox").toString());
    Optional<List<String>> allowed = nonBlank(v.get("BESPOKE_ALLOWED_BACKENDS")).map(ConfigLoader::backendList);
    BigDecimal markup;
    try {
      markup = new BigDecimal(value(v, "BESPOKE_CUSTOMER_MARKUP").trim());
    } catch (NumberFormatException e) {
      throw new ConfigException("BESPOKE_CUSTOMER_MARKUP must be a decimal number");
    }
    if (markup.signum() < 0) {
      throw new ConfigException("BESPOKE_CUSTOMER_MARKUP must not be negative");
    }
    int cores = Runtime.getRuntime().availableProcessors();
    int[] uids = uidRange(value(v, "BESPOKE_SANDBOX_UIDS"));
    return new GatewayConfig(
        new HttpConfig(
            value(v, "HOST").trim(),
            intIn(v, "PORT", 0, 65535),
            nonBlank(v.get("BESPOKE_HTTP_INSTANCES")).isEmpty() ? cores : intIn(v, "BESPOKE_HTTP_INSTANCES", 1, 1024),
            intIn(v, "BESPOKE_MAX_REQUEST_BODY_BYTES", 1024, Integer.MAX_VALUE),
            longIn(v, "BESPOKE_MAX_UPLOAD_BYTES", 1, Long.MAX_VALUE),
            intIn(v, "BESPOKE_HTTP_IDLE_TIMEOUT_SECS", 1, 86400),
            intIn(v, "BESPOKE_HTTP_MAX_CONNECTIONS_PER_CLIENT", 0, 1_000_000),
            nonBlank(v.get("BESPOKE_TRUSTED_PROXIES")).map(ConfigLoader::trustedProxies).orElse(List.of()),
            nonBlank(v.get("BESPOKE_PUBLIC_URL")).map(ConfigLoader::publicUrl)),
        new DashboardConfig(
            intIn(v, "BESPOKE_DASHBOARD_SESSION_TTL_SECS", 60, 30 * 86400),
            bool(v, "BESPOKE_SESSION_COOKIE_SECURE"),
            bool(v, "BESPOKE_ENABLE_LOCAL_DASHBOARD_LOGIN")),
        new NodeConfig(
            Path.of(dataDir).toAbsolutePath().normalize(),
            nonBlank(v.get("BESPOKE_NODE_ID")).map(ConfigLoader::nodeName),
            intIn(v, "BESPOKE_SHUTDOWN_GRACE_SECS", 0, 3600),
            intIn(v, "BESPOKE_SUPERVISION_INTERVAL_SECS", 0, 86400),
            nonBlank(v.get("BESPOKE_SANDBOX_ROOT")).map(r -> absoluteDirectory("BESPOKE_SANDBOX_ROOT", r))),
        new DatabaseConfig(
            nonBlank(v.get("BESPOKE_DATABASE_URL")).map(Secret::new),
            intIn(v, "BESPOKE_DATABASE_POOL_SIZE", 1, 1000)),
        cluster(v),
        new SecretsConfig(
            nonBlank(v.get("BESPOKE_API_KEY_PEPPER")).map(Secret::new),
            nonBlank(v.get("BESPOKE_CONTROL_PLANE_ADMIN_TOKEN")).map(Secret::new)),
        new ExecutionConfig(
            intIn(v, "BESPOKE_MAX_OUTPUT_BYTES", 1024, 256 << 20),
            intIn(v, "BESPOKE_EXEC_TIMEOUT_SECS", 1, 7 * 86400),
            intIn(v, "BESPOKE_EXEC_JOURNAL_BYTES", 256 << 10, 1 << 30),
            nonBlank(v.get("BESPOKE_WORKDIR_ROOTS")).map(ConfigLoader::workdirRoots).orElse(List.of()),
            bool(v, "BESPOKE_GIT_ALLOW_FILE_URLS"),
            bool(v, "BESPOKE_GIT_ALLOW_PRIVATE"),
            uids[0], uids[1] - uids[0] + 1,
            absoluteDirectory("BESPOKE_SANDBOX_UID_LOCKS", value(v, "BESPOKE_SANDBOX_UID_LOCKS")),
            nonBlank(v.get("BESPOKE_SANDBOX_ALLOW_CIDRS")).map(ConfigLoader::cidrs).orElse(List.of())),
        new LedgerConfig(markup, nonBlank(v.get("BESPOKE_PRICING_FILE")).map(Path::of)),
        new ProvidersConfig(allowed, ProviderSettings.from(v, DEFAULT_VALUES)),
        new OperationsConfig(
            nonBlank(v.get("BESPOKE_METRICS_PORT")).isEmpty() ? Optional.empty()
                : Optional.of(intIn(v, "BESPOKE_METRICS_PORT", 0, 65535)),
            nonBlank(v.get("BESPOKE_METRICS_TOKEN")).map(Secret::new),
            logFormat(value(v, "BESPOKE_LOG_FORMAT"))));
  }

  private static String logFormat(String raw) {
    String format = raw.trim().toLowerCase(Locale.ROOT);
    if (!format.equals("text") && !format.equals("json")) {
      throw new ConfigException("BESPOKE_LOG_FORMAT must be text or json");
    }
    return format;
  }

  /** The cluster section; a cluster needs an external database, every node's (the embedded one is this node's). */
  private static ClusterConfig cluster(Map<String, String> v) {
    boolean enabled = bool(v, "BESPOKE_CLUSTER");
    boolean kubernetes = bool(v, "BESPOKE_CLUSTER_KUBERNETES");
    Optional<String> service = nonBlank(v.get("BESPOKE_CLUSTER_KUBERNETES_SERVICE"));
    if (enabled && nonBlank(v.get("BESPOKE_DATABASE_URL")).isEmpty()) {
      throw new ConfigException("BESPOKE_CLUSTER=true needs BESPOKE_DATABASE_URL: every node of a cluster uses one"
          + " external PostgreSQL, and the embedded database belongs to one node");
    }
    if (enabled && kubernetes && service.isEmpty()) {
      throw new ConfigException("BESPOKE_CLUSTER_KUBERNETES=true needs BESPOKE_CLUSTER_KUBERNETES_SERVICE");
    }
    List<String> members = nonBlank(v.get("BESPOKE_CLUSTER_MEMBERS")).stream()
        .flatMap(raw -> Arrays.stream(raw.split(","))).map(String::trim).filter(m -> !m.isEmpty()).toList();
    for (String m : members) {
      if (!MEMBER.matcher(m).matches()) {
        throw new ConfigException("BESPOKE_CLUSTER_MEMBERS must list host:port seeds separated by commas: " + m);
      }
    }
    String name = value(v, "BESPOKE_CLUSTER_NAME").trim();
    if (!CLUSTER_NAME.matcher(name).matches()) {
      throw new ConfigException("BESPOKE_CLUSTER_NAME must be 1-63 characters of a-z, A-Z, 0-9, '.', '_' or '-'");
    }
    Optional<ClusterConfig.Tls> tls = Optional.empty();
    if (enabled) {
      tls = Optional.of(new ClusterConfig.Tls(tlsFile(v, "BESPOKE_CLUSTER_TLS_CA"), tlsFile(v, "BESPOKE_CLUSTER_TLS_CERT"),
          tlsFile(v, "BESPOKE_CLUSTER_TLS_KEY")));
    }
    return new ClusterConfig(enabled, value(v, "BESPOKE_CLUSTER_HOST").trim(), intIn(v, "BESPOKE_CLUSTER_PORT", 1, 65534),
        name, tls, members, kubernetes, service, intIn(v, "BESPOKE_DRAIN_SECS", 0, 3600));
  }

  /** A PEM file of the cluster identity, required on a clustered node (its contents are read at start). */
  private static Path tlsFile(Map<String, String> v, String key) {
    return nonBlank(v.get(key)).map(Path::of).orElseThrow(() -> new ConfigException("BESPOKE_CLUSTER=true needs " + key
        + ": every node proves its membership with a certificate of the cluster's CA (see deploy/certs/issue)"));
  }

  private static List<String> backendList(String raw) {
    List<String> list = Arrays.stream(raw.split(","))
        .map(s -> s.trim().toLowerCase(Locale.ROOT))
        .filter(s -> !s.isEmpty())
        .distinct()
        .sorted()
        .toList();
    for (String b : list) {
      if (!NAME.matcher(b).matches()) {
        throw new ConfigException("BESPOKE_ALLOWED_BACKENDS contains an invalid backend name: " + b);
      }
    }
    return list;
  }

  /** {@code first-last}: a range of host uids, both ends included. */
  private static int[] uidRange(String raw) {
    java.util.regex.Matcher m = java.util.regex.Pattern.compile("\\s*([0-9]{1,10})\\s*-\\s*([0-9]{1,10})\\s*")
        .matcher(raw);
    if (m.matches()) {
      long first = Long.parseLong(m.group(1));
      long last = Long.parseLong(m.group(2));
      if (first >= 1 && first <= last && last < Integer.MAX_VALUE) {
        return new int[] {(int) first, (int) last};
      }
    }
    throw new ConfigException("BESPOKE_SANDBOX_UIDS must be a range of host uids first-last, e.g. 1000000-1065535");
  }

  private static Path absoluteDirectory(String name, String raw) {
    try {
      Path p = Path.of(raw.trim());
      if (p.isAbsolute() && p.normalize().getNameCount() > 0) {
        return p.normalize();
      }
    } catch (java.nio.file.InvalidPathException e) {
      // refused below
    }
    throw new ConfigException(name + " must be an absolute directory other than /");
  }

  /** Comma-separated CIDR ranges (a bare address is its own range), canonical and without duplicates. */
  private static List<Cidr> cidrs(String raw) {
    List<Cidr> out = new ArrayList<>();
    for (String part : raw.split(",")) {
      if (part.isBlank()) {
        continue;
      }
      Cidr c = Cidr.parse(part).orElseThrow(() -> new ConfigException("BESPOKE_SANDBOX_ALLOW_CIDRS must list"
          + " address ranges such as 10.1.0.0/16 or fd12::/64 separated by commas: " + part.trim()));
      if (!out.contains(c)) {
        out.add(c);
      }
    }
    return out;
  }

  private static List<Path> workdirRoots(String raw) {
    List<Path> roots = new ArrayList<>();
    for (String part : raw.split(",")) {
      String dir = part.trim();
      if (dir.isEmpty()) {
        continue;
      }
      Path p;
      try {
        p = Path.of(dir);
      } catch (java.nio.file.InvalidPathException e) {
        throw new ConfigException("BESPOKE_WORKDIR_ROOTS must list absolute directories separated by commas");
      }
      if (!p.isAbsolute()) {
        throw new ConfigException("BESPOKE_WORKDIR_ROOTS must list absolute directories separated by commas");
      }
      if (p.normalize().getNameCount() == 0) {
        throw new ConfigException("BESPOKE_WORKDIR_ROOTS must not allow the whole file system (/)");
      }
      roots.add(p.normalize());
    }
    return List.copyOf(roots);
  }

  private static List<AddressRange> trustedProxies(String raw) {
    List<AddressRange> out = new ArrayList<>();
    for (String part : raw.split(",")) {
      if (!part.isBlank()) {
        try {
          out.add(AddressRange.parse(part));
        } catch (IllegalArgumentException e) {
          throw new ConfigException("BESPOKE_TRUSTED_PROXIES must list IP addresses or CIDR ranges separated by"
              + " commas: " + e.getMessage());
        }
      }
    }
    return List.copyOf(out);
  }

  /** An absolute http(s) URL with a host and nothing after its path, returned without a trailing slash. */
  private static String publicUrl(String raw) {
    String problem = "BESPOKE_PUBLIC_URL must be an absolute http:// or https:// URL with a host and no query,"
        + " fragment or credentials: " + raw;
    java.net.URI u;
    try {
      u = new java.net.URI(raw);
    } catch (java.net.URISyntaxException e) {
      throw new ConfigException(problem);
    }
    String scheme = u.getScheme() == null ? "" : u.getScheme().toLowerCase(Locale.ROOT);
    if (!(scheme.equals("http") || scheme.equals("https")) || u.getHost() == null || u.getRawUserInfo() != null
        || u.getRawQuery() != null || u.getRawFragment() != null || u.isOpaque()) {
      throw new ConfigException(problem);
    }
    String url = u.toString();
    while (url.endsWith("/")) {
      url = url.substring(0, url.length() - 1);
    }
    return url;
  }

  private static String nodeName(String raw) {
    String id = raw.trim();
    if (!NAME.matcher(id).matches()) {
      throw new ConfigException("BESPOKE_NODE_ID must be 1-63 characters of a-z, 0-9, '_' or '-'");
    }
    return id;
  }

  /** The value of {@code key}, its default when given blank. */
  private static String value(Map<String, String> v, String key) {
    String raw = v.get(key);
    if (raw == null || raw.isBlank()) {
      raw = DEFAULT_VALUES.get(key);
    }
    if (raw == null) {
      throw new ConfigException(key + " needs a value");
    }
    return raw;
  }

  private static int intIn(Map<String, String> v, String key, int min, int max) {
    String raw = value(v, key);
    try {
      int n = Integer.parseInt(raw.trim());
      if (n < min || n > max) {
        throw new ConfigException(key + " must be between " + min + " and " + max);
      }
      return n;
    } catch (NumberFormatException e) {
      throw new ConfigException(key + " must be an integer");
    }
  }

  private static boolean bool(Map<String, String> v, String key) {
    String raw = value(v, key);
    return switch (raw.trim().toLowerCase(Locale.ROOT)) {
      case "true", "1", "yes" -> true;
      case "false", "0", "no" -> false;
      default -> throw new ConfigException(key + " must be true or false");
    };
  }

  private static long longIn(Map<String, String> v, String key, long min, long max) {
    String raw = value(v, key);
    try {
      long n = Long.parseLong(raw.trim());
      if (n < min || n > max) {
        throw new ConfigException(key + " must be between " + min + " and " + max);
      }
      return n;
    } catch (NumberFormatException e) {
      throw new ConfigException(key + " must be an integer");
    }
  }

  private static Optional<String> nonBlank(String s) {
    return s == null || s.isBlank() ? Optional.empty() : Optional.of(s.trim());
  }

  /** The gateway's own defaults ({@link #DEFAULTS_RESOURCE}) with the backends' declared ones. */
  private static JsonObject readDefaults() {
    try (InputStream in = ConfigLoader.class.getClassLoader().getResourceAsStream(DEFAULTS_RESOURCE)) {
      if (in == null) {
        throw new ConfigException(DEFAULTS_RESOURCE + " is missing from the classpath");
      }
      JsonObject own = new JsonObject(new String(in.readAllBytes(), StandardCharsets.UTF_8));
      JsonObject backends = Variables.backendDefaults().getJsonObject("providers", new JsonObject());
      backends.forEach(e -> own.getJsonObject("providers").put(e.getKey(), e.getValue()));
      return own;
    } catch (IOException | DecodeException e) {
      throw new ConfigException("cannot read " + DEFAULTS_RESOURCE + ": " + e.getMessage());
    }
  }
}
