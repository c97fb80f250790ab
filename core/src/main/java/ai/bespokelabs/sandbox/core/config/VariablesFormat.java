package ai.bespokelabs.sandbox.core.config;

/**
 * The vertx-config format {@value #NAME}: a store's flat settings under their variable names (the
 * environment, system properties, command-line flags) become the nested object of {@code conf/gateway.json};
 * names that are no setting are ignored.
 */
public final class VariablesFormat extends SettingsFormat {
  public static final String NAME = "bespoke-variables";

  public VariablesFormat() {
    super(NAME, false);
  }
}
