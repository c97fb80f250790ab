package ai.bespokelabs.sandbox.core.error;

import java.util.Locale;

/** The stable provider error codes of the wire contract, with their fixed public messages. */
public enum ErrorCode {
  UNKNOWN("Provider operation failed.", 502),
  BACKEND_NOT_INSTALLED("Provider backend is unavailable.", 422),
  CONFIGURATION("Provider configuration is invalid.", 422),
  CREATION_FAILED("Provider sandbox creation failed.", 502),
  EXECUTION_FAILED("Provider execution failed.", 502),
  COMMAND_FAILED("Provider operation failed.", 502),
  TIMEOUT("Provider request timed out.", 504),
  CONNECTION("Provider connection failed.", 502),
  AUTHENTICATION("Provider authentication failed.", 502),
  NOT_FOUND("Provider resource was not found.", 502),
  FEATURE_NOT_SUPPORTED("Provider operation failed.", 502),
  WORKSPACE("Provider operation failed.", 502);

  private final String publicMessage;
  private final int httpStatus;

  ErrorCode(String publicMessage, int httpStatus) {
    this.publicMessage = publicMessage;
    this.httpStatus = httpStatus;
  }

  public String wire() {
    return name().toLowerCase(Locale.ROOT);
  }

  public String publicMessage() {
    return publicMessage;
  }

  public int httpStatus() {
    return httpStatus;
  }

  public static ErrorCode fromWire(String s) {
    if (s != null) {
      for (ErrorCode c : values()) {
        if (c.wire().equals(s)) {
          return c;
        }
      }
    }
    return UNKNOWN;
  }
}
