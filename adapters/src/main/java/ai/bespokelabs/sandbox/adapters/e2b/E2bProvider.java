package ai.bespokelabs.sandbox.adapters.e2b;

import ai.bespokelabs.sandbox.adapters.host.ExecHandle;
import ai.bespokelabs.sandbox.adapters.host.ExecSink;
import ai.bespokelabs.sandbox.adapters.host.NonBlockingProvider;
import ai.bespokelabs.sandbox.adapters.exec.CommandLine;
import ai.bespokelabs.sandbox.adapters.files.ReadableFile;
import ai.bespokelabs.sandbox.adapters.files.WritableFile;
import ai.bespokelabs.sandbox.core.bus.Messages.CreateSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.DestroySandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.FileOp;
import ai.bespokelabs.sandbox.core.bus.Messages.MetricsRequest;
import ai.bespokelabs.sandbox.core.bus.Messages.Resource;
import ai.bespokelabs.sandbox.core.bus.Messages.SandboxDestroyed;
import ai.bespokelabs.sandbox.core.bus.Messages.SandboxMetrics;
import ai.bespokelabs.sandbox.core.bus.Messages.SetTimeout;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError.Outcome;
import ai.bespokelabs.sandbox.core.error.ProviderError;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import ai.bespokelabs.sandbox.core.model.SandboxConfig;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.PoolOptions;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpRequest;
import io.vertx.ext.web.client.HttpResponse;
import io.vertx.ext.web.client.WebClient;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@code e2b} backend: E2B's control plane for sandboxes and, inside each sandbox, envd for processes
 * (Connect RPC, JSON codec) and files (REST). Plain HTTP through the Vert.x clients, no SDK. Node
 * independent: every operation works from the E2B sandbox id alone (the envd access token is fetched
 * again after a restart), so any node can serve any E2B sandbox.
 *
 * <p>Blocking SPI methods wait on futures off the event loop; a streamed execution is read by its own
 * virtual thread ({@link E2bExecution}).
 */
public final class E2bProvider implements NonBlockingProvider {
  public static final String BACKEND = "e2b";
  /** envd's port inside every sandbox, named in the {@code E2b-Sandbox-Port} header. */
  static final int ENVD_PORT = 49983;
  /** Metadata keys stamped on every sandbox (E2B metadata is a flat string map). */
  static final String META_SCOPE = "bespoke_scope";
  static final String META_SANDBOX = "bespoke_sandbox_id";
  static final String META_ORG = "bespoke_organization_id";
  static final String META_TOKEN = "bespoke_create_token";
  /** An E2B sandbox outlives the gateway's own deadline by this much; the supervisor ends it first. */
  static final int DEADLINE_GRACE_SECS = 60;
  /** Reconciliation reads at most this many pages of 100 sandboxes. */
  static final int MAX_LIST_PAGES = 100;

  private static final Logger LOG = LoggerFactory.getLogger(E2bProvider.class);

  private final E2bSettings settings;
  private final Vertx vertx;
  private final Clock clock;
  private final HttpClient http;
  private final WebClient web;
  private final Map<String, Envd> envds = new ConcurrentHashMap<>();
  private final Set<E2bExecution> executions = ConcurrentHashMap.newKeySet();
  private final E2bFiles files = new E2bFiles(this);

  /** How to reach one sandbox's envd. {@code accessToken} is null for a sandbox created without {@code secure}. */
  record Envd(String sandboxId, String baseUrl, String accessToken) {
    @Override
    public String toString() {
      return "Envd[" + sandboxId + "]";
    }
  }

  private volatile io.vertx.core.Context requestContext;

  public E2bProvider(Vertx vertx, E2bSettings settings, Clock clock) {
    this.vertx = vertx;
    this.settings = settings;
    this.clock = clock;
    this.http = vertx.createHttpClient(new HttpClientOptions()
            .setConnectTimeout((int) Math.min(Integer.MAX_VALUE, settings.requestTimeout().toMillis()))
            .setKeepAlive(true),
        new PoolOptions().setHttp1MaxSize(64));
    this.web = WebClient.wrap(http);
    this.requestContext = vertx.getOrCreateContext();
  }

  @Override
  public String backend() {
    return BACKEND;
  }

  @Override
  public java.util.Set<ai.bespokelabs.sandbox.adapters.spi.Capability> capabilities() {
    return java.util.EnumSet.of(ai.bespokelabs.sandbox.adapters.spi.Capability.FILES, ai.bespokelabs.sandbox.adapters.spi.Capability.METRICS, ai.bespokelabs.sandbox.adapters.spi.Capability.ADOPT, ai.bespokelabs.sandbox.adapters.spi.Capability.PROVIDER_TIMEOUT);
  }

  @Override
  public boolean nodeBound() {
    return false;
  }

  E2bSettings settings() {
    return settings;
  }

  Vertx vertx() {
    return vertx;
  }

  HttpClient http() {
    return http;
  }

  // ---- control plane ---------------------------------------------------------------------------------

  /**
   * {@code POST /sandboxes} with our marks in its metadata. When the answer is lost (timeout, broken
   * connection, 5xx) the sandbox may exist: it is looked up by its create token and killed, and the error
   * reports {@code cleanup_status}.
   *
   * @throws ApiException 422 for settings E2B has no equivalent for (GPU, host workdir, git checkout)
   */
  @Override
  public String create(CreateSandbox request) {
    JsonObject body = createBody(request);
    HttpResponse<Buffer> r;
    try {
      r = call(onContext(() -> sendCreate(body)), "create");
    } catch (ProviderException e) {
      throw lostCreate(request, e);
    }
    return created(request, r);
  }

  /** As {@link #create}: the answer is read on the calling context; only a failed create blocks (cleanup). */
  @Override
  public Future<String> createAsync(CreateSandbox request) {
    JsonObject body = createBody(request);
    return sendCreate(body).transform(ar -> {
      if (ar.succeeded()) {
        String id = createdId(ar.result());
        if (id != null) {
          return Future.succeededFuture(id);
        }
      }
      return NonBlockingProvider.offLoop(() -> {
        if (ar.succeeded()) {
          return created(request, ar.result());
        }
        throw lostCreate(request, E2bErrors.transport(ar.cause(), "create"));
      });
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

  private Future<HttpResponse<Buffer>> sendCreate(JsonObject body) {
    return api(HttpMethod.POST, "/sandboxes").putHeader("Content-Type", "application/json").sendBuffer(body.toBuffer());
  }

  /** A transport failure of {@code POST /sandboxes}: cleaned up by create token when the outcome is unknown. */
  private ProviderException lostCreate(CreateSandbox request, ProviderException e) {
    return e.error().outcome() == Outcome.UNKNOWN ? cleanUpAfterLostCreate(request, e.error()) : e;
  }

  /** The new sandbox's id from a successful answer (its envd is remembered), or null when there is none. */
  private String createdId(HttpResponse<Buffer> r) {
    if (r.statusCode() != 201 && r.statusCode() != 200) {
      return null;
    }
    JsonObject created;
    try {
      created = r.bodyAsJsonObject();
    } catch (DecodeException | ClassCastException e) {
      return null;
    }
    String id = created == null ? null : created.getString("sandboxID");
    if (id == null || id.isBlank()) {
      return null;
    }
    envds.put(id, envd(id, created.getString("domain"), created.getString("envdAccessToken")));
    return id;
  }

  /** The answer to {@code POST /sandboxes}: the new sandbox's id, else the contract error (cleaned up). */
  private String created(CreateSandbox request, HttpResponse<Buffer> r) {
    if (r.statusCode() != 201 && r.statusCode() != 200) {
      throw lostCreate(request, E2bErrors.status(r.statusCode(), "create", r.getHeader("Retry-After"), false));
    }
    String id = createdId(r);
    if (id == null) {
      json(r, "create"); // an unreadable answer is reported as such
      throw cleanUpAfterLostCreate(request,
          ProviderError.of(ErrorCode.CREATION_FAILED, BACKEND, "create", false, Outcome.UNKNOWN));
    }
    return id;
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

  /**
   * Finds the sandboxes carrying this create's token and kills them. The failure keeps its code; its
   * context says whether something was deleted, nothing was found, or the cleanup itself failed. A
   * confirmed deletion proves nothing is left, so the create may be retried.
   */
  private ProviderException cleanUpAfterLostCreate(CreateSandbox request, ProviderError failure) {
    String cleanup;
    try {
      List<JsonObject> found = listing(Map.of(META_SCOPE, settings.scope(), META_TOKEN, request.createToken()), 1);
      cleanup = "not_found";
      for (JsonObject s : found) {
        kill(s.getString("sandboxID"), "create");
        cleanup = "deleted";
      }
    } catch (ProviderException e) {
      cleanup = "unknown";
    }
    LOG.warn("e2b create of sandbox {} had no usable answer ({}); cleanup by create token: {}", request.sandboxId(),
        failure.code().wire(), cleanup);
    ProviderError out = "deleted".equals(cleanup)
        ? new ProviderError(failure.code(), BACKEND, "create", true, Outcome.FAILED, failure.context())
        : new ProviderError(failure.code(), BACKEND, "create", false, Outcome.UNKNOWN, failure.context());
    return new ProviderException(out.withContext("cleanup_status", cleanup));
  }

  /**
   * Kills the sandbox. Without a resource id (a create that never answered) the sandboxes carrying the
   * sandbox id are killed instead.
   */
  @Override
  public SandboxDestroyed destroy(DestroySandbox request) {
    String id = request.providerResourceId();
    if (id == null || id.isBlank()) {
      List<JsonObject> found = listing(Map.of(META_SCOPE, settings.scope(), META_SANDBOX, request.sandboxId()), 1);
      boolean any = false;
      for (JsonObject s : found) {
        any |= kill(s.getString("sandboxID"), "destroy");
      }
      return new SandboxDestroyed(!any);
    }
    return new SandboxDestroyed(!kill(id, "destroy"));
  }

  /** As {@link #destroy}; a destroy without a resource id (a search first) runs off the event loop. */
  @Override
  public Future<SandboxDestroyed> destroyAsync(DestroySandbox request) {
    String id = request.providerResourceId();
    if (id == null || id.isBlank()) {
      return NonBlockingProvider.offLoop(() -> destroy(request));
    }
    return api(HttpMethod.DELETE, "/sandboxes/" + segment(id)).send().transform(ar -> ar.failed()
        ? Future.failedFuture(E2bErrors.transport(ar.cause(), "destroy"))
        : Future.succeededFuture(new SandboxDestroyed(!killed(id, ar.result(), "destroy"))));
  }

  @Override
  public void useContext(io.vertx.core.Context context) {
    requestContext = context;
  }

  /** {@code DELETE /sandboxes/{id}}; false when it was already gone. */
  private boolean kill(String id, String op) {
    return killed(id, call(onContext(() -> api(HttpMethod.DELETE, "/sandboxes/" + segment(id)).send()), op), op);
  }

  /** The answer to {@code DELETE /sandboxes/{id}}: true when killed, false when already gone. */
  private boolean killed(String id, HttpResponse<Buffer> r, String op) {
    envds.remove(id);
    if (r.statusCode() == 204 || r.statusCode() == 200) {
      return true;
    }
    if (r.statusCode() == 404) {
      return false;
    }
    throw E2bErrors.status(r.statusCode(), op, r.getHeader("Retry-After"), false);
  }

  /**
   * Moves the sandbox's E2B lifetime along with the gateway's new deadline ({@code POST /sandboxes/{id}/timeout},
   * counted from now, shorter or longer), with the same margin as at create so the supervisor ends it first.
   */
  @Override
  public void setTimeout(SetTimeout request) {
    String id = request.providerResourceId();
    if (id == null || id.isBlank()) {
      throw E2bErrors.of(ErrorCode.NOT_FOUND, "timeout", false, Outcome.FAILED);
    }
    HttpResponse<Buffer> r = call(onContext(() -> api(HttpMethod.POST, "/sandboxes/" + segment(id) + "/timeout")
        .putHeader("Content-Type", "application/json")
        .sendBuffer(new JsonObject().put("timeout", request.timeoutSecs() + DEADLINE_GRACE_SECS).toBuffer())), "timeout");
    if (r.statusCode() != 204 && r.statusCode() != 200) {
      throw E2bErrors.status(r.statusCode(), "timeout", r.getHeader("Retry-After"), false);
    }
  }

  /** A cheap authenticated call: one page of one sandbox of ours. */
  @Override
  public void checkHealth() {
    HttpResponse<Buffer> r = call(onContext(() -> api(HttpMethod.GET, "/v2/sandboxes")
        .addQueryParam("metadata", metadataQuery(Map.of(META_SCOPE, settings.scope())))
        .addQueryParam("limit", "1").send()), "health");
    if (r.statusCode() != 200) {
      throw E2bErrors.status(r.statusCode(), "health", r.getHeader("Retry-After"), false);
    }
  }

  /**
   * Running and paused sandboxes carrying our scope. A paused sandbox still exists (and can be resumed), so
   * it is listed as running. E2B exposes no cost, so none is reported: the ledger's estimate applies.
   */
  @Override
  public List<Resource> list() {
    List<Resource> out = new ArrayList<>();
    for (JsonObject s : listing(Map.of(META_SCOPE, settings.scope()), MAX_LIST_PAGES)) {
      JsonObject meta = s.getJsonObject("metadata", new JsonObject());
      String sandboxId = meta.getString(META_SANDBOX);
      String id = s.getString("sandboxID");
      if (sandboxId != null && id != null) {
        out.add(new Resource(id, sandboxId, "running", null));
      }
    }
    return out;
  }

  /** {@code GET /v2/sandboxes} filtered by metadata, following {@code X-Next-Token} for at most {@code pages}. */
  private List<JsonObject> listing(Map<String, String> metadata, int pages) {
    List<JsonObject> out = new ArrayList<>();
    String next = null;
    for (int page = 0; page < pages; page++) {
      HttpRequest<Buffer> req = api(HttpMethod.GET, "/v2/sandboxes")
          .addQueryParam("metadata", metadataQuery(metadata))
          .addQueryParam("state", "running,paused")
          .addQueryParam("limit", "100");
      if (next != null) {
        req.addQueryParam("nextToken", next);
      }
      HttpResponse<Buffer> r = call(onContext(() -> req.send()), "list");
      if (r.statusCode() != 200) {
        throw E2bErrors.status(r.statusCode(), "list", r.getHeader("Retry-After"), false);
      }
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
      next = r.getHeader("X-Next-Token");
      if (next == null || next.isBlank()) {
        return out;
      }
    }
    LOG.warn("e2b listing stopped after {} pages", pages);
    return out;
  }

  /** E2B's metadata filter: {@code k=v&k2=v2} with each key and value URL-encoded. */
  static String metadataQuery(Map<String, String> metadata) {
    StringBuilder b = new StringBuilder();
    new java.util.TreeMap<>(metadata).forEach((k, v) -> {
      if (!b.isEmpty()) {
        b.append('&');
      }
      b.append(URLEncoder.encode(k, StandardCharsets.UTF_8)).append('=')
          .append(URLEncoder.encode(v, StandardCharsets.UTF_8));
    });
    return b.toString();
  }

  // ---- metrics -----------------------------------------------------------------------------------------

  /** How far back a metrics sample may lie: E2B collects one every few seconds. */
  static final long METRICS_WINDOW_SECS = 120;

  /**
   * The newest sample of the last two minutes from {@code GET /sandboxes/{id}/metrics}: CPU is E2B's
   * percentage of the sandbox's CPUs times their count (so percent of one CPU), memory and disk are used
   * and total bytes as E2B measures them inside the sandbox. E2B does not count processes. A sandbox with
   * no sample yet (just created) reports its template's memory and disk from {@code GET /sandboxes/{id}},
   * with usage unknown.
   */
  @Override
  public SandboxMetrics metrics(MetricsRequest request) {
    String id = request.providerResourceId();
    if (id == null || id.isBlank()) {
      throw E2bErrors.of(ErrorCode.NOT_FOUND, "metrics", false, Outcome.FAILED);
    }
    long start = Math.max(0, clock.instant().getEpochSecond() - METRICS_WINDOW_SECS);
    HttpResponse<Buffer> r = call(onContext(() -> api(HttpMethod.GET, "/sandboxes/" + segment(id) + "/metrics")
        .addQueryParam("start", String.valueOf(start)).send()), "metrics");
    if (r.statusCode() != 200) {
      throw E2bErrors.status(r.statusCode(), "metrics", r.getHeader("Retry-After"), false);
    }
    JsonArray samples;
    try {
      samples = r.bodyAsJsonArray();
    } catch (DecodeException | ClassCastException e) {
      samples = null;
    }
    if (samples == null) {
      throw E2bErrors.of(ErrorCode.COMMAND_FAILED, "metrics", false, Outcome.FAILED);
    }
    JsonObject latest = null;
    for (Object o : samples) {
      if (o instanceof JsonObject j && (latest == null || timestamp(j) >= timestamp(latest))) {
        latest = j;
      }
    }
    if (latest == null) {
      HttpResponse<Buffer> d = call(onContext(() -> api(HttpMethod.GET, "/sandboxes/" + segment(id)).send()),
          "metrics");
      if (d.statusCode() != 200) {
        throw E2bErrors.status(d.statusCode(), "metrics", d.getHeader("Retry-After"), false);
      }
      JsonObject detail = json(d, "metrics");
      return new SandboxMetrics(null, null, number(detail, "memoryMB"), null, number(detail, "diskSizeMB"), null);
    }
    Double pct = number(latest, "cpuUsedPct");
    Double cpus = number(latest, "cpuCount");
    Double cpu = pct == null || cpus == null ? null : Math.round(pct * cpus * 10) / 10.0;
    return new SandboxMetrics(cpu, mb(number(latest, "memUsed")), mb(number(latest, "memTotal")),
        mb(number(latest, "diskUsed")), mb(number(latest, "diskTotal")), null);
  }

  private static long timestamp(JsonObject sample) {
    return sample.getValue("timestampUnix") instanceof Number n ? n.longValue() : Long.MIN_VALUE;
  }

  /** A non-negative number field, or null. */
  private static Double number(JsonObject j, String key) {
    return j.getValue(key) instanceof Number n && n.doubleValue() >= 0 ? n.doubleValue() : null;
  }

  /** Bytes as mebibytes, to two decimals. */
  private static Double mb(Double bytes) {
    return bytes == null ? null : Math.round(bytes / (1 << 20) * 100) / 100.0;
  }

  // ---- envd --------------------------------------------------------------------------------------------

  /**
   * Checks with {@code GET /sandboxes/{id}} that the sandbox still runs and carries this sandbox's and
   * organization's metadata, and refreshes its envd address; else {@code not_found}.
   */
  @Override
  public String adopt(CreateSandbox request, String resourceId) {
    if (resourceId == null || resourceId.isBlank()) {
      throw E2bErrors.of(ErrorCode.NOT_FOUND, "adopt", false, Outcome.FAILED);
    }
    HttpResponse<Buffer> r = call(onContext(() -> api(HttpMethod.GET, "/sandboxes/" + segment(resourceId)).send()), "adopt");
    if (r.statusCode() != 200) {
      throw E2bErrors.status(r.statusCode(), "adopt", r.getHeader("Retry-After"), false);
    }
    JsonObject detail = json(r, "adopt");
    JsonObject meta = detail.getJsonObject("metadata", new JsonObject());
    if (!request.sandboxId().equals(meta.getString(META_SANDBOX))
        || !request.organizationId().equals(meta.getString(META_ORG))) {
      throw E2bErrors.of(ErrorCode.NOT_FOUND, "adopt", false, Outcome.FAILED);
    }
    if ("paused".equals(detail.getString("state"))) {
      detail = resume(request, resourceId, detail);
    }
    envds.put(resourceId, envd(resourceId, detail.getString("domain"), detail.getString("envdAccessToken")));
    return resourceId;
  }

  /**
   * Resumes a paused sandbox ({@code POST /sandboxes/{id}/connect}, which only ever extends its lifetime) for
   * the sandbox's own timeout; answers what to reach its envd with.
   */
  private JsonObject resume(CreateSandbox request, String resourceId, JsonObject detail) {
    Integer configured = request.config() == null ? null : request.config().timeoutSecs();
    int timeout = configured == null ? settings.sandboxTimeoutSecs() : configured + DEADLINE_GRACE_SECS;
    HttpResponse<Buffer> r = call(onContext(() -> api(HttpMethod.POST, "/sandboxes/" + segment(resourceId) + "/connect")
        .putHeader("Content-Type", "application/json")
        .sendBuffer(new JsonObject().put("timeout", timeout).toBuffer())), "adopt");
    if (r.statusCode() != 200 && r.statusCode() != 201) {
      throw E2bErrors.status(r.statusCode(), "adopt", r.getHeader("Retry-After"), false);
    }
    JsonObject resumed = json(r, "adopt");
    return detail.copy().put("envdAccessToken", resumed.getString("envdAccessToken", detail.getString("envdAccessToken")))
        .put("domain", resumed.getString("domain", detail.getString("domain")));
  }

  /** The sandbox's envd, from the create answer or (after a restart) from {@code GET /sandboxes/{id}}. */
  Envd envd(String resourceId, String op) {
    if (resourceId == null || resourceId.isBlank()) {
      throw E2bErrors.of(ErrorCode.NOT_FOUND, op, false, Outcome.FAILED);
    }
    Envd known = envds.get(resourceId);
    if (known != null) {
      return known;
    }
    HttpResponse<Buffer> r = call(onContext(() -> api(HttpMethod.GET, "/sandboxes/" + segment(resourceId)).send()), op);
    if (r.statusCode() != 200) {
      throw E2bErrors.status(r.statusCode(), op, r.getHeader("Retry-After"), false);
    }
    JsonObject detail = json(r, op);
    Envd envd = envd(resourceId, detail.getString("domain"), detail.getString("envdAccessToken"));
    envds.put(resourceId, envd);
    return envd;
  }

  private Envd envd(String id, String domain, String accessToken) {
    String base = settings.sandboxUrl() != null ? settings.sandboxUrl()
        : "https://sandbox." + (domain == null || domain.isBlank() ? settings.domain() : domain);
    return new Envd(id, base, accessToken);
  }

  /** A request to envd with the sandbox-routing and access-token headers. */
  HttpRequest<Buffer> envdRequest(Envd envd, HttpMethod method, String path) {
    HttpRequest<Buffer> req = web.requestAbs(method, envd.baseUrl() + path)
        .putHeader("E2b-Sandbox-Id", envd.sandboxId())
        .putHeader("E2b-Sandbox-Port", String.valueOf(ENVD_PORT))
        .timeout(settings.requestTimeout().toMillis());
    if (envd.accessToken() != null) {
      req.putHeader("X-Access-Token", envd.accessToken());
    }
    return req;
  }

  /** The same headers for a request sent through the core HTTP client (streamed bodies). */
  RequestOptions envdOptions(Envd envd, HttpMethod method, String pathAndQuery) {
    RequestOptions options = new RequestOptions().setMethod(method).setAbsoluteURI(envd.baseUrl() + pathAndQuery)
        .putHeader("E2b-Sandbox-Id", envd.sandboxId())
        .putHeader("E2b-Sandbox-Port", String.valueOf(ENVD_PORT))
        .setIdleTimeout(0);
    if (envd.accessToken() != null) {
      options.putHeader("X-Access-Token", envd.accessToken());
    }
    return options;
  }

  /** A unary Connect call ({@code /<package>.<Service>/<Method>}, JSON codec); returns the response message. */
  JsonObject unary(Envd envd, String path, JsonObject message, String op) {
    HttpResponse<Buffer> r = call(onContext(() -> envdRequest(envd, HttpMethod.POST, path)
        .putHeader("Content-Type", "application/json")
        .putHeader("Connect-Protocol-Version", "1")
        .sendBuffer(message.toBuffer())), op);
    if (r.statusCode() == 200) {
      return json(r, op);
    }
    throw connectFailure(r.statusCode(), r.body(), r.getHeader("Retry-After"), op);
  }

  /** A Connect error answer: its {@code code} when the body has one, else the HTTP status. */
  static ProviderException connectFailure(int status, Buffer body, String retryAfter, String op) {
    try {
      JsonObject err = body == null ? null : new JsonObject(body);
      if (err != null && err.getValue("code") instanceof String code) {
        ProviderException e = E2bErrors.connect(code, op);
        Long wait = E2bErrors.retryAfterSecs(retryAfter);
        return wait == null ? e : new ProviderException(e.error().withContext("retry_after_secs", wait));
      }
    } catch (DecodeException | ClassCastException ignored) {
      // not a Connect error body: judge by status
    }
    return E2bErrors.status(status, op, retryAfter, true);
  }

  /** Starts the program through {@code process.Process/Start}; returns once envd reported its pid. */
  @Override
  public ExecHandle start(ExecSandbox request, ExecSink sink) {
    Envd envd = envd(request.providerResourceId(), "execute");
    return execution(request, sink, envd).start(startRequest(request));
  }

  /**
   * As {@link #start}, on the calling context, when the sandbox's envd address is known here (else looking it
   * up blocks, so the blocking start runs off the event loop).
   */
  @Override
  public Future<ExecHandle> startAsync(ExecSandbox request, ExecSink sink) {
    Envd envd = envds.get(request.providerResourceId());
    if (envd == null) {
      return NonBlockingProvider.offLoop(() -> start(request, sink));
    }
    return execution(request, sink, envd).startAsync(startRequest(request));
  }

  private static JsonObject startRequest(ExecSandbox request) {
    List<String> argv = CommandLine.of(request.code(), request.language(), request.command(), request.args());
    JsonObject process = new JsonObject().put("cmd", argv.get(0))
        .put("args", new JsonArray(argv.subList(1, argv.size())));
    if (!request.env().isEmpty()) {
      process.put("envs", new JsonObject(new LinkedHashMap<>(request.env())));
    }
    if (request.cwd() != null && !request.cwd().isBlank()) {
      process.put("cwd", request.cwd());
    }
    return new JsonObject().put("process", process).put("stdin", request.keepStdin());
  }

  private E2bExecution execution(ExecSandbox request, ExecSink sink, Envd envd) {
    E2bExecution execution = new E2bExecution(this, envd, request, sink);
    executions.add(execution);
    execution.onDone(() -> executions.remove(execution));
    return execution;
  }

  /** Sends a signal to a process of the sandbox ({@code SIGNAL_SIGTERM} or {@code SIGNAL_SIGKILL}). */
  void sendSignal(Envd envd, long pid, String signal) {
    unary(envd, "/process.Process/SendSignal", new JsonObject()
        .put("process", new JsonObject().put("pid", pid)).put("signal", signal), "signal");
  }

  /** The same, without waiting or failing: for cleanup paths. */
  Future<?> sendSignalAsync(Envd envd, long pid, String signal) {
    return onContext(() -> envdRequest(envd, HttpMethod.POST, "/process.Process/SendSignal")
        .putHeader("Content-Type", "application/json")
        .putHeader("Connect-Protocol-Version", "1")
        .sendBuffer(new JsonObject().put("process", new JsonObject().put("pid", pid)).put("signal", signal).toBuffer()));
  }

  void sendInput(Envd envd, long pid, byte[] data) {
    unary(envd, "/process.Process/SendInput", new JsonObject()
        .put("process", new JsonObject().put("pid", pid))
        .put("input", new JsonObject().put("stdin", Base64.getEncoder().encodeToString(data))), "stdin");
  }

  void closeStdin(Envd envd, long pid) {
    unary(envd, "/process.Process/CloseStdin", new JsonObject()
        .put("process", new JsonObject().put("pid", pid)), "stdin");
  }

  // ---- files (envd REST and filesystem.Filesystem) --------------------------------------------------------

  @Override
  public List<ai.bespokelabs.sandbox.adapters.spi.FileEntry> listFiles(FileOp op) {
    return files.list(op);
  }

  @Override
  public ReadableFile openRead(FileOp op) {
    return files.openRead(op);
  }

  @Override
  public WritableFile openWrite(FileOp op) {
    return files.openWrite(op);
  }

  @Override
  public void deleteFile(FileOp op) {
    files.delete(op);
  }

  // ---- plumbing ------------------------------------------------------------------------------------------

  private HttpRequest<Buffer> api(HttpMethod method, String path) {
    return web.requestAbs(method, settings.apiUrl() + path)
        .putHeader("X-API-Key", settings.apiKey().reveal())
        .putHeader("Accept", "application/json")
        .timeout(settings.requestTimeout().toMillis());
  }

  /** Waits for a call (off the event loop); transport failures become contract errors. */
  /**
   * Starts {@code work} on this provider's context: the HTTP clients' connection pools are then only used
   * from one event loop (requests issued straight from many virtual threads stalled now and then).
   */
  <T> Future<T> onContext(java.util.function.Supplier<Future<T>> work) {
    return ai.bespokelabs.sandbox.adapters.http.ClientContext.run(requestContext, work);
  }

  <T> T call(Future<T> f, String op) {
    long waitMs = settings.requestTimeout().toMillis() + 5_000;
    try {
      return f.toCompletionStage().toCompletableFuture().get(waitMs, TimeUnit.MILLISECONDS);
    } catch (ExecutionException e) {
      throw E2bErrors.transport(e.getCause(), op);
    } catch (TimeoutException e) {
      throw E2bErrors.transport(e, op);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw E2bErrors.transport(new TimeoutException("interrupted"), op);
    }
  }

  private static JsonObject json(HttpResponse<Buffer> r, String op) {
    try {
      JsonObject j = r.bodyAsJsonObject();
      if (j != null) {
        return j;
      }
    } catch (DecodeException | ClassCastException ignored) {
      // reported below
    }
    throw E2bErrors.of(E2bErrors.generic(op), op, false, E2bErrors.mutating(op) ? Outcome.UNKNOWN : Outcome.FAILED);
  }

  private static String segment(String id) {
    return URLEncoder.encode(id, StandardCharsets.UTF_8).replace("+", "%20");
  }

  Clock clock() {
    return clock;
  }

  /** Abandons running executions (their sinks get no result) and closes the HTTP clients. */
  @Override
  public void close() {
    executions.forEach(E2bExecution::abandon);
    web.close();
    http.close();
  }
}
