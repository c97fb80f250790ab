package ai.bespokelabs.sandbox.adapters.daytona;

import ai.bespokelabs.sandbox.adapters.http.HttpFailures;
import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import io.vertx.core.Future;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * Daytona's control plane as the adapter's parts share it: a sandbox's URL, the label search (cursor pages),
 * deleting one sandbox, and the toolbox URL of a sandbox, started first when Daytona stopped it.
 */
final class DaytonaSandboxes {
  static final Set<String> PROVISIONING = Set.of("creating", "restoring", "starting", "pending_build",
      "building_snapshot", "pulling_snapshot", "unknown", "resuming");
  static final Set<String> STOPPED = Set.of("stopping", "stopped", "archiving", "archived", "pausing", "paused");
  static final Set<String> FAILED = Set.of("error", "build_failed");
  static final Set<String> GONE = Set.of("destroying", "destroyed");
  private static final int MAX_PAGES = 500;
  private static final long TOOLBOX_POLL_MS = 200;

  private final DaytonaClient client;
  private final DaytonaSettings settings;
  private volatile int pageSize = 200;

  DaytonaSandboxes(DaytonaClient client, DaytonaSettings settings) {
    this.client = client;
    this.settings = settings;
  }

  /** Sandboxes per list page (Daytona allows up to 200); smaller in tests to cross pages. */
  void pageSize(int size) {
    this.pageSize = size;
  }

  String url(String id) {
    return settings.apiUrl() + "/sandbox/" + encode(id);
  }

  static String encode(String s) {
    return URLEncoder.encode(s, StandardCharsets.UTF_8).replace("+", "%20");
  }

  static ProviderException notFound(String op) {
    return new ProviderException(ProviderError.of(ErrorCode.NOT_FOUND, DaytonaProvider.BACKEND, op, false,
        ProviderError.Outcome.FAILED));
  }

  /** Every sandbox carrying {@code labels}, page after page. */
  Future<List<JsonObject>> listByLabels(JsonObject labels, String op) {
    return page(labels, op, null, 0, new ArrayList<>());
  }

  private Future<List<JsonObject>> page(JsonObject labels, String op, String cursor, int page, List<JsonObject> out) {
    if (page >= MAX_PAGES) {
      return Future.succeededFuture(out);
    }
    String url = settings.apiUrl() + "/sandbox?limit=" + pageSize + "&labels=" + encode(labels.encode())
        + (cursor == null ? "" : "&cursor=" + encode(cursor));
    return client.expect(op, false, HttpMethod.GET, url, null).compose(r -> {
      JsonObject body = client.json(op, r, false);
      JsonArray items = body.getJsonArray("items");
      if (items == null) {
        throw client.badResponse(op, false);
      }
      items.forEach(o -> {
        if (o instanceof JsonObject j) {
          out.add(j);
        }
      });
      String next = body.getString("nextCursor");
      if (next == null || next.isEmpty() || items.isEmpty()) {
        return Future.succeededFuture(out);
      }
      return page(labels, op, next, page + 1, out);
    });
  }

  /** Deletes one sandbox; true when it was already gone. */
  Future<Boolean> delete(String id, String op) {
    return client.call(op, true, HttpMethod.DELETE, url(id), null, null, client.requestTimeoutMs())
        .map(r -> deleted(r, op));
  }

  /** The answer to a delete: true when the sandbox was already gone. */
  private boolean deleted(DaytonaClient.Resp r, String op) {
    if (r.status() == 404) {
      return true;
    }
    if (!r.ok()) {
      throw client.httpError(op, r.status(), r.headers());
    }
    return false;
  }

  /**
   * The toolbox base URL of a sandbox ({@code <toolboxProxyUrl>/<id>}), starting it first when Daytona
   * stopped it for idleness, within the create timeout.
   */
  Future<String> toolbox(String resourceId, String op) {
    if (resourceId == null) {
      return Future.failedFuture(notFound(op));
    }
    return toolbox(resourceId, op, System.nanoTime() + settings.createTimeout().toNanos(), false);
  }

  private Future<String> toolbox(String resourceId, String op, long deadline, boolean startSent) {
    return client.expect(op, false, HttpMethod.GET, url(resourceId), null).compose(r -> {
      JsonObject sbx = client.json(op, r, false);
      String state = sbx.getString("state", "unknown");
      String proxy = sbx.getString("toolboxProxyUrl");
      if ("started".equals(state)) {
        if (proxy == null || proxy.isBlank()) {
          throw client.badResponse(op, false);
        }
        return Future.succeededFuture((proxy.endsWith("/") ? proxy.substring(0, proxy.length() - 1) : proxy) + "/"
            + resourceId);
      }
      if (GONE.contains(state)) {
        throw notFound(op);
      }
      if (FAILED.contains(state)) {
        throw new ProviderException(ProviderError.of(HttpFailures.opCode(op), DaytonaProvider.BACKEND, op, false,
            ProviderError.Outcome.FAILED));
      }
      boolean start = ("stopped".equals(state) || "archived".equals(state)) && !startSent;
      Future<?> started = start ? client.expect(op, true, HttpMethod.POST, url(resourceId) + "/start", null)
          : Future.succeededFuture();
      return started.compose(v -> {
        if (System.nanoTime() > deadline) {
          return Future.failedFuture(new ProviderException(ProviderError.of(ErrorCode.TIMEOUT,
              DaytonaProvider.BACKEND, op, true, ProviderError.Outcome.FAILED)));
        }
        return client.delay(TOOLBOX_POLL_MS).compose(w -> toolbox(resourceId, op, deadline, startSent || start));
      });
    });
  }
}
