package ai.bespokelabs.sandbox.core.config;

import ai.bespokelabs.sandbox.core.Secret;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.io.InputStream;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * Builds {@link GatewayConfig} from three layers, later ones winning: the defaults in
 * {@code conf/gateway.json} (on the classpath), an optional JSON file named by {@code BESPOKE_CONFIG_FILE},
 * and environment variables. Every layer uses the same names (the environment variable names); provider
 * settings keep the providers' own names ({@link ProviderSettings}).
 */
public final class ConfigLoader {
  public static final String DEFAULTS_RESOURCE = "conf/gateway.json";

  /** Every setting the gateway understands. */
  public static final Set<String> KEYS = Set.of(
      "HOST", "PORT", "BESPOKE_CONFIG_FILE", "BESPOKE_DATA_DIR", "BESPOKE_DATABASE_URL",
      "BESPOKE_DATABASE_POOL_SIZE", "BESPOKE_API_KEY_PEPPER", "BESPOKE_CONTROL_PLANE_ADMIN_TOKEN",
      "BESPOKE_ALLOWED_BACKENDS", "BESPOKE_CUSTOMER_MARKUP", "BESPOKE_SUPERVISION_INTERVAL_SECS",
      "BESPOKE_MAX_REQUEST_BODY_BYTES", "BESPOKE_MAX_OUTPUT_BYTES", "BESPOKE_EXEC_OUTPUT_LIMIT_BYTES", "BESPOKE_EXEC_TIMEOUT_SECS", "BESPOKE_EXEC_JOURNAL_BYTES",
      "BESPOKE_NODE_ID", "BESPOKE_HTTP_INSTANCES", "BESPOKE_SHUTDOWN_GRACE_SECS", "BESPOKE_PRICING_FILE", "BESPOKE_MAX_UPLOAD_BYTES", "BESPOKE_GIT_ALLOW_FILE_URLS",
      "BESPOKE_GIT_ALLOW_PRIVATE", "BESPOKE_WORKDIR_ROOTS");

  private static final Pattern NAME = Pattern.compile("[a-z0-9][a-z0-9_-]{0,62}");

  private ConfigLoader() {}

  /** Loads from the classpath defaults, the optional file and the process environment. */
  public static GatewayConfig load(Map<String, String> env) {
    Map<String, String> merged = new HashMap<>(DEFAULTS);
    String file = env.get("BESPOKE_CONFIG_FILE");
    if (file != null && !file.isBlank()) {
      merged.putAll(renamed(readFile(Path.of(file))));
    }
    Map<String, String> given = new HashMap<>();
    env.forEach((key, value) -> {
      if (value != null && (KEYS.contains(key) || ProviderSettings.isProviderKey(key))) {
        given.put(key, value);
      }
    });
    merged.putAll(renamed(given));
    return fromMap(merged, env.getOrDefault("HOME", System.getProperty("user.home")));
  }

  /**
   * The defaults of every setting, from {@link #DEFAULTS_RESOURCE} alone (a null there: unset, or, for
   * {@code BESPOKE_DATA_DIR} and {@code BESPOKE_HTTP_INSTANCES}, derived: {@code ~/.bespoke-sandbox}, one per core).
   */
  static final Map<String, String> DEFAULTS = readDefaults();

  /** Former names, read when the current one is not given in the same place. */
  private static final Map<String, String> FORMER_NAMES = Map.of("BESPOKE_EXEC_OUTPUT_LIMIT_BYTES",
      "BESPOKE_MAX_OUTPUT_BYTES");

  /** One source's settings with former names replaced by the current ones (a current name given wins). */
  private static Map<String, String> renamed(Map<String, String> values) {
    Map<String, String> out = new HashMap<>(values);
    FORMER_NAMES.forEach((former, current) -> {
      String value = out.remove(former);
      if (value != null) {
        out.putIfAbsent(current, value);
      }
    });
    return out;
  }

  /** Builds the record from {@code given} over the defaults; pure, used by tests. */
  public static GatewayConfig fromMap(Map<String, String> given, String home) {
    Map<String, String> v = new HashMap<>(DEFAULTS);
    v.putAll(renamed(given));
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
    return new GatewayConfig(
        value(v, "HOST").trim(),
        intIn(v, "PORT", 0, 65535),
        Path.of(dataDir).toAbsolutePath().normalize(),
        nonBlank(v.get("BESPOKE_DATABASE_URL")).map(Secret::new),
        intIn(v, "BESPOKE_DATABASE_POOL_SIZE", 1, 1000),
        nonBlank(v.get("BESPOKE_API_KEY_PEPPER")).map(Secret::new),
        nonBlank(v.get("BESPOKE_CONTROL_PLANE_ADMIN_TOKEN")).map(Secret::new),
        allowed,
        markup,
        intIn(v, "BESPOKE_SUPERVISION_INTERVAL_SECS", 0, 86400),
        intIn(v, "BESPOKE_MAX_REQUEST_BODY_BYTES", 1024, Integer.MAX_VALUE),
        intIn(v, "BESPOKE_MAX_OUTPUT_BYTES", 1024, 256 << 20),
        intIn(v, "BESPOKE_EXEC_TIMEOUT_SECS", 1, 7 * 86400),
        intIn(v, "BESPOKE_EXEC_JOURNAL_BYTES", 256 << 10, 1 << 30),
        nonBlank(v.get("BESPOKE_NODE_ID")).map(ConfigLoader::nodeName),
        nonBlank(v.get("BESPOKE_HTTP_INSTANCES")).isEmpty() ? cores : intIn(v, "BESPOKE_HTTP_INSTANCES", 1, 1024),
        intIn(v, "BESPOKE_SHUTDOWN_GRACE_SECS", 0, 3600),
        nonBlank(v.get("BESPOKE_PRICING_FILE")).map(Path::of),
        longIn(v, "BESPOKE_MAX_UPLOAD_BYTES", 1, Long.MAX_VALUE),
        bool(v, "BESPOKE_GIT_ALLOW_FILE_URLS"),
        bool(v, "BESPOKE_GIT_ALLOW_PRIVATE"),
        nonBlank(v.get("BESPOKE_WORKDIR_ROOTS")).map(ConfigLoader::workdirRoots).orElse(List.of()),
        ProviderSettings.from(v));
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

  private static List<Path> workdirRoots(String raw) {
    List<Path> roots = new java.util.ArrayList<>();
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
      raw = DEFAULTS.get(key);
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

  private static Map<String, String> readDefaults() {
    try (InputStream in = ConfigLoader.class.getClassLoader().getResourceAsStream(DEFAULTS_RESOURCE)) {
      if (in == null) {
        return Map.of();
      }
      return flatten(new String(in.readAllBytes(), StandardCharsets.UTF_8), DEFAULTS_RESOURCE);
    } catch (IOException e) {
      throw new ConfigException("cannot read " + DEFAULTS_RESOURCE + ": " + e.getMessage());
    }
  }

  private static Map<String, String> readFile(Path file) {
    try {
      return flatten(Files.readString(file), file.toString());
    } catch (IOException e) {
      throw new ConfigException("cannot read BESPOKE_CONFIG_FILE " + file + ": " + e.getMessage());
    }
  }

  static Map<String, String> flatten(String json, String source) {
    JsonObject obj;
    try {
      obj = new JsonObject(json);
    } catch (DecodeException e) {
      throw new ConfigException(source + " is not a JSON object");
    }
    Map<String, String> out = new HashMap<>();
    for (Map.Entry<String, Object> e : obj) {
      if (!KEYS.contains(e.getKey()) && !ProviderSettings.isProviderKey(e.getKey())) {
        throw new ConfigException(source + ": unknown setting " + e.getKey());
      }
      if (e.getValue() != null) {
        out.put(e.getKey(), String.valueOf(e.getValue()));
      }
    }
    return out;
  }
}
