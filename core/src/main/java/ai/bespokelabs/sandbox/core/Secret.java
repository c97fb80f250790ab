package ai.bespokelabs.sandbox.core;

import java.util.Objects;

/** A secret value that never prints itself. */
public final class Secret {
  private final String value;

  public Secret(String value) {
    this.value = Objects.requireNonNull(value, "value");
  }

  public String reveal() {
    return value;
  }

  @Override
  public String toString() {
    return "[REDACTED]";
  }
}
