package ai.bespokelabs.sandbox.adapters.codecapsules;

import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A sandbox's env vars. CodeCapsules takes env vars per command only, so those given at create are kept
 * inside the sandbox ({@link #PATH}, uploaded at create through the files route) and added to each of its
 * commands; a node that does not know them (after a restart, or another node of the gateway) downloads them
 * once. Cached per resource id. The gateway's database never holds env values.
 */
final class CodeCapsulesEnv {
  /**
   * In the directory commands run in (the files route takes it made absolute there, {@link CodeCapsulesWorkdir});
   * a dot file, out of the way of {@code ls} and globs.
   */
  static final String PATH = ".bespoke-sandbox-env.json";

  private final CodeCapsulesClient client;
  private final CodeCapsulesWorkdir workdir;
  private final Map<String, Map<String, String>> cache = new ConcurrentHashMap<>();

  CodeCapsulesEnv(CodeCapsulesClient client, CodeCapsulesWorkdir workdir) {
    this.client = client;
    this.workdir = workdir;
  }

  /** Keeps the sandbox's variables in it; none is no file (a missing file reads as none). */
  Future<Void> write(String resourceId, Map<String, String> env) {
    Map<String, String> copy = env == null ? Map.of() : Map.copyOf(env);
    if (copy.isEmpty()) {
      cache.put(resourceId, copy);
      return Future.succeededFuture();
    }
    return workdir.absolute(resourceId, PATH, "create").compose(path -> client.api(HttpMethod.PUT,
            CodeCapsulesWire.files(resourceId, path))
        .putHeader("Content-Type", CodeCapsulesWire.OCTETS)
        .sendBuffer(new JsonObject(new HashMap<>(copy)).toBuffer())
        .recover(t -> Future.failedFuture(CodeCapsulesClient.transport(t, "create"))))
        .map(r -> {
          if (r.statusCode() != 200 && r.statusCode() != 201) {
            throw failure("create", r);
          }
          cache.put(resourceId, copy);
          return null;
        });
  }

  /** The sandbox's variables with {@code overrides} on top. */
  Future<Map<String, String>> with(String resourceId, Map<String, String> overrides, String op) {
    return read(resourceId, op).map(base -> {
      if (base.isEmpty()) {
        return overrides;
      }
      Map<String, String> merged = new LinkedHashMap<>(base);
      merged.putAll(overrides);
      return merged;
    });
  }

  private Future<Map<String, String>> read(String resourceId, String op) {
    Map<String, String> known = cache.get(resourceId);
    if (known != null) {
      return Future.succeededFuture(known);
    }
    return workdir.absolute(resourceId, PATH, op).compose(path -> client.api(HttpMethod.GET,
            CodeCapsulesWire.files(resourceId, path)).send()
        .recover(t -> Future.failedFuture(CodeCapsulesClient.transport(t, op))))
        .map(r -> {
          if (r.statusCode() == 404) {
            // no file: a sandbox created without env vars (or a sandbox gone, which its command finds)
            cache.put(resourceId, Map.of());
            return Map.<String, String>of();
          }
          if (r.statusCode() != 200) {
            throw failure(op, r);
          }
          Map<String, String> env = new HashMap<>();
          try {
            new JsonObject(r.body()).forEach(e -> {
              if (e.getValue() instanceof String v) {
                env.put(e.getKey(), v);
              }
            });
          } catch (RuntimeException unreadable) {
            throw CodeCapsulesClient.of(CodeCapsulesClient.generic(op), op, false,
                ai.bespokelabs.sandbox.core.error.ProviderError.Outcome.FAILED);
          }
          Map<String, String> copy = Map.copyOf(env);
          cache.put(resourceId, copy);
          return copy;
        });
  }

  private static RuntimeException failure(String op, HttpResponse<Buffer> r) {
    return CodeCapsulesClient.status(op, r.statusCode(), r.getHeader(CodeCapsulesWire.RETRY_AFTER_HEADER), r.body());
  }

  void forget(String resourceId) {
    cache.remove(resourceId);
    workdir.forget(resourceId);
  }
}
