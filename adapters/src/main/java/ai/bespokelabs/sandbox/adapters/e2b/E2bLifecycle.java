package ai.bespokelabs.sandbox.adapters.e2b;

import static ai.bespokelabs.sandbox.adapters.e2b.E2bClient.expect;
import static ai.bespokelabs.sandbox.adapters.e2b.E2bClient.json;
import static ai.bespokelabs.sandbox.adapters.e2b.E2bClient.segment;
import static ai.bespokelabs.sandbox.adapters.e2b.E2bClient.send;
import static ai.bespokelabs.sandbox.adapters.e2b.E2bProvider.BACKEND;
import static ai.bespokelabs.sandbox.adapters.e2b.E2bProvider.DEADLINE_GRACE_SECS;
import static ai.bespokelabs.sandbox.adapters.e2b.E2bProvider.META_ORG;
import static ai.bespokelabs.sandbox.adapters.e2b.E2bProvider.META_SANDBOX;
import static ai.bespokelabs.sandbox.adapters.e2b.E2bProvider.META_SCOPE;
import static ai.bespokelabs.sandbox.adapters.e2b.E2bProvider.META_TOKEN;

import ai.bespokelabs.sandbox.adapters.spi.Inventory;
import ai.bespokelabs.sandbox.adapters.spi.Lifecycle;
import ai.bespokelabs.sandbox.core.bus.Messages.CreateSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.DestroySandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.Resource;
import ai.bespokelabs.sandbox.core.bus.Messages.SandboxDestroyed;
import ai.bespokelabs.sandbox.core.bus.Messages.SetTimeout;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError;
import ai.bespokelabs.sandbox.core.error.ProviderError.Outcome;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import ai.bespokelabs.sandbox.core.model.SandboxConfig;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpRequest;
import io.vertx.ext.web.client.HttpResponse;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * E2B's control plane: creating, killing, adopting sandboxes and moving their lifetime along; listing ours
 * for reconciliation, and the health check.
 */
final class E2bLifecycle implements Lifecycle, Inventory {
  private static final Logger LOG = LoggerFactory.getLogger(E2bLifecycle.class);

  private final E2bClient client;
  private final E2bSettings settings;

  E2bLifecycle(E2bClient client) {
    this.client = client;
    this.settings = client.settings();
  }

  /**
   * {@code POST /sandboxes} with our marks in its metadata. When the answer is lost (timeout, broken
   * connection, 5xx) the sandbox may exist: it is looked up by its create token and killed, and the error
   * reports {@code cleanup_status}. Settings E2B has no equivalent for (GPU, host workdir, git checkout) are 422.
   */
  @Override
  public Future<String> create(CreateSandbox request) {
    JsonObject body;
    try {
      body = createBody(request);
    } catch (ApiException e) {
      return Future.failedFuture(e);
    }
    return client.api(HttpMethod.POST, "/sandboxes").putHeader("Content-Type", "application/json")
        .sendBuffer(body.toBuffer()).transform(ar -> {
          if (ar.failed()) {
            return lostCreate(request, E2bErrors.transport(ar.cause(), "create"));
          }
          HttpResponse<Buffer> r = ar.result();
          if (r.statusCode() != 201 && r.statusCode() != 200) {
            return lostCreate(request, E2bErrors.status(r.statusCode(), "create", r.getHeader("Retry-After"), false));
          }
          JsonObject created = json(r, "create"); // an unreadable answer is reported as such
          String id = created.getString("sandboxID");
          if (id == null || id.isBlank()) {
            return cleanUpAfterLostCreate(request,
                ProviderError.of(ErrorCode.CREATION_FAILED, BACKEND, "create", false, Outcome.UNKNOWN));
          }
          client.remember(id, created.getString("domain"), created.getString("envdAccessToken"));
          return Future.succeededFuture(id);
        });
  }

  private JsonObject createBody(CreateSandbox request) {
    SandboxConfig c = request.config();
    if (c.gpu() != null) {
      throw ApiException.invalid("gpu is not supported by the e2b backend");
    }
    if (c.workdir() != null || c.gitRepo() != null) {
      throw ApiException.invalid("workdir and git_repo are not supported by the e2b backend");
    }
    JsonObject metadata = new JsonObject()
        .put(META_SCOPE, settings.scope())
        .put(META_SANDBOX, request.sandboxId())
        .put(META_ORG, request.organizationId())
        .put(META_TOKEN, request.createToken());
    JsonObject body = new JsonObject()
        .put("templateID", template(c))
        .put("timeout", c.timeoutSecs() == null ? settings.sandboxTimeoutSecs() : c.timeoutSecs() + DEADLINE_GRACE_SECS)
        .put("metadata", metadata)
        .put("secure", true);
    if (c.envVars() != null && !c.envVars().isEmpty()) {
      body.put("envVars", new JsonObject(new LinkedHashMap<>(c.envVars())));
    }
    if (c.allowInternet() != null) {
      body.put("allow_internet_access", c.allowInternet());
    }
    return body;
  }

  /** The template: the config's template, else its snapshot (a snapshot is a template), else its image. */
  private String template(SandboxConfig c) {
    if (c.template() != null) {
      return c.template();
    }
    if (c.snapshotId() != null) {
      return c.snapshotId();
    }
    return c.image() != null ? c.image() : settings.template();
  }

  /** A failed {@code POST /sandboxes}: cleaned up by create token when the outcome is unknown. */
  private <T> Future<T> lostCreate(CreateSandbox request, ProviderException e) {
    return e.error().outcome() == Outcome.UNKNOWN ? cleanUpAfterLostCreate(request, e.error()) : Future.failedFuture(e);
  }

  /**
   * Finds the sandboxes carrying this create's token and kills them. The failure keeps its code; its
   * context says whether something was deleted, nothing was found, or the cleanup itself failed. A
   * confirmed deletion proves nothing is left, so the create may be retried.
   */
  private <T> Future<T> cleanUpAfterLostCreate(CreateSandbox request, ProviderError failure) {
    return listing(Map.of(META_SCOPE, settings.scope(), META_TOKEN, request.createToken()), 1)
        .compose(found -> killAll(found, "create").map(any -> found.isEmpty() ? "not_found" : "deleted"))
        .otherwise("unknown")
        .compose(cleanup -> {
          LOG.warn("e2b create of sandbox {} had no usable answer ({}); cleanup by create token: {}",
              request.sandboxId(), failure.code().wire(), cleanup);
          ProviderError out = "deleted".equals(cleanup)
              ? new ProviderError(failure.code(), BACKEND, "create", true, Outcome.FAILED, failure.context())
              : new ProviderError(failure.code(), BACKEND, "create", false, Outcome.UNKNOWN, failure.context());
          return Future.failedFuture(new ProviderException(out.withContext("cleanup_status", cleanup)));
        });
  }

  /**
   * Kills the sandbox. Without a resource id (a create that never answered) the sandboxes carrying the
   * sandbox id are killed instead.
   */
  @Override
  public Future<SandboxDestroyed> destroy(DestroySandbox request) {
    String id = request.providerResourceId();
    if (id == null || id.isBlank()) {
      return listing(Map.of(META_SCOPE, settings.scope(), META_SANDBOX, request.sandboxId()), 1)
          .compose(found -> killAll(found, "destroy"))
          .map(any -> new SandboxDestroyed(!any));
    }
    return kill(id, "destroy").map(killed -> new SandboxDestroyed(!killed));
  }

  /** Kills each listed sandbox in turn; true when any was killed. */
  private Future<Boolean> killAll(List<JsonObject> sandboxes, String op) {
    Future<Boolean> any = Future.succeededFuture(false);
    for (JsonObject s : sandboxes) {
      String id = s.getString("sandboxID");
      any = any.compose(before -> kill(id, op).map(killed -> before | killed));
    }
    return any;
  }

  /** {@code DELETE /sandboxes/{id}}; false when it was already gone. */
  private Future<Boolean> kill(String id, String op) {
    return send(client.api(HttpMethod.DELETE, "/sandboxes/" + segment(id)).send(), op).map(r -> {
      client.forget(id);
      if (r.statusCode() == 204 || r.statusCode() == 200) {
        return true;
      }
      if (r.statusCode() == 404) {
        return false;
      }
      throw E2bErrors.status(r.statusCode(), op, r.getHeader("Retry-After"), false);
    });
  }

  /**
   * Moves the sandbox's E2B lifetime along with the gateway's new deadline ({@code POST /sandboxes/{id}/timeout},
   * counted from now, shorter or longer), with the same margin as at create so the supervisor ends it first.
   */
  @Override
  public Future<Void> extendTimeout(SetTimeout request) {
    String id = request.providerResourceId();
    if (id == null || id.isBlank()) {
      return Future.failedFuture(E2bErrors.of(ErrorCode.NOT_FOUND, "timeout", false, Outcome.FAILED));
    }
    return send(client.api(HttpMethod.POST, "/sandboxes/" + segment(id) + "/timeout")
        .putHeader("Content-Type", "application/json")
        .sendBuffer(new JsonObject().put("timeout", request.timeoutSecs() + DEADLINE_GRACE_SECS).toBuffer()), "timeout")
        .map(r -> {
          expect(r, "timeout", 204, 200);
          return null;
        });
  }

  /**
   * Checks with {@code GET /sandboxes/{id}} that the sandbox still runs and carries this sandbox's and
   * organization's metadata, and refreshes its envd address; else {@code not_found}. A paused one is resumed.
   */
  @Override
  public Future<String> adopt(CreateSandbox request, String resourceId) {
    if (resourceId == null || resourceId.isBlank()) {
      return Future.failedFuture(E2bErrors.of(ErrorCode.NOT_FOUND, "adopt", false, Outcome.FAILED));
    }
    return send(client.api(HttpMethod.GET, "/sandboxes/" + segment(resourceId)).send(), "adopt").compose(r -> {
      JsonObject detail = json(expect(r, "adopt", 200), "adopt");
      JsonObject meta = detail.getJsonObject("metadata", new JsonObject());
      if (!request.sandboxId().equals(meta.getString(META_SANDBOX))
          || !request.organizationId().equals(meta.getString(META_ORG))) {
        throw E2bErrors.of(ErrorCode.NOT_FOUND, "adopt", false, Outcome.FAILED);
      }
      return "paused".equals(detail.getString("state")) ? resume(request, resourceId, detail)
          : Future.succeededFuture(detail);
    }).map(detail -> {
      client.remember(resourceId, detail.getString("domain"), detail.getString("envdAccessToken"));
      return resourceId;
    });
  }

  /**
   * Resumes a paused sandbox ({@code POST /sandboxes/{id}/connect}, which only ever extends its lifetime) for
   * the sandbox's own timeout; answers what to reach its envd with.
   */
  private Future<JsonObject> resume(CreateSandbox request, String resourceId, JsonObject detail) {
    Integer configured = request.config() == null ? null : request.config().timeoutSecs();
    int timeout = configured == null ? settings.sandboxTimeoutSecs() : configured + DEADLINE_GRACE_SECS;
    return send(client.api(HttpMethod.POST, "/sandboxes/" + segment(resourceId) + "/connect")
        .putHeader("Content-Type", "application/json")
        .sendBuffer(new JsonObject().put("timeout", timeout).toBuffer()), "adopt").map(r -> {
          JsonObject resumed = json(expect(r, "adopt", 200, 201), "adopt");
          return detail.copy()
              .put("envdAccessToken", resumed.getString("envdAccessToken", detail.getString("envdAccessToken")))
              .put("domain", resumed.getString("domain", detail.getString("domain")));
        });
  }

  // ---- inventory ---------------------------------------------------------------------------------------------

  /** A cheap authenticated call: one page of one sandbox of ours. */
  @Override
  public Future<Void> checkHealth() {
    return send(client.api(HttpMethod.GET, "/v2/sandboxes")
        .addQueryParam("metadata", E2bProvider.metadataQuery(Map.of(META_SCOPE, settings.scope())))
        .addQueryParam("limit", "1").send(), "health").map(r -> {
          expect(r, "health", 200);
          return null;
        });
  }

  /**
   * Running and paused sandboxes carrying our scope. A paused sandbox still exists (and can be resumed), so
   * it is listed as running. E2B exposes no cost, so none is reported: the ledger's estimate applies.
   */
  @Override
  public Future<List<Resource>> list() {
    return listing(Map.of(META_SCOPE, settings.scope()), E2bProvider.MAX_LIST_PAGES).map(found -> {
      List<Resource> out = new ArrayList<>();
      for (JsonObject s : found) {
        JsonObject meta = s.getJsonObject("metadata", new JsonObject());
        String sandboxId = meta.getString(META_SANDBOX);
        String id = s.getString("sandboxID");
        if (sandboxId != null && id != null) {
          out.add(new Resource(id, sandboxId, "running", null));
        }
      }
      return out;
    });
  }

  /** {@code GET /v2/sandboxes} filtered by metadata, following {@code X-Next-Token} for at most {@code pages}. */
  private Future<List<JsonObject>> listing(Map<String, String> metadata, int pages) {
    return page(metadata, null, pages, pages, new ArrayList<>());
  }

  private Future<List<JsonObject>> page(Map<String, String> metadata, String next, int left, int pages,
      List<JsonObject> out) {
    if (left == 0) {
      LOG.warn("e2b listing stopped after {} pages", pages);
      return Future.succeededFuture(out);
    }
    HttpRequest<Buffer> req = client.api(HttpMethod.GET, "/v2/sandboxes")
        .addQueryParam("metadata", E2bProvider.metadataQuery(metadata))
        .addQueryParam("state", "running,paused")
        .addQueryParam("limit", "100");
    if (next != null) {
      req.addQueryParam("nextToken", next);
    }
    return send(req.send(), "list").compose(r -> {
      expect(r, "list", 200);
      JsonArray items;
      try {
        items = r.bodyAsJsonArray();
      } catch (DecodeException | ClassCastException e) {
        throw E2bErrors.of(ErrorCode.COMMAND_FAILED, "list", true, Outcome.FAILED);
      }
      for (Object o : items == null ? new JsonArray() : items) {
        if (o instanceof JsonObject j) {
          out.add(j);
        }
      }
      String token = r.getHeader("X-Next-Token");
      return token == null || token.isBlank() ? Future.succeededFuture(out) : page(metadata, token, left - 1, pages, out);
    });
  }
}
