package ai.bespokelabs.sandbox.core.config;

/** A configuration value is missing or invalid; the message names the setting, never a secret value. */
public final class ConfigException extends RuntimeException {
  public ConfigException(String message) {
    super(message);
  }
}
