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

  /** A symbolic link met on the way or at the end of a host sandbox's path: links are never followed. */
  public static ApiException symlink() {
    return ApiException.invalid("path names or goes through a symbolic link; links are not followed");
  }

  /** A FIFO, socket or device: refused before anything opens it. */
  public static ApiException special() {
    return ApiException.invalid("path is not a regular file (a FIFO, socket or device)");
  }

  public static ApiException tooDeep(int max) {
    return ApiException.invalid("path is too deep: at most " + max + " levels");
  }

  /** Sandbox code replaced an entry while the gateway was resolving or opening it. */
  public static ApiException changed() {
    return ApiException.conflict("path changed while it was being used; try again");
  }

  public static ApiException required() {
    return ApiException.invalid("path is required");
  }
}
