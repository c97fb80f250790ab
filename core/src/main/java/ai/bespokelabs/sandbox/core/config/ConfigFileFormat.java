package ai.bespokelabs.sandbox.core.config;

/**
 * The vertx-config format {@value #NAME} of the file named by {@code BESPOKE_CONFIG_FILE}: a JSON object
 * with settings under their variable names or in the nested layout of {@code conf/gateway.json}; any other
 * name stops the start, naming it.
 */
public final class ConfigFileFormat extends SettingsFormat {
  public static final String NAME = "bespoke-config-file";

  public ConfigFileFormat() {
    super(NAME, true);
  }
}
