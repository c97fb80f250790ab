package ai.bespokelabs.sandbox.core.config;

import java.util.List;

/**
 * A backend's settings declared on the test class path only ({@code META-INF/services}), as each provider package
 * declares its own: the loader reads them with no shared file naming them.
 */
public final class AcmeBackendSettings implements BackendSettings {
  static final String NAME = "acme";

  @Override
  public String name() {
    return NAME;
  }

  @Override
  public List<Setting> settings() {
    return List.of(
        Setting.of("ACME_API_KEY", "apiKey"),
        Setting.of("ACME_API_URL", "apiUrl"),
        Setting.of("ACME_HOST", "host", "unix:///var/run/acme.sock"),
        Setting.of("ACME_DOMAIN", "domain", "acme.test"),
        Setting.of("ACME_TEMPLATE", "template", "base"),
        Setting.of("ACME_SCOPE", "scope", "default"),
        Setting.of("ACME_TARGET", "target"),
        Setting.of("ACME_MAX_CONNECTIONS", "maxConnections", 32),
        Setting.of("ACME_EXACT", "exact", false));
  }
}
