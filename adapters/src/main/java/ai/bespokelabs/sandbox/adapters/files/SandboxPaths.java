package ai.bespokelabs.sandbox.adapters.files;

import ai.bespokelabs.sandbox.core.error.ApiException;

/** The files API's error answers, shared by every backend. */
public final class SandboxPaths {
  private SandboxPaths() {}

  public static ApiException notFound() {
    return ApiException.notFound("file not found");
  }

  public static ApiException escapes() {
    return ApiException.invalid("path must stay inside the sandbox");
  }

  public static ApiException isDirectory() {
    return ApiException.invalid("path is a directory");
  }

  public static ApiException notEmpty() {
    return ApiException.conflict("directory is not empty; pass recursive=true to delete it");
  }

  public static ApiException required() {
    return ApiException.invalid("path is required");
  }
}
