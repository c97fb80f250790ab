package ai.bespokelabs.sandbox.adapters.daytona;

import ai.bespokelabs.sandbox.adapters.host.ExecHandle;
import ai.bespokelabs.sandbox.adapters.host.ExecSink;
import ai.bespokelabs.sandbox.adapters.host.NonBlockingProvider;
import ai.bespokelabs.sandbox.adapters.exec.CommandLine;
import ai.bespokelabs.sandbox.adapters.spi.FileEntry;
import ai.bespokelabs.sandbox.adapters.files.ReadableFile;
import ai.bespokelabs.sandbox.adapters.files.SandboxPaths;
import ai.bespokelabs.sandbox.adapters.files.SpooledUpload;
import ai.bespokelabs.sandbox.adapters.files.WritableFile;
import ai.bespokelabs.sandbox.adapters.http.BodyInputStream;
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
import ai.bespokelabs.sandbox.core.error.ProviderError;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import ai.bespokelabs.sandbox.core.model.SandboxConfig;
import ai.bespokelabs.sandbox.core.pricing.PricingCatalog;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@code daytona} backend over Daytona's REST control plane and its in-sandbox toolbox, without an SDK.
 *
 * <ul>
 *   <li>create: {@code POST /sandbox} from a snapshot, or from an image through a one-line Dockerfile
 *   ({@code FROM <image>}, as the SDKs do), with cpu/memory/disk rounded up to whole cores and GB, our
 *   labels (organization, sandbox id, create token), the target region, and {@code autoStopInterval} plus
 *   {@code autoDeleteInterval=0} only when a timeout is given; then polls until {@code started}. A create
 *   whose answer is lost is cleaned up by a label search on its create token.
 *   <li>exec: one toolbox session per execution ({@link SessionCommand}, {@link DaytonaExecution}).
 *   <li>destroy, list (reconciliation, by our {@code managed} label, cursor pages) and health (a one-item
 *   authenticated list) work from the provider resource id alone, so they survive a gateway restart.
 *   <li>files: the files API over the toolbox's ({@link #listFiles}, {@link #openRead}, {@link #openWrite},
 *   {@link #deleteFile}); downloads stream, uploads are spooled on this node and sent whole at commit.
 *   <li>adopt: checks the sandbox's labels and starts it again when Daytona stopped it ({@link #adopt}).
 *   <li>metrics: the sandbox's resources and the newest points of its telemetry ({@link #metrics}).
 * </ul>
 */
public final class DaytonaProvider implements NonBlockingProvider {
  public static final String BACKEND = "daytona";
  static final String LABEL_MANAGED = "bespokelabs.ai/managed";
  static final String LABEL_SANDBOX = "bespokelabs.ai/sandbox-id";
  static final String LABEL_ORGANIZATION = "bespokelabs.ai/organization-id";
  static final String LABEL_CREATE_TOKEN = "bespokelabs.ai/create-token";

  private static final Logger LOG = LoggerFactory.getLogger(DaytonaProvider.class);
  private static final Pattern IMAGE = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._/:@-]{0,254}");
  private static final Pattern GPU_COUNT = Pattern.compile("[1-9][0-9]?");
  private static final Set<String> GPU_TYPES = Set.of("H100", "RTX-PRO-6000");
  private static final Set<String> PROVISIONING = Set.of("creating", "restoring", "starting", "pending_build",
      "building_snapshot", "pulling_snapshot", "unknown", "resuming");
  private static final Set<String> STOPPED = Set.of("stopping", "stopped", "archiving", "archived", "pausing",
      "paused");
  private static final Set<String> FAILED = Set.of("error", "build_failed");
  private static final Set<String> GONE = Set.of("destroying", "destroyed");
  private volatile int pageSize = 200;
  private static final int MAX_PAGES = 500;
  private static final long TRANSFER_IDLE_MS = 120_000;

  private final Vertx vertx;
  private final DaytonaSettings settings;
  private final DaytonaClient client;
  private final PricingCatalog pricing;
  private final Clock clock;

  /**
   * @param pricing the catalog pricing {@link #list()}'s live cost estimate; null for no estimate
   */
  public DaytonaProvider(Vertx vertx, DaytonaSettings settings, PricingCatalog pricing, Clock clock) {
    this.vertx = vertx;
    this.settings = settings;
    this.client = new DaytonaClient(vertx, BACKEND, settings);
    this.pricing = pricing;
    this.clock = clock;
  }

  /** Sandboxes per list page (Daytona allows up to 200); smaller in tests to cross pages. */
  DaytonaProvider pageSize(int size) {
    this.pageSize = size;
    return this;
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

  // ---------------------------------------------------------------------------------------------- create

  @Override
  public String create(CreateSandbox request) {
    JsonObject body = createBody(request);
    DaytonaClient.Resp r;
    try {
      r = client.call("create", true, HttpMethod.POST, settings.apiUrl() + "/sandbox", body.toBuffer(),
          "application/json", client.requestTimeoutMs());
    } catch (ProviderException e) {
      throw lostCreate(request, e);
    }
    String id = created(request, r);
    awaitStarted(id, request);
    return id;
  }

  /**
   * As {@link #create}, on the calling context while all goes well: the create, then one look at the sandbox.
   * A sandbox still starting, or any failure, is handed to the blocking code (polling, cleanup).
   */
  @Override
  public Future<String> createAsync(CreateSandbox request) {
    JsonObject body = createBody(request);
    return client.send(HttpMethod.POST, settings.apiUrl() + "/sandbox", body.toBuffer(), "application/json",
        client.requestTimeoutMs()).transform(ar -> {
          String id = ar.succeeded() ? createdId(ar.result()) : null;
          if (id == null) {
            return NonBlockingProvider.offLoop(() -> {
              if (ar.failed()) {
                throw lostCreate(request, client.transportError("create", ar.cause(), true));
              }
              String made = created(request, ar.result());
              awaitStarted(made, request);
              return made;
            });
          }
          return client.send(HttpMethod.GET, sandboxUrl(id), null, null, client.requestTimeoutMs()).transform(look -> {
            if (look.succeeded() && look.result().ok() && "started".equals(state(look.result()))) {
              return Future.succeededFuture(id);
            }
            return NonBlockingProvider.offLoop(() -> {
              awaitStarted(id, request);
              return id;
            });
          });
        });
  }

  /** A create whose answer was lost: what carries its token is removed when the outcome is unknown. */
  private ProviderException lostCreate(CreateSandbox request, ProviderException e) {
    return e.error().outcome() == ProviderError.Outcome.UNKNOWN ? ambiguous(e.error(), request, e) : e;
  }

  /** The new sandbox's id from a successful create answer, or null. */
  private String createdId(DaytonaClient.Resp r) {
    if (!r.ok()) {
      return null;
    }
    try {
      String id = client.json("create", r, true).getString("id");
      return id == null || id.isBlank() ? null : id;
    } catch (ProviderException | ClassCastException e) {
      return null;
    }
  }

  /** The sandbox's state in a {@code GET /sandbox/{id}} answer, or null when unreadable. */
  private String state(DaytonaClient.Resp r) {
    try {
      return client.json("create", r, false).getString("state");
    } catch (ProviderException | ClassCastException e) {
      return null;
    }
  }

  /** The answer to the create request: the new sandbox's id, else the contract error (cleaned up). */
  private String created(CreateSandbox request, DaytonaClient.Resp r) {
    if (!r.ok()) {
      ProviderException e = client.httpError("create", r.status(), r.headers());
      if (r.status() >= 500) {
        // a failing provider may still have created it: remove what carries this create's token
        String cleanup = cleanupByToken(request.createToken(), 1);
        throw cleanup.equals("deleted") ? new ProviderException(e.error().withContext("cleanup_status", cleanup)) : e;
      }
      throw e;
    }
    String id = createdId(r);
    if (id == null) {
      throw ambiguous(client.badResponse("create", true).error(), request, null);
    }
    return id;
  }

  JsonObject createBody(CreateSandbox request) {
    SandboxConfig c = request.config();
    JsonObject labels = new JsonObject().put(LABEL_MANAGED, "true").put(LABEL_SANDBOX, request.sandboxId())
        .put(LABEL_ORGANIZATION, request.organizationId()).put(LABEL_CREATE_TOKEN, request.createToken());
    JsonObject body = new JsonObject().put("labels", labels);
    if (c.envVars() != null && !c.envVars().isEmpty()) {
      body.put("env", new JsonObject(Map.copyOf(c.envVars())));
    }
    if (c.cpu() != null) {
      body.put("cpu", (int) Math.max(1, Math.ceil(c.cpu())));
    }
    if (c.memoryMb() != null) {
      body.put("memory", Math.max(1, (c.memoryMb() + 1023) / 1024));
    }
    if (c.diskMb() != null) {
      body.put("disk", Math.max(1, (c.diskMb() + 1023) / 1024));
    }
    if (c.gpu() != null && !c.gpu().isBlank()) {
      String gpu = c.gpu().trim();
      if (GPU_COUNT.matcher(gpu).matches()) {
        body.put("gpu", Integer.parseInt(gpu));
      } else if (GPU_TYPES.contains(gpu.toUpperCase(java.util.Locale.ROOT))) {
        body.put("gpu", 1).put("gpuType", new JsonArray().add(gpu.toUpperCase(java.util.Locale.ROOT)));
      } else {
        throw new ApiException(422, "daytona gpu must be a count or one of H100, RTX-PRO-6000");
      }
    }
    if (settings.target() != null) {
      body.put("target", settings.target());
    }
    if (c.image() != null && c.snapshotId() != null) {
      throw new ApiException(422, "give either image or snapshot_id, not both");
    }
    if (c.image() != null) {
      if (!IMAGE.matcher(c.image()).matches()) {
        throw new ApiException(422, "image is not a valid image reference");
      }
      body.put("buildInfo", new JsonObject().put("dockerfileContent", "FROM " + c.image() + "\n"));
    } else if (c.snapshotId() != null) {
      body.put("snapshot", c.snapshotId());
    } else if (settings.snapshot() != null) {
      body.put("snapshot", settings.snapshot());
    }
    if (Boolean.FALSE.equals(c.allowInternet())) {
      body.put("networkBlockAll", true);
    }
    if (c.timeoutSecs() != null && c.timeoutSecs() > 0) {
      // Daytona counts whole idle minutes; the gateway's own supervisor enforces the exact lifetime and this
      // is the backstop should the gateway be gone: stop when idle that long, then delete at once
      body.put("autoStopInterval", autoStopMinutes(c.timeoutSecs()));
      body.put("autoDeleteInterval", 0);
    }
    return body;
  }

  /** A lifetime as Daytona's auto-stop interval: whole minutes rounded up, never 0 (which would disable it). */
  static int autoStopMinutes(long timeoutSecs) {
    return (int) Math.min(Integer.MAX_VALUE, Math.max(1, (timeoutSecs + 59) / 60));
  }

  /** Polls the new sandbox until it started; on failure or deadline it is deleted and the error reported. */
  private void awaitStarted(String id, CreateSandbox request) {
    long deadline = System.nanoTime() + settings.createTimeout().toNanos();
    long pause = 100;
    while (true) {
      JsonObject sbx = null;
      ProviderException failure = null;
      try {
        DaytonaClient.Resp r = client.call("create", false, HttpMethod.GET, sandboxUrl(id), null, null,
            client.requestTimeoutMs());
        if (r.ok()) {
          sbx = client.json("create", r, false);
        } else if (r.status() == 404) {
          throw new ProviderException(ProviderError.of(ErrorCode.CREATION_FAILED, BACKEND, "create", true,
              ProviderError.Outcome.FAILED).withContext("provider_resource_id", id));
        } else if (r.status() != 429 && r.status() < 500) {
          failure = client.httpError("create", r.status(), r.headers());
        }
      } catch (ProviderException e) {
        if (e.error().code() == ErrorCode.CREATION_FAILED) {
          throw e;
        }
        // a lost poll changes nothing: poll again until the deadline
      }
      if (failure != null) {
        throw withCleanup(failure.error(), id);
      }
      String state = sbx == null ? "unknown" : sbx.getString("state", "unknown");
      if ("started".equals(state)) {
        return;
      }
      if (FAILED.contains(state) || GONE.contains(state)) {
        throw withCleanup(ProviderError.of(ErrorCode.CREATION_FAILED, BACKEND, "create", false,
            ProviderError.Outcome.FAILED), id);
      }
      if (System.nanoTime() > deadline) {
        throw withCleanup(ProviderError.of(ErrorCode.TIMEOUT, BACKEND, "create", true, ProviderError.Outcome.FAILED),
            id);
      }
      sleep(pause);
      pause = Math.min(1_000, pause * 3 / 2);
    }
  }

  /** The error after deleting the sandbox that could not be used; the outcome is unknown if it may remain. */
  private ProviderException withCleanup(ProviderError error, String id) {
    String cleanup = deleteQuietly(id);
    ProviderError e = new ProviderError(error.code(), error.backend(), error.op(), error.retryable(),
        "unknown".equals(cleanup) ? ProviderError.Outcome.UNKNOWN : error.outcome(), error.context())
        .withContext("cleanup_status", cleanup).withContext("provider_resource_id", id);
    return new ProviderException(e);
  }

  /**
   * A create that may have happened without our knowing its id: outcome {@code unknown}, and whatever
   * carries its create token is deleted, reported as {@code cleanup_status}.
   */
  private ProviderException ambiguous(ProviderError error, CreateSandbox request, Throwable cause) {
    String cleanup = cleanupByToken(request.createToken(), 3);
    ProviderError e = new ProviderError(error.code(), BACKEND, "create", false, ProviderError.Outcome.UNKNOWN,
        error.context()).withContext("cleanup_status", cleanup);
    return new ProviderException(e, cause);
  }

  /**
   * Deletes every sandbox labelled with {@code token}: {@code deleted} when one or more were,
   * {@code not_found} when none appeared in {@code attempts} searches (the list is eventually consistent),
   * {@code unknown} when a search or deletion failed.
   */
  String cleanupByToken(String token, int attempts) {
    for (int i = 0; i < attempts; i++) {
      List<JsonObject> found;
      try {
        found = listByLabels(new JsonObject().put(LABEL_CREATE_TOKEN, token), "create");
      } catch (ProviderException e) {
        return "unknown";
      }
      if (!found.isEmpty()) {
        boolean all = true;
        for (JsonObject s : found) {
          all &= !"unknown".equals(deleteQuietly(s.getString("id")));
        }
        return all ? "deleted" : "unknown";
      }
      if (i + 1 < attempts) {
        sleep(250);
      }
    }
    return "not_found";
  }

  private String deleteQuietly(String id) {
    try {
      return delete(id, "create") ? "not_found" : "deleted";
    } catch (ProviderException e) {
      return "unknown";
    }
  }

  // ------------------------------------------------------------------------------------------ destroy etc.

  /**
   * Deletes the sandbox by resource id; without one (a create that never answered), whatever carries the
   * sandbox's id label.
   */
  @Override
  public SandboxDestroyed destroy(DestroySandbox request) {
    if (request.providerResourceId() != null) {
      return new SandboxDestroyed(delete(request.providerResourceId(), "destroy"));
    }
    List<JsonObject> found = listByLabels(new JsonObject().put(LABEL_SANDBOX, request.sandboxId()), "destroy");
    boolean gone = true;
    for (JsonObject s : found) {
      gone &= delete(s.getString("id"), "destroy");
    }
    return new SandboxDestroyed(gone);
  }

  /** As {@link #destroy}; a destroy without a resource id (a search first) runs off the event loop. */
  @Override
  public Future<SandboxDestroyed> destroyAsync(DestroySandbox request) {
    String id = request.providerResourceId();
    if (id == null) {
      return NonBlockingProvider.offLoop(() -> destroy(request));
    }
    return client.send(HttpMethod.DELETE, sandboxUrl(id), null, null, client.requestTimeoutMs()).transform(ar -> ar.failed()
        ? Future.failedFuture(client.transportError("destroy", ar.cause(), true))
        : Future.succeededFuture(new SandboxDestroyed(deleted(ar.result(), "destroy"))));
  }

  @Override
  public void useContext(io.vertx.core.Context context) {
    client.useContext(context);
  }

  /** Deletes one sandbox; true when it was already gone. */
  private boolean delete(String id, String op) {
    return deleted(client.call(op, true, HttpMethod.DELETE, sandboxUrl(id), null, null, client.requestTimeoutMs()), op);
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
   * Moves Daytona's backstop along with the gateway's new deadline, as create sets it: the auto-stop interval
   * becomes the new lifetime in whole minutes ({@code POST /sandbox/{id}/autostop/{minutes}}), and a sandbox
   * created without a timeout, whose answer shows it is not deleted on stop, gets
   * {@code POST /sandbox/{id}/autodelete/0} as well. Any failure is the provider error of op {@code timeout};
   * the gateway keeps its stored deadline, which its supervisor enforces regardless.
   */
  @Override
  public void setTimeout(SetTimeout request) {
    String id = request.providerResourceId();
    if (id == null || id.isBlank()) {
      throw new ProviderException(ProviderError.of(ErrorCode.NOT_FOUND, BACKEND, "timeout", false,
          ProviderError.Outcome.FAILED));
    }
    DaytonaClient.Resp r = client.expect("timeout", true, HttpMethod.POST,
        sandboxUrl(id) + "/autostop/" + autoStopMinutes(request.timeoutSecs()), null);
    Integer autoDelete;
    try {
      autoDelete = client.json("timeout", r, true).getInteger("autoDeleteInterval");
    } catch (ProviderException | ClassCastException e) {
      autoDelete = null;
    }
    if (autoDelete == null || autoDelete != 0) {
      client.expect("timeout", true, HttpMethod.POST, sandboxUrl(id) + "/autodelete/0", null);
    }
  }

  /** One authenticated list call of at most one item. */
  @Override
  public void checkHealth() {
    client.expect("health", false, HttpMethod.GET, settings.apiUrl() + "/sandbox?limit=1&labels="
        + encode(new JsonObject().put(LABEL_MANAGED, "true").encode()), null);
  }

  /**
   * The sandboxes carrying our {@code managed} label, each with its sandbox id label, its state as a
   * lifecycle status, and (with a pricing catalog) its cost so far: catalog rates × its cpu and memory ×
   * the time since it was created.
   */
  @Override
  public List<Resource> list() {
    List<Resource> out = new ArrayList<>();
    for (JsonObject s : listByLabels(new JsonObject().put(LABEL_MANAGED, "true"), "list")) {
      JsonObject labels = s.getJsonObject("labels", new JsonObject());
      String sandboxId = labels.getString(LABEL_SANDBOX);
      if (sandboxId == null || s.getString("id") == null) {
        continue;
      }
      out.add(new Resource(s.getString("id"), sandboxId, status(s.getString("state")), cost(s)));
    }
    return out;
  }

  static String status(String state) {
    if (state == null || PROVISIONING.contains(state)) {
      return "provisioning";
    }
    if (STOPPED.contains(state)) {
      return "stopping";
    }
    if (FAILED.contains(state)) {
      return "failed";
    }
    if (GONE.contains(state)) {
      return "terminated";
    }
    return "running";
  }

  private BigDecimal cost(JsonObject s) {
    if (pricing == null || !(s.getValue("cpu") instanceof Number cpu)
        || !(s.getValue("memory") instanceof Number memGb) || s.getString("createdAt") == null) {
      return null;
    }
    try {
      Instant created = Instant.parse(s.getString("createdAt"));
      long secs = Math.max(0, Duration.between(created, clock.instant()).toSeconds());
      BigDecimal hourly = pricing.hourlyRate(BACKEND, cpu.doubleValue(), (int) Math.round(memGb.doubleValue() * 1024));
      return hourly.multiply(BigDecimal.valueOf(secs)).divide(BigDecimal.valueOf(3600), 6, RoundingMode.HALF_UP);
    } catch (DateTimeParseException | ClassCastException e) {
      return null;
    }
  }

  private List<JsonObject> listByLabels(JsonObject labels, String op) {
    List<JsonObject> out = new ArrayList<>();
    String cursor = null;
    for (int page = 0; page < MAX_PAGES; page++) {
      String url = settings.apiUrl() + "/sandbox?limit=" + pageSize + "&labels=" + encode(labels.encode())
          + (cursor == null ? "" : "&cursor=" + encode(cursor));
      JsonObject body = client.json(op, client.expect(op, false, HttpMethod.GET, url, null), false);
      JsonArray items = body.getJsonArray("items");
      if (items == null) {
        throw client.badResponse(op, false);
      }
      items.forEach(o -> {
        if (o instanceof JsonObject j) {
          out.add(j);
        }
      });
      cursor = body.getString("nextCursor");
      if (cursor == null || cursor.isEmpty() || items.isEmpty()) {
        return out;
      }
    }
    return out;
  }

  // ------------------------------------------------------------------------------------------ adopt

  /**
   * Checks with {@code GET /sandbox/{id}} that the sandbox exists and carries this sandbox's id and
   * organization labels ({@code not_found} otherwise, and nothing is started for a sandbox that is not
   * ours), then makes sure it runs: one Daytona stopped or archived (its idle auto-stop) is started again
   * with {@code POST /sandbox/{id}/start}, as an execution would, and awaited until {@code started} within
   * the create timeout. A sandbox being destroyed is {@code not_found}, one in error {@code command_failed}.
   */
  @Override
  public String adopt(CreateSandbox request, String resourceId) {
    if (resourceId == null || resourceId.isBlank()) {
      throw new ProviderException(ProviderError.of(ErrorCode.NOT_FOUND, BACKEND, "adopt", false,
          ProviderError.Outcome.FAILED));
    }
    JsonObject sbx = client.json("adopt", client.expect("adopt", false, HttpMethod.GET, sandboxUrl(resourceId), null),
        false);
    JsonObject labels = sbx.getValue("labels") instanceof JsonObject l ? l : new JsonObject();
    if (!request.sandboxId().equals(labels.getValue(LABEL_SANDBOX))
        || !request.organizationId().equals(labels.getValue(LABEL_ORGANIZATION))) {
      throw new ProviderException(ProviderError.of(ErrorCode.NOT_FOUND, BACKEND, "adopt", false,
          ProviderError.Outcome.FAILED));
    }
    if (!"started".equals(sbx.getValue("state"))) {
      toolbox(resourceId, "adopt");
    }
    return resourceId;
  }

  // ---------------------------------------------------------------------------------------------- metrics

  /** How far back telemetry is read for the newest data points. */
  static final Duration TELEMETRY_WINDOW = Duration.ofMinutes(5);
  static final String CPU_UTILIZATION = "daytona.sandbox.cpu.utilization";
  static final String CPU_LIMIT = "daytona.sandbox.cpu.limit";
  static final String MEMORY_USAGE = "daytona.sandbox.memory.usage";
  static final String MEMORY_LIMIT = "daytona.sandbox.memory.limit";
  static final String DISK_USAGE = "daytona.sandbox.filesystem.usage";
  static final String DISK_TOTAL = "daytona.sandbox.filesystem.total";
  private static final List<String> METRIC_NAMES = List.of(CPU_UTILIZATION, CPU_LIMIT, MEMORY_USAGE, MEMORY_LIMIT,
      DISK_USAGE, DISK_TOTAL);

  /**
   * The sandbox's resources from {@code GET /sandbox/{id}} (409 unless {@code started}: a stopped sandbox uses
   * nothing and is not started just to be measured) and the newest data points of the last five minutes of
   * its telemetry, {@code GET /sandbox/{id}/telemetry/metrics}. The spec leaves metric names open; these are
   * the names Daytona's sandboxes export and its SDKs read: CPU utilization as a percentage of the sandbox's
   * CPU limit (times the limit: percent of one CPU), memory and filesystem usage and limits in bytes.
   * Telemetry is an organization feature Daytona may not have enabled: when it answers 403 or 404, or has no
   * data points yet, usage is unknown (null) and the limits are the sandbox's cpu, memory and disk. Daytona
   * does not count processes.
   */
  @Override
  public SandboxMetrics metrics(MetricsRequest request) {
    String id = request.providerResourceId();
    if (id == null || id.isBlank()) {
      throw new ProviderException(ProviderError.of(ErrorCode.NOT_FOUND, BACKEND, "metrics", false,
          ProviderError.Outcome.FAILED));
    }
    JsonObject sbx = client.json("metrics", client.expect("metrics", false, HttpMethod.GET, sandboxUrl(id), null),
        false);
    Object state = sbx.getValue("state");
    if (GONE.contains(state)) {
      throw new ProviderException(ProviderError.of(ErrorCode.NOT_FOUND, BACKEND, "metrics", false,
          ProviderError.Outcome.FAILED));
    }
    if (!"started".equals(state)) {
      throw ApiException.conflict("sandbox is not running at Daytona");
    }
    Double cores = number(sbx.getValue("cpu"));
    Double memoryGb = number(sbx.getValue("memory"));
    Double diskGb = number(sbx.getValue("disk"));
    Map<String, Double> latest = telemetry(id);
    Double cpuLimit = latest.getOrDefault(CPU_LIMIT, cores);
    Double utilization = latest.get(CPU_UTILIZATION);
    Double cpu = utilization == null || cpuLimit == null ? null : Math.round(utilization * cpuLimit * 10) / 10.0;
    Double memoryLimit = latest.containsKey(MEMORY_LIMIT) ? mb(latest.get(MEMORY_LIMIT))
        : memoryGb == null ? null : memoryGb * 1024;
    Double diskLimit = latest.containsKey(DISK_TOTAL) ? mb(latest.get(DISK_TOTAL))
        : diskGb == null ? null : diskGb * 1024;
    return new SandboxMetrics(cpu, mb(latest.get(MEMORY_USAGE)), memoryLimit, mb(latest.get(DISK_USAGE)), diskLimit,
        null);
  }

  /** The newest value of each metric in the telemetry window; empty when Daytona keeps no telemetry for it. */
  private Map<String, Double> telemetry(String id) {
    Instant to = clock.instant();
    StringBuilder url = new StringBuilder(sandboxUrl(id)).append("/telemetry/metrics?from=")
        .append(encode(to.minus(TELEMETRY_WINDOW).toString())).append("&to=").append(encode(to.toString()));
    METRIC_NAMES.forEach(n -> url.append("&metricNames=").append(encode(n)));
    DaytonaClient.Resp r = client.call("metrics", false, HttpMethod.GET, url.toString(), null, null,
        client.requestTimeoutMs());
    if (r.status() == 403 || r.status() == 404) {
      return Map.of();
    }
    if (!r.ok()) {
      throw client.httpError("metrics", r.status(), r.headers());
    }
    if (!(client.json("metrics", r, false).getValue("series") instanceof JsonArray series)) {
      throw client.badResponse("metrics", false);
    }
    Map<String, Double> values = new java.util.HashMap<>();
    for (Object o : series) {
      if (!(o instanceof JsonObject s) || !(s.getValue("metricName") instanceof String name)
          || !METRIC_NAMES.contains(name) || !(s.getValue("dataPoints") instanceof JsonArray points)) {
        continue;
      }
      Instant newest = null;
      for (Object p : points) {
        if (p instanceof JsonObject point && point.getValue("timestamp") instanceof String ts
            && number(point.getValue("value")) instanceof Double value) {
          Instant at = instant(ts);
          if (at != null && (newest == null || !at.isBefore(newest))) {
            newest = at;
            values.put(name, value);
          }
        }
      }
    }
    return values;
  }

  /** An ISO 8601 time, with {@code T} or a space between date and time and UTC when it names no offset; else null. */
  static Instant instant(String ts) {
    String t = ts.trim();
    if (t.length() > 10 && t.charAt(10) == ' ') {
      t = t.substring(0, 10) + 'T' + t.substring(11);
    }
    try {
      return java.time.OffsetDateTime.parse(t).toInstant();
    } catch (DateTimeParseException withoutOffset) {
      try {
        return java.time.LocalDateTime.parse(t).toInstant(java.time.ZoneOffset.UTC);
      } catch (DateTimeParseException unreadable) {
        return null;
      }
    }
  }

  /** A finite, non-negative number, or null. */
  private static Double number(Object v) {
    return v instanceof Number n && Double.isFinite(n.doubleValue()) && n.doubleValue() >= 0 ? n.doubleValue() : null;
  }

  /** Bytes as mebibytes, to two decimals. */
  private static Double mb(Double bytes) {
    return bytes == null ? null : Math.round(bytes / (1 << 20) * 100) / 100.0;
  }

  // ------------------------------------------------------------------------------------------------- exec

  /**
   * Runs the request as an asynchronous command of a new toolbox session and follows its log. Failures
   * before the command runs are thrown (the session is removed); afterwards everything reaches the sink.
   */
  @Override
  public ExecHandle start(ExecSandbox request, ExecSink sink) {
    List<String> argv = CommandLine.of(request.code(), request.language(), request.command(), request.args());
    String toolbox = toolbox(request.providerResourceId(), "execute");
    String tag = tag(request.executionId());
    String sessionId = "bsk-" + tag;
    long t0 = System.nanoTime();
    client.expect("execute", true, HttpMethod.POST, toolbox + "/process/session",
        new JsonObject().put("sessionId", sessionId));
    Runnable removeSession = () -> deleteSession(toolbox, sessionId);
    try {
      JsonObject exec = new JsonObject().put("command", SessionCommand.of(argv, request.cwd(), request.env(), tag,
          request.keepStdin())).put("runAsync", true).put("suppressInputEcho", true);
      DaytonaClient.Resp r = client.expect("execute", true, HttpMethod.POST,
          toolbox + "/process/session/" + sessionId + "/exec", exec);
      String commandId = client.json("execute", r, true).getString("cmdId");
      if (commandId == null) {
        throw client.badResponse("execute", true);
      }
      DaytonaExecution execution = new DaytonaExecution(vertx, client, toolbox, sessionId, commandId, tag,
          request.keepStdin(), sink, t0, removeSession);
      execution.follow(request.timeoutSecs());
      return execution;
    } catch (RuntimeException e) {
      removeSession.run();
      throw e;
    }
  }

  private void deleteSession(String toolbox, String sessionId) {
    client.send(HttpMethod.DELETE, toolbox + "/process/session/" + sessionId, null, null, client.requestTimeoutMs())
        .onComplete(ar -> {
          if (ar.failed() || !ar.result().ok() && ar.result().status() != 404) {
            LOG.debug("Daytona session {} was not deleted", sessionId);
          }
        });
  }

  /** A shell-safe tag for an execution id (ours are already safe; anything else is replaced). */
  static String tag(String executionId) {
    if (executionId != null && executionId.matches("[A-Za-z0-9_-]{1,100}")) {
      return executionId;
    }
    return UUID.nameUUIDFromBytes(String.valueOf(executionId).getBytes(StandardCharsets.UTF_8)).toString();
  }

  /**
   * The toolbox base URL of a sandbox ({@code <toolboxProxyUrl>/<id>}), starting it first when Daytona
   * stopped it for idleness.
   */
  String toolbox(String resourceId, String op) {
    if (resourceId == null) {
      throw new ProviderException(ProviderError.of(ErrorCode.NOT_FOUND, BACKEND, op, false,
          ProviderError.Outcome.FAILED));
    }
    long deadline = System.nanoTime() + settings.createTimeout().toNanos();
    boolean startSent = false;
    while (true) {
      JsonObject sbx = client.json(op, client.expect(op, false, HttpMethod.GET, sandboxUrl(resourceId), null), false);
      String state = sbx.getString("state", "unknown");
      String proxy = sbx.getString("toolboxProxyUrl");
      if ("started".equals(state)) {
        if (proxy == null || proxy.isBlank()) {
          throw client.badResponse(op, false);
        }
        return (proxy.endsWith("/") ? proxy.substring(0, proxy.length() - 1) : proxy) + "/" + resourceId;
      }
      if (GONE.contains(state)) {
        throw new ProviderException(ProviderError.of(ErrorCode.NOT_FOUND, BACKEND, op, false,
            ProviderError.Outcome.FAILED));
      }
      if (FAILED.contains(state)) {
        throw new ProviderException(ProviderError.of(DaytonaClient.opCode(op), BACKEND, op, false,
            ProviderError.Outcome.FAILED));
      }
      if (("stopped".equals(state) || "archived".equals(state)) && !startSent) {
        client.expect(op, true, HttpMethod.POST, sandboxUrl(resourceId) + "/start", null);
        startSent = true;
      }
      if (System.nanoTime() > deadline) {
        throw new ProviderException(ProviderError.of(ErrorCode.TIMEOUT, BACKEND, op, true,
            ProviderError.Outcome.FAILED));
      }
      sleep(200);
    }
  }

  // ------------------------------------------------------------------------------------------------ files

  /**
   * A path as the toolbox takes it: relative paths are under the sandbox user's home (the toolbox's working
   * directory), absolute ones anywhere in the sandbox, which is a whole machine of its own.
   */
  static String filePath(String path) {
    if (path == null || path.isBlank()) {
      throw SandboxPaths.required();
    }
    try {
      String p = java.nio.file.Path.of(path).normalize().toString();
      return p.isEmpty() ? "." : p;
    } catch (java.nio.file.InvalidPathException e) {
      throw ApiException.invalid("path is not a valid path");
    }
  }

  private static String child(String dir, String name) {
    return dir.equals(".") ? name : dir.endsWith("/") ? dir + name : dir + "/" + name;
  }

  private static String fileQuery(String toolbox, String endpoint, String path) {
    return toolbox + endpoint + "?path=" + encode(path);
  }

  /**
   * The files API's answer for a failed toolbox call: 404 file not found, 403 permission denied inside the
   * sandbox, anything else the contract error for its status (the toolbox's message is never read).
   */
  private RuntimeException fileError(DaytonaClient.Resp r) {
    return fileError(r.status(), r.headers());
  }

  private RuntimeException fileError(int status, io.vertx.core.MultiMap headers) {
    if (status == 404) {
      return SandboxPaths.notFound();
    }
    if (status == 403) {
      return new ApiException(403, "permission denied inside the sandbox");
    }
    return client.httpError("files", status, headers);
  }

  /** {@code GET /files/info}: the entry at {@code path}, or null when there is none. */
  private JsonObject info(String toolbox, String path) {
    DaytonaClient.Resp r = client.call("files", false, HttpMethod.GET, fileQuery(toolbox, "/files/info", path), null,
        null, client.requestTimeoutMs());
    if (r.status() == 404) {
      return null;
    }
    if (!r.ok()) {
      throw fileError(r);
    }
    return client.json("files", r, false);
  }

  /** One toolbox file description ({@code FileInfo}) as an entry shown at {@code path}. */
  static FileEntry entry(JsonObject f, String path) {
    boolean dir = f.getBoolean("isDir", false);
    Instant modified = null;
    try {
      modified = f.getString("modifiedAt") == null ? null : Instant.parse(f.getString("modifiedAt"));
    } catch (DateTimeParseException | ClassCastException e) {
      // shown without a time
    }
    return new FileEntry(f.getString("name", ""), path, dir, dir ? 0 : f.getLong("size", 0L), mode(f), modified);
  }

  /** Permission bits from {@code permissions} ("0755") or, failing that, {@code mode} ("-rwxr-xr-x"). */
  static int mode(JsonObject f) {
    String perms = f.getString("permissions");
    if (perms != null && perms.matches("[0-7]{3,4}")) {
      return Integer.parseInt(perms, 8) & 0777;
    }
    String m = f.getString("mode");
    if (m != null && m.length() >= 9) {
      String rwx = m.substring(m.length() - 9);
      int bits = 0;
      for (int i = 0; i < 9; i++) {
        bits = bits << 1 | (rwx.charAt(i) == '-' ? 0 : 1);
      }
      return bits;
    }
    return 0;
  }

  /**
   * {@code GET /files}; a path naming a file (the toolbox refuses to list it) is shown as its own entry.
   */
  @Override
  public List<FileEntry> listFiles(FileOp op) {
    String path = filePath(op.path());
    String toolbox = toolbox(op.providerResourceId(), "files");
    DaytonaClient.Resp r = client.call("files", false, HttpMethod.GET, fileQuery(toolbox, "/files", path), null, null,
        client.requestTimeoutMs());
    if (r.status() == 400) {
      JsonObject info = info(toolbox, path);
      if (info == null) {
        throw SandboxPaths.notFound();
      }
      if (!info.getBoolean("isDir", false)) {
        return List.of(entry(info, path));
      }
    }
    if (!r.ok()) {
      throw fileError(r);
    }
    JsonArray items;
    try {
      items = new JsonArray(r.body());
    } catch (RuntimeException e) {
      throw client.badResponse("files", false);
    }
    List<FileEntry> out = new ArrayList<>();
    for (Object o : items) {
      if (o instanceof JsonObject f && f.getString("name") != null) {
        out.add(entry(f, child(path, f.getString("name"))));
      }
    }
    out.sort(java.util.Comparator.comparing(FileEntry::name));
    return out;
  }

  /**
   * {@code GET /files/download}, read as it arrives: the toolbox's answer is paused and asked for one
   * buffer at a time as the caller reads, so nothing but a buffer or two is held whatever the file's size.
   */
  @Override
  public ReadableFile openRead(FileOp op) {
    String path = filePath(op.path());
    String toolbox = toolbox(op.providerResourceId(), "files");
    DaytonaClient.Streamed s = client.stream("files", fileQuery(toolbox, "/files/download", path),
        Math.max(client.requestTimeoutMs(), TRANSFER_IDLE_MS));
    if (s.body() == null) {
      if (s.status() == 400) {
        JsonObject info = info(toolbox, path);
        if (info == null) {
          throw SandboxPaths.notFound();
        }
        if (info.getBoolean("isDir", false)) {
          throw SandboxPaths.isDirectory();
        }
      }
      throw fileError(s.status(), s.headers());
    }
    long size = -1;
    String encoding = s.headers().get("Content-Encoding");
    if (encoding == null || encoding.equalsIgnoreCase("identity")) {
      try {
        size = Long.parseLong(s.headers().get("Content-Length"));
      } catch (RuntimeException e) {
        size = -1;
      }
    }
    return ReadableFile.of(s.body(), size);
  }

  /**
   * Spools the upload on this node; at commit sends it whole with {@code POST /files/upload} (a multipart
   * body streamed from the spool with its exact length; the toolbox creates parent directories and replaces
   * an existing file), then sets its mode with {@code POST /files/permissions}. Nothing reaches the sandbox
   * before commit; abort deletes the spool.
   */
  @Override
  public WritableFile openWrite(FileOp op) {
    String path = filePath(op.path());
    if (path.equals("/") || path.equals(".")) {
      throw SandboxPaths.isDirectory();
    }
    String toolbox = toolbox(op.providerResourceId(), "files");
    int mode = op.executable() ? 0755 : 0644;
    return SpooledUpload.open("daytona-upload-", 0, (ch, spool, size) -> {
      ch.close();
      upload(toolbox, path, spool, size);
      DaytonaClient.Resp r = client.call("files", true, HttpMethod.POST, fileQuery(toolbox, "/files/permissions",
          path) + "&mode=" + String.format("%04o", mode), null, null, client.requestTimeoutMs());
      if (!r.ok()) {
        // a file whose mode could not be set is not left behind
        client.send(HttpMethod.DELETE, fileQuery(toolbox, "/files", path), null, null, client.requestTimeoutMs());
        throw fileError(r);
      }
      String name = path.substring(path.lastIndexOf('/') + 1);
      return new FileEntry(name, path, false, size, mode, Instant.now());
    });
  }

  /** {@code POST /files/upload} of the spooled file as the multipart part {@code file}. */
  private void upload(String toolbox, String path, java.nio.file.Path spool, long size) {
    String boundary = "bsk" + UUID.randomUUID().toString().replace("-", "");
    String name = path.substring(path.lastIndexOf('/') + 1).replaceAll("[^A-Za-z0-9._-]", "_");
    Buffer head = Buffer.buffer("--" + boundary + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\""
        + (name.isEmpty() ? "file" : name) + "\"\r\nContent-Type: application/octet-stream\r\n\r\n");
    Buffer tail = Buffer.buffer("\r\n--" + boundary + "--\r\n");
    DaytonaClient.Resp r = client.postFile("files", fileQuery(toolbox, "/files/upload", path),
        "multipart/form-data; boundary=" + boundary, head, spool, size, tail, transferTimeoutMs(size));
    if (r.ok()) {
      return;
    }
    if (r.status() == 400) {
      JsonObject info = info(toolbox, path);
      if (info != null && info.getBoolean("isDir", false)) {
        throw SandboxPaths.isDirectory();
      }
    }
    throw fileError(r);
  }

  /**
   * {@code DELETE /files}. The toolbox refuses every directory without {@code recursive}; for such a refusal
   * the directory is listed, and an empty one is then deleted while a non-empty one answers 409.
   */
  @Override
  public void deleteFile(FileOp op) {
    String path = filePath(op.path());
    if (path.equals("/") || path.equals(".")) {
      throw ApiException.invalid("path must name something inside the sandbox");
    }
    String toolbox = toolbox(op.providerResourceId(), "files");
    DaytonaClient.Resp r = remove(toolbox, path, op.recursive());
    if (r.ok()) {
      return;
    }
    if (r.status() == 400 && !op.recursive()) {
      JsonObject info = info(toolbox, path);
      if (info == null) {
        throw SandboxPaths.notFound();
      }
      if (info.getBoolean("isDir", false)) {
        if (!listFiles(op).isEmpty()) {
          throw SandboxPaths.notEmpty();
        }
        r = remove(toolbox, path, true);
        if (r.ok()) {
          return;
        }
      }
    }
    throw fileError(r);
  }

  private DaytonaClient.Resp remove(String toolbox, String path, boolean recursive) {
    return client.call("files", true, HttpMethod.DELETE, fileQuery(toolbox, "/files", path)
        + (recursive ? "&recursive=true" : ""), null, null, client.requestTimeoutMs());
  }

  private long transferTimeoutMs(long bytes) {
    // the request timeout, plus a second per MiB for large transfers
    return client.requestTimeoutMs() + (bytes >> 20) * 1_000;
  }

  // ------------------------------------------------------------------------------------------------- misc

  private String sandboxUrl(String id) {
    return settings.apiUrl() + "/sandbox/" + encode(id);
  }

  static String encode(String s) {
    return URLEncoder.encode(s, StandardCharsets.UTF_8).replace("+", "%20");
  }

  private static void sleep(long ms) {
    try {
      TimeUnit.MILLISECONDS.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new ProviderException(ProviderError.of(ErrorCode.UNKNOWN, BACKEND, "create", false,
          ProviderError.Outcome.UNKNOWN), e);
    }
  }

  @Override
  public void close() {
    client.close();
  }
}
