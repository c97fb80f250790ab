package ai.bespokelabs.sandbox.adapters.codecapsules;

import ai.bespokelabs.sandbox.adapters.files.SandboxPaths;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError.Outcome;
import io.vertx.core.Future;
import io.vertx.core.http.HttpMethod;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Paths in a CodeCapsules sandbox. Its files route takes absolute paths only (its own examples name
 * {@code /workspace/...}), while the files API's relative paths mean the sandbox's working directory, where its
 * commands run: a relative path is resolved against that directory before any call, and one whose {@code ..}
 * climbs out of it is refused (422 {@code path must stay inside the sandbox}, as on every backend). Absolute
 * paths may name anything (the whole VM is the sandbox). CodeCapsules does not report the working directory,
 * so the sandbox is asked once ({@code pwd}, run as every command without a {@code cwd} is) and the answer kept
 * per resource id; an absolute path needs no asking.
 */
final class CodeCapsulesWorkdir {
  /** Bound of the {@code pwd} command. */
  static final int PWD_TIMEOUT_SECS = 30;

  private final CodeCapsulesClient client;
  private final Map<String, String> known = new ConcurrentHashMap<>();

  CodeCapsulesWorkdir(CodeCapsulesClient client) {
    this.client = client;
  }

  /** {@code path} as the files route takes it: absolute, normalized; a relative one under the working directory. */
  Future<String> absolute(String resourceId, String path, String op) {
    String p;
    try {
      p = normalize(path);
    } catch (ApiException e) {
      return Future.failedFuture(e);
    }
    if (p.startsWith("/")) {
      return Future.succeededFuture(p);
    }
    return of(resourceId, op).map(dir -> p.isEmpty() ? dir : dir.equals("/") ? "/" + p : dir + "/" + p);
  }

  /** The sandbox's working directory (asked once, then remembered). */
  Future<String> of(String resourceId, String op) {
    String dir = known.get(resourceId);
    if (dir != null) {
      return Future.succeededFuture(dir);
    }
    return client.call(HttpMethod.POST, CodeCapsulesWire.exec(resourceId),
        CodeCapsulesWire.execBody("pwd", PWD_TIMEOUT_SECS, Map.of(), null), op, 200).map(r -> {
          CodeCapsulesWire.ExecResult result = CodeCapsulesWire.ExecResult.of(CodeCapsulesClient.json(r, op));
          String printed = result == null || result.exitCode() != 0 ? "" : result.stdout();
          if (printed.endsWith("\n")) {
            printed = printed.substring(0, printed.length() - 1);
          }
          if (!printed.startsWith("/") || printed.indexOf('\n') >= 0 || printed.indexOf('\0') >= 0) {
            throw CodeCapsulesClient.of(ErrorCode.COMMAND_FAILED, op, false, Outcome.FAILED);
          }
          String found = printed.length() > 1 && printed.endsWith("/")
              ? printed.substring(0, printed.length() - 1) : printed;
          known.put(resourceId, found);
          return found;
        });
  }

  void forget(String resourceId) {
    known.remove(resourceId);
  }

  /**
   * {@code path} without empty, {@code .} and {@code ..} components: absolute ones start with {@code /} (whose
   * {@code ..} stays at the root, as in POSIX), relative ones do not and may be empty (the working directory
   * itself). A relative path whose {@code ..} leaves the working directory is refused.
   */
  static String normalize(String path) {
    if (path == null || path.isBlank()) {
      throw SandboxPaths.required();
    }
    if (path.indexOf('\0') >= 0) {
      throw ApiException.invalid("path is not a valid path");
    }
    boolean absolute = path.startsWith("/");
    Deque<String> parts = new ArrayDeque<>();
    for (String c : path.split("/")) {
      if (c.isEmpty() || c.equals(".")) {
        continue;
      }
      if (c.equals("..")) {
        if (!parts.isEmpty()) {
          parts.removeLast();
        } else if (!absolute) {
          throw SandboxPaths.escapes();
        }
        continue;
      }
      parts.addLast(c);
    }
    String joined = String.join("/", parts);
    return absolute ? "/" + joined : joined;
  }

  /** Whether {@code path} names the file system's root or the working directory itself. */
  static boolean base(String path) {
    String p = normalize(path);
    return p.isEmpty() || p.equals("/");
  }
}
