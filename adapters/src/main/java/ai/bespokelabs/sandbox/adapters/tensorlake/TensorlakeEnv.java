package ai.bespokelabs.sandbox.adapters.tensorlake;

import io.vertx.core.Future;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A sandbox's environment variables. Tensorlake has environments per process only, so the variables given at
 * create are kept inside the sandbox ({@link #PATH}, written at create through the daemon's files API, so they
 * survive a gateway restart) and passed to every process started there; cached per sandbox.
 */
final class TensorlakeEnv {
  static final String PATH = "/tmp/.bespoke-sandbox-env.json";

  private final TensorlakeClient client;
  private final Map<String, Map<String, String>> cache = new ConcurrentHashMap<>();

  TensorlakeEnv(TensorlakeClient client) {
    this.client = client;
  }

  private static String url(TensorlakeClient.Daemon d) {
    return d.base() + "/api/v1/files?path=" + TensorlakeClient.encode(PATH);
  }

  /** Stores the sandbox's variables (an empty set too: a sandbox from a snapshot must not keep its source's). */
  Future<Void> write(TensorlakeClient.Daemon d, Map<String, String> env) {
    Map<String, String> copy = env == null ? Map.of() : Map.copyOf(env);
    return client.call("create", true, HttpMethod.PUT, url(d), d, new JsonObject(new HashMap<>(copy)).toBuffer(),
        "application/octet-stream").map(r -> {
          if (!r.ok()) {
            throw client.httpError("create", r.status(), r.headers());
          }
          cache.put(d.sandboxId(), copy);
          return null;
        });
  }

  /** The sandbox's variables; none when it holds none. */
  Future<Map<String, String>> read(TensorlakeClient.Daemon d, String op) {
    Map<String, String> known = cache.get(d.sandboxId());
    if (known != null) {
      return Future.succeededFuture(known);
    }
    return client.call(op, false, HttpMethod.GET, url(d), d, null, null).map(r -> {
      if (r.status() == 404) {
        return Map.<String, String>of();
      }
      if (!r.ok()) {
        throw client.httpError(op, r.status(), r.headers());
      }
      Map<String, String> env = new HashMap<>();
      client.json(op, r, false).forEach(e -> {
        if (e.getValue() instanceof String v) {
          env.put(e.getKey(), v);
        }
      });
      Map<String, String> copy = Map.copyOf(env);
      cache.put(d.sandboxId(), copy);
      return copy;
    });
  }

  void forget(String sandboxId) {
    cache.remove(sandboxId);
  }
}
