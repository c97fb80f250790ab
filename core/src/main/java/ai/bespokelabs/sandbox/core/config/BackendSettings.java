package ai.bespokelabs.sandbox.core.config;

import java.util.List;
import java.util.regex.Pattern;

/**
 * A backend's own settings, declared by the backend: each provider package lists its factory in
 * {@code META-INF/services/ai.bespokelabs.sandbox.core.config.BackendSettings}, and the settings it names join
 * the gateway's like any other: read from the environment, system properties, flags and a config file (there
 * under {@code providers.<backend>.<key>}), documented in README's settings table, and handed to the backend as
 * {@link ProviderSettings}. No shared file lists them.
 */
public interface BackendSettings {
  /** The backend name clients pass, e.g. {@code e2b}; its settings' section is {@code providers.<name>}. */
  String name();

  /** The variables the backend reads, in the order README lists them. */
  default List<Setting> settings() {
    return List.of();
  }

  /**
   * One setting.
   *
   * @param variable its name in the environment, e.g. {@code E2B_API_KEY}
   * @param key its key under {@code providers.<backend>} in a config file, e.g. {@code apiKey}
   * @param defaultValue its default (a string, number or boolean), or null: unset unless given
   */
  record Setting(String variable, String key, Object defaultValue) {
    private static final Pattern VARIABLE = Pattern.compile("[A-Z][A-Z0-9_]{1,63}");
    private static final Pattern KEY = Pattern.compile("[a-z][A-Za-z0-9]{0,63}");

    public Setting {
      if (!VARIABLE.matcher(variable).matches() || !KEY.matcher(key).matches()) {
        throw new IllegalArgumentException("a setting is an upper-case variable and a camelCase key: "
            + variable + ", " + key);
      }
      if (defaultValue != null && !(defaultValue instanceof String || defaultValue instanceof Number
          || defaultValue instanceof Boolean)) {
        throw new IllegalArgumentException(variable + ": a default is a string, a number or a boolean");
      }
    }

    /** A setting without a default. */
    public static Setting of(String variable, String key) {
      return new Setting(variable, key, null);
    }

    public static Setting of(String variable, String key, Object defaultValue) {
      return new Setting(variable, key, defaultValue);
    }
  }
}
