package ai.bespokelabs.sandbox.core.error;

/**
 * A client-facing failure with an HTTP status and the {@code detail} of the {@code {"detail": ...}} body
 * (a string, or a JSON object/array). Thrown or failed anywhere, mapped to HTTP in one place.
 */
public final class ApiException extends RuntimeException {
  private final int status;
  private final transient Object detail;

  public ApiException(int status, Object detail) {
    super(detail instanceof String s ? s : "status " + status, null, false, false);
    this.status = status;
    this.detail = detail;
  }

  public int status() {
    return status;
  }

  public Object detail() {
    return detail;
  }

  public static ApiException unauthorized(String msg) {
    return new ApiException(401, msg);
  }

  public static ApiException forbidden(String msg) {
    return new ApiException(403, msg);
  }

  public static ApiException notFound(String msg) {
    return new ApiException(404, msg);
  }

  public static ApiException conflict(String msg) {
    return new ApiException(409, msg);
  }

  public static ApiException invalid(String msg) {
    return new ApiException(422, msg);
  }
}
