package ai.bespokelabs.sandbox.adapters.tensorlake;

import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import io.vertx.core.Future;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Predicate;

/**
 * Tensorlake's control plane as the adapter's parts share it: a sandbox's URL, the list filtered by our
 * marks, deleting one sandbox, and the daemon of a running sandbox ({@code sandbox_url} when the provider
 * names one, else the configured proxy), remembered per sandbox.
 */
final class TensorlakeSandboxes {
  static final Set<String> PROVISIONING = Set.of("pending");
  static final String SUSPENDED = "suspended";
  static final Set<String> STOPPED = Set.of("suspending", SUSPENDED);
  static final Set<String> GONE = Set.of("terminated");

  private final TensorlakeClient client;
  private final Map<String, TensorlakeClient.Daemon> daemons = new ConcurrentHashMap<>();

  TensorlakeSandboxes(TensorlakeClient client) {
    this.client = client;
  }

  String url(String id) {
    return client.api("/sandboxes/" + TensorlakeClient.encode(id));
  }

  /** Every sandbox whose name carries our marks and passes {@code filter}. */
  Future<List<JsonObject>> list(String op, Predicate<TensorlakeMarks> filter) {
    return client.expect(op, false, HttpMethod.GET, client.api("/sandboxes"), null, null).map(r -> {
      JsonArray items = client.json(op, r, false).getJsonArray("sandboxes");
      if (items == null) {
        throw client.badResponse(op, false);
      }
      List<JsonObject> out = new ArrayList<>();
      for (Object o : items) {
        if (o instanceof JsonObject s && id(s) != null) {
          TensorlakeMarks marks = TensorlakeMarks.parse(s.getString("name"));
          if (marks != null && filter.test(marks)) {
            out.add(s);
          }
        }
      }
      return out;
    });
  }

  /** A sandbox's id in a list or get answer ({@code sandbox_id}, or {@code id}). */
  static String id(JsonObject s) {
    Object id = s.getValue("sandbox_id", s.getValue("id"));
    return id instanceof String str && !str.isBlank() ? str : null;
  }

  /** Deletes one sandbox; true when it was already gone. */
  Future<Boolean> delete(String id, String op) {
    daemons.remove(id);
    return client.call(op, true, HttpMethod.DELETE, url(id), null, null, null).map(r -> {
      if (r.status() == 404) {
        return true;
      }
      if (!r.ok()) {
        throw client.httpError(op, r.status(), r.headers());
      }
      return false;
    });
  }

  /** Remembers where a sandbox's daemon is, from a create or get answer. */
  TensorlakeClient.Daemon remember(String id, JsonObject answer) {
    String url = answer.getString("sandbox_url");
    String base = url == null || url.isBlank() ? client.settings().sandboxUrl()
        : url.endsWith("/") ? url.substring(0, url.length() - 1) : url;
    TensorlakeClient.Daemon d = new TensorlakeClient.Daemon(base, id, answer.getString("routing_hint"));
    daemons.put(id, d);
    return d;
  }

  /** The daemon of a running sandbox: remembered, or looked up with {@code GET /sandboxes/{id}}. */
  Future<TensorlakeClient.Daemon> daemon(String id, String op) {
    if (id == null) {
      return Future.failedFuture(client.notFound(op));
    }
    TensorlakeClient.Daemon known = daemons.get(id);
    if (known != null) {
      return Future.succeededFuture(known);
    }
    return client.expect(op, false, HttpMethod.GET, url(id), null, null).map(r -> {
      JsonObject s = client.json(op, r, false);
      String status = s.getString("status", "unknown");
      if (GONE.contains(status)) {
        throw client.notFound(op);
      }
      if (!"running".equals(status)) {
        throw new ProviderException(ProviderError.of(ErrorCode.COMMAND_FAILED, TensorlakeProvider.BACKEND, op,
            true, ProviderError.Outcome.FAILED));
      }
      return remember(id, s);
    });
  }

  void forget(String id) {
    daemons.remove(id);
  }
}
