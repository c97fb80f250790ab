package ai.bespokelabs.sandbox.adapters.e2b;

import ai.bespokelabs.sandbox.adapters.host.ExecHandle;
import ai.bespokelabs.sandbox.adapters.host.ExecSink;
import ai.bespokelabs.sandbox.adapters.local.ProcessRunner;
import ai.bespokelabs.sandbox.adapters.local.ProcessSpec;
import ai.bespokelabs.sandbox.adapters.sim.Faults;
import ai.bespokelabs.sandbox.adapters.sim.ProtoJson;
import ai.bespokelabs.sandbox.adapters.sim.SpecValidator;
import ai.bespokelabs.sandbox.adapters.sim.UsageSampler;
import com.google.protobuf.ByteString;
import com.google.protobuf.Timestamp;
import filesystem.FilesystemOuterClass.EntryInfo;
import filesystem.FilesystemOuterClass.FileType;
import filesystem.FilesystemOuterClass.ListDirRequest;
import filesystem.FilesystemOuterClass.ListDirResponse;
import filesystem.FilesystemOuterClass.MoveRequest;
import filesystem.FilesystemOuterClass.MoveResponse;
import filesystem.FilesystemOuterClass.RemoveRequest;
import filesystem.FilesystemOuterClass.RemoveResponse;
import filesystem.FilesystemOuterClass.StatRequest;
import filesystem.FilesystemOuterClass.StatResponse;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.openapi.validation.ValidatedRequest;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import process.ProcessOuterClass.CloseStdinRequest;
import process.ProcessOuterClass.CloseStdinResponse;
import process.ProcessOuterClass.ProcessEvent;
import process.ProcessOuterClass.SendInputRequest;
import process.ProcessOuterClass.SendInputResponse;
import process.ProcessOuterClass.SendSignalRequest;
import process.ProcessOuterClass.SendSignalResponse;
import process.ProcessOuterClass.StartRequest;
import process.ProcessOuterClass.StartResponse;

/**
 * A local stand-in for E2B: the control plane ({@code openapi.yml}) on one port and envd ({@code envd.yaml}
 * plus the process and filesystem Connect services) on another, as {@code E2B_API_URL} and
 * {@code E2B_SANDBOX_URL} would point at them. Sandboxes are directories; their processes are real host
 * processes (through {@link ProcessRunner}) whose output streams back as Connect envelopes with
 * backpressure. Sandboxes expire at their timeout and vanish when killed, taking their processes along.
 *
 * <p>Strict like the real thing: every control-plane and envd REST request must pass the published OpenAPI
 * document, every Connect request must parse under the proto3 JSON mapping of the published protos, and
 * the API key and envd access token are checked. A request that fails is answered as E2B would (400/401)
 * and recorded in {@link #violations()}, which tests assert empty. {@link #faults()} injects failures.
 */
public final class E2bSimulator implements AutoCloseable {
  public static final String API_KEY = "e2b_sim_0123456789abcdef0123456789abcdef";
  private static final Pattern SANDBOX_PATH =
      Pattern.compile("^/sandboxes/([^/]+)(/timeout|/metrics|/pause|/connect)?$");
  /** The resources of the simulated template, as {@code GET /sandboxes/{id}} and the metrics report them. */
  public static final int CPU_COUNT = 2;
  public static final int MEMORY_MB = 512;
  public static final int DISK_SIZE_MB = 10240;
  /** How many metric samples a sandbox keeps. */
  private static final int KEPT_SAMPLES = 720;
  private static final SecureRandom RANDOM = new SecureRandom();

  private final Vertx vertx;
  private final Path root;
  private final SpecValidator api;
  private final SpecValidator envd;
  private final HttpServer apiServer;
  private final HttpServer envdServer;
  private final ProcessRunner runner = new ProcessRunner("e2b-simulator");
  private final Faults faults = new Faults();
  private final Map<String, Sandbox> sandboxes = new ConcurrentHashMap<>();
  private final List<String> violations = new CopyOnWriteArrayList<>();
  private final List<String> requests = new CopyOnWriteArrayList<>();
  private final AtomicInteger kills = new AtomicInteger();
  private final AtomicInteger connects = new AtomicInteger();
  private final List<Long> uploadLengths = new CopyOnWriteArrayList<>();
  private final long expiryTimer;
  private long metricsTimer = -1;

  /** One simulated sandbox: a directory with a home, and its running processes by pid. */
  public static final class Sandbox {
    public final String id;
    public final String templateId;
    public final Map<String, String> metadata;
    final Map<String, String> envVars;
    final String accessToken;
    public final Instant startedAt;
    volatile Instant endAt;
    /** Paused: its envd does not answer until {@code connect} resumes it. */
    volatile boolean paused;
    final Path root;
    final Path home;
    final Map<Long, Proc> processes = new ConcurrentHashMap<>();
    final UsageSampler sampler = new UsageSampler();
    /** {@code SandboxMetric}s collected so far, oldest first. */
    final java.util.Deque<JsonObject> metrics = new java.util.concurrent.ConcurrentLinkedDeque<>();

    Sandbox(String id, String templateId, Map<String, String> metadata, Map<String, String> envVars,
        String accessToken, Instant startedAt, Instant endAt, Path root) {
      this.id = id;
      this.templateId = templateId;
      this.metadata = Map.copyOf(metadata);
      this.envVars = Map.copyOf(envVars);
      this.accessToken = accessToken;
      this.startedAt = startedAt;
      this.endAt = endAt;
      this.root = root;
      this.home = root.resolve("home/user");
    }

    public Instant endAt() {
      return endAt;
    }

    /** Pids of the processes still running. */
    public java.util.Set<Long> pids() {
      return java.util.Set.copyOf(processes.keySet());
    }

    /** A path inside the sandbox as the host sees it. */
    public Path hostPath(String sandboxPath) {
      return root.resolve(sandboxPath.startsWith("/") ? sandboxPath.substring(1) : "home/user/" + sandboxPath);
    }
  }

  /** A running process and the stream it writes to. */
  static final class Proc {
    volatile ExecHandle handle;
    volatile String lastSignal;
    volatile boolean deadline;
    final Out out;

    Proc(Out out) {
      this.out = out;
    }
  }

  private E2bSimulator(Vertx vertx, Path root, SpecValidator api, SpecValidator envd) {
    this.vertx = vertx;
    this.root = root;
    this.api = api;
    this.envd = envd;
    this.apiServer = vertx.createHttpServer().requestHandler(req -> {
      timed(req);
      onApi(req);
    });
    this.envdServer = vertx.createHttpServer().requestHandler(req -> {
      timed(req);
      onEnvd(req);
    });
    this.expiryTimer = vertx.setPeriodic(100, id -> expire());
    metricsIntervalMs(1_000);
  }

  private final java.util.concurrent.atomic.AtomicLong answering = new java.util.concurrent.atomic.AtomicLong();

  private void timed(io.vertx.core.http.HttpServerRequest req) {
    long t0 = System.nanoTime();
    req.response().endHandler(v -> answering.addAndGet(System.nanoTime() - t0));
  }

  /**
   * Nanoseconds spent answering requests so far, each from its arrival to the end of its response (a
   * benchmark reads it around a call to see how long the simulator itself took).
   */
  public long answeringNanos() {
    return answering.get();
  }

  /** Starts both servers on free ports of the loopback interface. */
  public static E2bSimulator start() {
    Vertx vertx = Vertx.vertx();
    try {
      Path root = Files.createTempDirectory("e2b-sim-");
      SpecValidator api = SpecValidator.load(vertx, "e2b/openapi.yml").await(60, TimeUnit.SECONDS);
      SpecValidator envd = SpecValidator.load(vertx, "e2b/envd/envd.yaml").await(60, TimeUnit.SECONDS);
      E2bSimulator sim = new E2bSimulator(vertx, root, api, envd);
      sim.apiServer.listen(0, "127.0.0.1").await(10, TimeUnit.SECONDS);
      sim.envdServer.listen(0, "127.0.0.1").await(10, TimeUnit.SECONDS);
      return sim;
    } catch (Exception e) {
      vertx.close();
      throw new IllegalStateException("simulator did not start", e);
    }
  }

  public String apiUrl() {
    return "http://127.0.0.1:" + apiServer.actualPort();
  }

  public String sandboxUrl() {
    return "http://127.0.0.1:" + envdServer.actualPort();
  }

  /** Provider settings pointing at this simulator, as the gateway reads them. */
  public Map<String, String> env() {
    return Map.of("E2B_API_KEY", API_KEY, "E2B_API_URL", apiUrl(), "E2B_SANDBOX_URL", sandboxUrl());
  }

  public Faults faults() {
    return faults;
  }

  /** Requests refused for not conforming to E2B's specs or protos, or for bad credentials. */
  public List<String> violations() {
    return List.copyOf(violations);
  }

  /** Forgets the violations seen so far (for a test that provoked one on purpose). */
  public void clearViolations() {
    violations.clear();
  }

  /** {@code METHOD path} of every request received, in order. */
  public List<String> requests() {
    return List.copyOf(requests);
  }

  /** The Content-Length of every {@code POST /files}, in order (-1 for a body sent without one). */
  public List<Long> uploadLengths() {
    return List.copyOf(uploadLengths);
  }

  /** How many sandboxes a {@code DELETE /sandboxes/{id}} removed. */
  public int kills() {
    return kills.get();
  }

  /** How many {@code POST /sandboxes/{id}/connect} calls were answered. */
  public int connects() {
    return connects.get();
  }

  /** Pauses a sandbox as E2B's auto-pause would: its envd stops answering until it is connected again. */
  public void pause(String id) {
    sandboxes.get(id).paused = true;
  }

  public Map<String, Sandbox> sandboxes() {
    return Map.copyOf(sandboxes);
  }

  /**
   * How often every sandbox's usage is collected for {@code GET /sandboxes/{id}/metrics} (E2B collects
   * every few seconds); 0 stops collecting, so a sandbox created meanwhile has no metrics yet.
   */
  public synchronized E2bSimulator metricsIntervalMs(long ms) {
    if (metricsTimer >= 0) {
      vertx.cancelTimer(metricsTimer);
      metricsTimer = -1;
    }
    if (ms > 0) {
      metricsTimer = vertx.setPeriodic(ms, t -> collectMetrics());
    }
    return this;
  }

  /** Creates a sandbox directly, as another client of the same team would. */
  public Sandbox createBehindTheBack(Map<String, String> metadata, int timeoutSecs) {
    return newSandbox("base", metadata, Map.of(), true, timeoutSecs);
  }

  // ---- control plane -----------------------------------------------------------------------------------

  private void onApi(HttpServerRequest req) {
    req.pause();
    requests.add(req.method() + " " + req.path());
    Faults.Fault fault = faults.take(req);
    if (fault != null && fault.kind() == Faults.Kind.DELAY) {
      vertx.setTimer(fault.delayMs(), t -> handleApi(req, null));
    } else {
      handleApi(req, fault);
    }
  }

  private void handleApi(HttpServerRequest req, Faults.Fault fault) {
    // paused while a delay ran; every body reader below attaches in this same event-loop turn
    req.resume();
    if (fault != null && applyEarly(req, fault)) {
      return;
    }
    if (!API_KEY.equals(req.getHeader("X-API-Key"))) {
      violations.add("control plane without a valid X-API-Key: " + req.method() + " " + req.path());
      apiError(req.response(), 401, "Invalid API key");
      return;
    }
    boolean lose = fault != null && fault.kind() == Faults.Kind.LOSE_RESPONSE;
    api.validate(req).onComplete(ar -> {
      if (ar.failed()) {
        violations.add(ar.cause().getMessage());
        apiError(req.response(), 400, "request does not conform: " + ar.cause().getMessage());
        return;
      }
      Reply reply = routeApi(req, ar.result());
      if (lose) {
        req.connection().close();
        return;
      }
      reply.send(req.response());
    });
  }

  /** An answer not yet sent, so a lost-response fault can drop it after the effects happened. */
  private record Reply(int status, Object body, Map<String, String> headers) {
    static Reply json(int status, Object body) {
      return new Reply(status, body, Map.of());
    }

    void send(HttpServerResponse res) {
      res.setStatusCode(status);
      headers.forEach(res::putHeader);
      if (body == null) {
        res.end();
      } else {
        res.putHeader("Content-Type", "application/json").end(body instanceof JsonObject j ? j.encode()
            : ((JsonArray) body).encode());
      }
    }
  }

  private Reply routeApi(HttpServerRequest req, ValidatedRequest v) {
    String path = req.path();
    if (req.method() == HttpMethod.POST && path.equals("/sandboxes")) {
      return create(v.getBody().getJsonObject());
    }
    if (req.method() == HttpMethod.GET && path.equals("/v2/sandboxes")) {
      return list(req);
    }
    Matcher m = SANDBOX_PATH.matcher(path);
    if (m.matches()) {
      Sandbox s = sandboxes.get(m.group(1));
      if (s == null) {
        return Reply.json(404, new JsonObject().put("code", 404).put("message", "sandbox not found"));
      }
      if ("/timeout".equals(m.group(2)) && req.method() == HttpMethod.POST) {
        s.endAt = Instant.now().plusSeconds(v.getBody().getJsonObject().getInteger("timeout"));
        return Reply.json(204, null);
      }
      if ("/metrics".equals(m.group(2)) && req.method() == HttpMethod.GET) {
        return metrics(s, req);
      }
      if ("/pause".equals(m.group(2)) && req.method() == HttpMethod.POST) {
        if (s.paused) {
          return Reply.json(409, new JsonObject().put("code", 409).put("message", "sandbox is already paused"));
        }
        s.paused = true;
        return Reply.json(204, null);
      }
      if ("/connect".equals(m.group(2)) && req.method() == HttpMethod.POST) {
        // resumes a paused sandbox (201) or answers a running one (200); the lifetime is only ever extended
        boolean resumed = s.paused;
        s.paused = false;
        Instant wanted = Instant.now().plusSeconds(v.getBody().getJsonObject().getInteger("timeout"));
        if (wanted.isAfter(s.endAt)) {
          s.endAt = wanted;
        }
        connects.incrementAndGet();
        JsonObject out = new JsonObject().put("templateID", s.templateId).put("sandboxID", s.id)
            .put("clientID", "6532622b").put("envdVersion", "0.2.4");
        if (s.accessToken != null) {
          out.put("envdAccessToken", s.accessToken);
        }
        return Reply.json(resumed ? 201 : 200, out);
      }
      if (m.group(2) == null && req.method() == HttpMethod.GET) {
        return Reply.json(200, detail(s, true));
      }
      if (m.group(2) == null && req.method() == HttpMethod.DELETE) {
        kill(s);
        kills.incrementAndGet();
        return Reply.json(204, null);
      }
    }
    violations.add("not simulated: " + req.method() + " " + path);
    return Reply.json(501, new JsonObject().put("code", 501).put("message", "not simulated"));
  }

  @SuppressWarnings("unchecked")
  private Reply create(JsonObject body) {
    Map<String, String> metadata = body.containsKey("metadata")
        ? (Map<String, String>) (Map<?, ?>) body.getJsonObject("metadata").getMap() : Map.of();
    Map<String, String> env = body.containsKey("envVars")
        ? (Map<String, String>) (Map<?, ?>) body.getJsonObject("envVars").getMap() : Map.of();
    Sandbox s = newSandbox(body.getString("templateID"), metadata, env, body.getBoolean("secure", false),
        body.getInteger("timeout", 15));
    JsonObject out = new JsonObject().put("templateID", s.templateId).put("sandboxID", s.id)
        .put("clientID", "6532622b").put("envdVersion", "0.2.4");
    if (s.accessToken != null) {
      out.put("envdAccessToken", s.accessToken);
    }
    return Reply.json(201, out);
  }

  private Sandbox newSandbox(String template, Map<String, String> metadata, Map<String, String> env, boolean secure,
      int timeoutSecs) {
    String id = "i" + token(19);
    Path dir = root.resolve(id);
    try {
      Files.createDirectories(dir.resolve("home/user"));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    Instant now = Instant.now();
    Sandbox s = new Sandbox(id, template, metadata, env, secure ? token(32) : null, now,
        now.plusSeconds(timeoutSecs), dir);
    sandboxes.put(id, s);
    return s;
  }

  private static JsonObject detail(Sandbox s, boolean withToken) {
    JsonObject j = new JsonObject().put("templateID", s.templateId).put("sandboxID", s.id).put("clientID", "6532622b")
        .put("startedAt", s.startedAt.toString()).put("endAt", s.endAt.toString()).put("cpuCount", CPU_COUNT)
        .put("memoryMB", MEMORY_MB).put("diskSizeMB", DISK_SIZE_MB).put("state", s.paused ? "paused" : "running")
        .put("envdVersion", "0.2.4")
        .put("metadata", new JsonObject(new LinkedHashMap<>(s.metadata)));
    if (withToken && s.accessToken != null) {
      j.put("envdAccessToken", s.accessToken);
    }
    return j;
  }

  /** {@code GET /v2/sandboxes}: metadata filter ({@code k=v&k2=v2}, URL-encoded), pages of {@code limit}. */
  private Reply list(HttpServerRequest req) {
    Map<String, String> filter = new HashMap<>();
    String metadata = req.getParam("metadata");
    if (metadata != null && !metadata.isEmpty()) {
      for (String pair : metadata.split("&")) {
        String[] kv = pair.split("=", 2);
        filter.put(URLDecoder.decode(kv[0], StandardCharsets.UTF_8),
            kv.length > 1 ? URLDecoder.decode(kv[1], StandardCharsets.UTF_8) : "");
      }
    }
    int limit = req.getParam("limit") == null ? 100 : Integer.parseInt(req.getParam("limit"));
    int from = req.getParam("nextToken") == null ? 0 : Integer.parseInt(req.getParam("nextToken"));
    List<Sandbox> matching = sandboxes.values().stream()
        .filter(s -> filter.entrySet().stream().allMatch(e -> e.getValue().equals(s.metadata.get(e.getKey()))))
        .sorted(Comparator.comparing((Sandbox s) -> s.startedAt).thenComparing(s -> s.id))
        .toList();
    JsonArray page = new JsonArray();
    matching.stream().skip(from).limit(limit).forEach(s -> page.add(detail(s, false)));
    Map<String, String> headers = from + limit < matching.size()
        ? Map.of("X-Next-Token", String.valueOf(from + limit)) : Map.of();
    return new Reply(200, page, headers);
  }

  /**
   * {@code GET /sandboxes/{id}/metrics}: the samples collected with {@code start <= timestampUnix <= end}
   * (start defaults to the sandbox's start, end to now), oldest first; an empty array before the first one.
   */
  private Reply metrics(Sandbox s, HttpServerRequest req) {
    long now = Instant.now().getEpochSecond();
    long start = req.getParam("start") == null ? s.startedAt.getEpochSecond() : Long.parseLong(req.getParam("start"));
    long end = req.getParam("end") == null ? now : Long.parseLong(req.getParam("end"));
    if (start > end) {
      return Reply.json(400, new JsonObject().put("code", 400).put("message", "start must not be after end"));
    }
    JsonArray out = new JsonArray();
    for (JsonObject m : s.metrics) {
      long ts = m.getLong("timestampUnix");
      if (ts >= start && ts <= end) {
        out.add(m.copy());
      }
    }
    return Reply.json(200, out);
  }

  /**
   * Samples every sandbox as E2B's collector does: CPU over the time since its previous sample, as a
   * percentage of the template's CPUs; memory as the resident size of its processes; disk as the bytes of
   * its files.
   */
  private void collectMetrics() {
    List<Sandbox> live = List.copyOf(sandboxes.values());
    vertx.executeBlocking(() -> {
      for (Sandbox s : live) {
        UsageSampler.Usage u = s.sampler.sample(s.pids(), s.root);
        Instant at = Instant.now();
        double pct = Math.min(100.0, Math.round(u.cpus() / CPU_COUNT * 10_000) / 100.0);
        s.metrics.addLast(new JsonObject().put("timestamp", at.toString()).put("timestampUnix", at.getEpochSecond())
            .put("cpuCount", CPU_COUNT).put("cpuUsedPct", pct).put("memUsed", u.memoryBytes())
            .put("memTotal", (long) MEMORY_MB << 20).put("memCache", 0L).put("diskUsed", u.diskBytes())
            .put("diskTotal", (long) DISK_SIZE_MB << 20));
        while (s.metrics.size() > KEPT_SAMPLES) {
          s.metrics.pollFirst();
        }
      }
      return null;
    }, false);
  }

  private static void apiError(HttpServerResponse res, int status, String message) {
    res.setStatusCode(status).putHeader("Content-Type", "application/json")
        .end(new JsonObject().put("code", status).put("message", message).encode());
  }

  /** Applies a fault that replaces handling; true when the request is done with. */
  private boolean applyEarly(HttpServerRequest req, Faults.Fault fault) {
    switch (fault.kind()) {
      case STATUS -> {
        HttpServerResponse res = req.response().setStatusCode(fault.status());
        fault.headers().forEach(res::putHeader);
        res.putHeader("Content-Type", "application/json")
            .end((fault.body() == null ? new JsonObject().put("code", fault.status()).put("message", "injected")
                : fault.body()).encode());
        return true;
      }
      case DROP -> {
        req.connection().close();
        return true;
      }
      default -> {
        return false;
      }
    }
  }

  // ---- lifecycle -----------------------------------------------------------------------------------------

  private void expire() {
    Instant now = Instant.now();
    sandboxes.values().stream().filter(s -> s.endAt.isBefore(now)).forEach(this::kill);
  }

  /** The sandbox vanishes: its processes are killed, their streams cut, its files deleted. */
  private void kill(Sandbox s) {
    if (sandboxes.remove(s.id) == null) {
      return;
    }
    List<Proc> procs = new ArrayList<>(s.processes.values());
    s.processes.clear();
    vertx.executeBlocking(() -> {
      for (Proc p : procs) {
        p.out.cut();
        if (p.handle != null) {
          p.handle.signal("KILL");
        }
      }
      deleteTree(s.root);
      return null;
    });
  }

  private static void deleteTree(Path dir) {
    for (int attempt = 0; attempt < 3 && Files.exists(dir); attempt++) {
      try (Stream<Path> walk = Files.walk(dir)) {
        walk.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
      } catch (IOException | UncheckedIOException ignored) {
        // a process killed a moment ago may still be writing: walk again
      }
    }
  }

  // ---- envd ---------------------------------------------------------------------------------------------

  private void onEnvd(HttpServerRequest req) {
    req.pause();
    requests.add("envd " + req.method() + " " + req.path());
    Faults.Fault fault = faults.take(req);
    if (fault != null && fault.kind() == Faults.Kind.DELAY) {
      vertx.setTimer(fault.delayMs(), t -> handleEnvd(req, null));
    } else {
      handleEnvd(req, fault);
    }
  }

  private void handleEnvd(HttpServerRequest req, Faults.Fault fault) {
    req.resume();
    if (fault != null && applyEarly(req, fault)) {
      return;
    }
    Sandbox s = sandboxes.get(String.valueOf(req.getHeader("E2b-Sandbox-Id")));
    if (!"49983".equals(req.getHeader("E2b-Sandbox-Port"))) {
      violations.add("envd request without E2b-Sandbox-Port 49983: " + req.path());
    }
    if (s == null || s.paused) {
      // the sandbox proxy's answer for a sandbox that is not (or no longer) running
      apiError(req.response(), 502, "The sandbox was not found");
      return;
    }
    boolean connect = req.path().startsWith("/process.") || req.path().startsWith("/filesystem.");
    if (s.accessToken != null && !s.accessToken.equals(req.getHeader("X-Access-Token"))) {
      violations.add("envd request without the sandbox's access token: " + req.path());
      if (connect) {
        connectError(req.response(), 401, "unauthenticated", "invalid access token");
      } else {
        apiError(req.response(), 401, "invalid access token");
      }
      return;
    }
    int dropAfter = fault != null && fault.kind() == Faults.Kind.DROP_STREAM ? fault.frames() : -1;
    switch (req.path()) {
      case "/process.Process/Start" -> start(req, s, dropAfter);
      case "/process.Process/SendInput" -> unary(req, SendInputRequest.newBuilder(), m -> sendInput(s, (SendInputRequest) m));
      case "/process.Process/CloseStdin" -> unary(req, CloseStdinRequest.newBuilder(), m -> closeStdin(s, (CloseStdinRequest) m));
      case "/process.Process/SendSignal" -> unary(req, SendSignalRequest.newBuilder(), m -> sendSignal(s, (SendSignalRequest) m));
      case "/filesystem.Filesystem/ListDir" -> unary(req, ListDirRequest.newBuilder(), m -> listDir(s, (ListDirRequest) m));
      case "/filesystem.Filesystem/Stat" -> unary(req, StatRequest.newBuilder(), m -> stat(s, (StatRequest) m));
      case "/filesystem.Filesystem/Move" -> unary(req, MoveRequest.newBuilder(), m -> move(s, (MoveRequest) m));
      case "/filesystem.Filesystem/Remove" -> unary(req, RemoveRequest.newBuilder(), m -> remove(s, (RemoveRequest) m));
      default -> {
        if (connect) {
          violations.add("not simulated: " + req.path());
          connectError(req.response(), 404, "unimplemented", "not simulated");
          return;
        }
        envd.validate(req).onComplete(ar -> {
          if (ar.failed() && emptyRawUpload(req, ar.cause())) {
            files(req, s, null);
            return;
          }
          if (ar.failed()) {
            violations.add(ar.cause().getMessage());
            apiError(req.response(), 400, "request does not conform: " + ar.cause().getMessage());
            return;
          }
          files(req, s, ar.result());
        });
      }
    }
  }

  /**
   * An empty file sent raw: the validator reads a zero-length body as a missing one, but envd's raw upload
   * just copies {@code r.Body} (nothing) into the file, so an empty file is a valid upload.
   */
  private static boolean emptyRawUpload(HttpServerRequest req, Throwable failure) {
    return req.method() == HttpMethod.POST && "0".equals(req.getHeader("Content-Length"))
        && String.valueOf(req.getHeader("Content-Type")).startsWith("application/octet-stream")
        && String.valueOf(failure.getMessage()).contains("does not contain the required body");
  }

  /** The outcome of a unary Connect method: a message, or a Connect error code with its HTTP status. */
  private record Answer(com.google.protobuf.MessageOrBuilder message, int status, String code) {
    static Answer ok(com.google.protobuf.MessageOrBuilder m) {
      return new Answer(m, 200, null);
    }

    static Answer error(int status, String code) {
      return new Answer(null, status, code);
    }
  }

  /** A unary Connect call with the JSON codec: headers and the message are checked strictly. */
  private void unary(HttpServerRequest req, com.google.protobuf.Message.Builder builder,
      java.util.function.Function<com.google.protobuf.Message, Answer> handler) {
    String type = String.valueOf(req.getHeader("Content-Type"));
    if (req.method() != HttpMethod.POST || !type.startsWith("application/json")
        || !"1".equals(req.getHeader("Connect-Protocol-Version"))) {
      violations.add("Connect unary call needs POST, application/json and Connect-Protocol-Version 1: " + req.path());
      connectError(req.response(), 415, "invalid_argument", "bad Connect unary request");
      return;
    }
    req.body().onSuccess(body -> {
      com.google.protobuf.Message m;
      try {
        m = ProtoJson.parse(body, builder);
      } catch (ProtoJson.Invalid e) {
        violations.add(e.getMessage());
        connectError(req.response(), 400, "invalid_argument", e.getMessage());
        return;
      }
      // handlers may touch pipes or spawn kill: off the event loop
      vertx.executeBlocking(() -> handler.apply(m)).onComplete(ar -> {
        Answer a = ar.succeeded() ? ar.result() : Answer.error(500, "internal");
        if (a.code() != null) {
          connectError(req.response(), a.status(), a.code(), a.code());
        } else {
          req.response().putHeader("Content-Type", "application/json").end(ProtoJson.print(a.message()));
        }
      });
    });
  }

  private static void connectError(HttpServerResponse res, int status, String code, String message) {
    res.setStatusCode(status).putHeader("Content-Type", "application/json")
        .end(new JsonObject().put("code", code).put("message", message).encode());
  }

  private Answer sendInput(Sandbox s, SendInputRequest r) {
    Proc p = s.processes.get((long) r.getProcess().getPid());
    if (p == null || p.handle == null) {
      return Answer.error(404, "not_found");
    }
    if (!r.getInput().hasStdin()) {
      return Answer.error(400, "invalid_argument");
    }
    try {
      p.handle.writeStdin(r.getInput().getStdin().toByteArray());
    } catch (RuntimeException e) {
      return Answer.error(400, "failed_precondition");
    }
    return Answer.ok(SendInputResponse.getDefaultInstance());
  }

  private Answer closeStdin(Sandbox s, CloseStdinRequest r) {
    Proc p = s.processes.get((long) r.getProcess().getPid());
    if (p == null || p.handle == null) {
      return Answer.error(404, "not_found");
    }
    p.handle.closeStdin();
    return Answer.ok(CloseStdinResponse.getDefaultInstance());
  }

  private Answer sendSignal(Sandbox s, SendSignalRequest r) {
    Proc p = s.processes.get((long) r.getProcess().getPid());
    if (p == null || p.handle == null) {
      return Answer.error(404, "not_found");
    }
    String sig = switch (r.getSignal()) {
      case SIGNAL_SIGTERM -> "TERM";
      case SIGNAL_SIGKILL -> "KILL";
      default -> null;
    };
    if (sig == null) {
      return Answer.error(400, "invalid_argument");
    }
    p.lastSignal = sig;
    p.handle.signal(sig);
    return Answer.ok(SendSignalResponse.getDefaultInstance());
  }

  private Answer listDir(Sandbox s, ListDirRequest r) {
    Path dir = resolve(s, r.getPath());
    if (dir == null || !Files.exists(dir)) {
      return Answer.error(404, "not_found");
    }
    if (!Files.isDirectory(dir)) {
      return Answer.error(400, "invalid_argument");
    }
    int depth = Math.max(1, r.getDepth());
    ListDirResponse.Builder out = ListDirResponse.newBuilder();
    try (Stream<Path> walk = Files.walk(dir, depth)) {
      walk.filter(p -> !p.equals(dir)).sorted().forEach(p -> out.addEntries(entry(s, p)));
    } catch (IOException e) {
      return Answer.error(500, "internal");
    }
    return Answer.ok(out);
  }

  /** {@code Stat}: envd answers not_found for a missing path. */
  private Answer stat(Sandbox s, StatRequest r) {
    Path p = resolve(s, r.getPath());
    if (p == null) {
      return Answer.error(400, "invalid_argument");
    }
    if (!Files.exists(p, LinkOption.NOFOLLOW_LINKS)) {
      return Answer.error(404, "not_found");
    }
    return Answer.ok(StatResponse.newBuilder().setEntry(entry(s, p)));
  }

  /** {@code Move}: a rename (destination parents created); a directory in the way fails as rename(2) does. */
  private Answer move(Sandbox s, MoveRequest r) {
    Path from = resolve(s, r.getSource());
    Path to = resolve(s, r.getDestination());
    if (from == null || to == null) {
      return Answer.error(400, "invalid_argument");
    }
    if (!Files.exists(from, LinkOption.NOFOLLOW_LINKS)) {
      return Answer.error(404, "not_found");
    }
    try {
      if (Files.isDirectory(to, LinkOption.NOFOLLOW_LINKS) && !Files.isDirectory(from, LinkOption.NOFOLLOW_LINKS)) {
        return Answer.error(500, "internal");
      }
      Files.createDirectories(to.getParent());
      Files.move(from, to, java.nio.file.StandardCopyOption.REPLACE_EXISTING,
          java.nio.file.StandardCopyOption.ATOMIC_MOVE);
    } catch (IOException e) {
      return Answer.error(500, "internal");
    }
    return Answer.ok(MoveResponse.newBuilder().setEntry(entry(s, to)));
  }

  /** {@code Remove}: Go's {@code os.RemoveAll}, recursive and content with a missing path. */
  private Answer remove(Sandbox s, RemoveRequest r) {
    Path p = resolve(s, r.getPath());
    if (p == null) {
      return Answer.error(400, "invalid_argument");
    }
    if (Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS)) {
      deleteTree(p);
    } else {
      try {
        Files.deleteIfExists(p);
      } catch (IOException e) {
        return Answer.error(500, "internal");
      }
    }
    return Answer.ok(RemoveResponse.newBuilder());
  }

  private static EntryInfo entry(Sandbox s, Path p) {
    try {
      boolean link = Files.isSymbolicLink(p);
      boolean dir = Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS);
      Instant modified = Files.getLastModifiedTime(p, LinkOption.NOFOLLOW_LINKS).toInstant();
      java.util.Set<java.nio.file.attribute.PosixFilePermission> perms =
          Files.getPosixFilePermissions(p, LinkOption.NOFOLLOW_LINKS);
      int mode = 0;
      for (java.nio.file.attribute.PosixFilePermission perm : perms) {
        mode |= 1 << (8 - perm.ordinal());
      }
      // Go's os.FileMode: permission bits, plus ModeDir / ModeSymlink
      long goMode = mode | (dir ? 1L << 31 : 0) | (link ? 1L << 27 : 0);
      return EntryInfo.newBuilder().setName(p.getFileName().toString())
          .setType(link ? FileType.FILE_TYPE_SYMLINK : dir ? FileType.FILE_TYPE_DIRECTORY : FileType.FILE_TYPE_FILE)
          .setPath("/" + s.root.relativize(p)).setSize(Files.size(p)).setMode((int) goMode)
          .setPermissions((link ? "L" : dir ? "d" : "-") + PosixFilePermissions.toString(perms))
          .setOwner("user").setGroup("user")
          .setModifiedTime(Timestamp.newBuilder().setSeconds(modified.getEpochSecond()).setNanos(modified.getNano()))
          .build();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** A sandbox path (absolute, {@code ~/...}, or relative to the home) on the host; null when it escapes. */
  private static Path resolve(Sandbox s, String path) {
    Path p;
    if (path == null || path.isEmpty()) {
      p = s.home;
    } else if (path.startsWith("/")) {
      p = s.root.resolve(path.substring(1));
    } else if (path.startsWith("~/") || path.equals("~")) {
      p = s.home.resolve(path.substring(1).replaceFirst("^/", ""));
    } else {
      p = s.home.resolve(path);
    }
    p = p.normalize();
    return p.startsWith(s.root) ? p : null;
  }

  private void files(HttpServerRequest req, Sandbox s, ValidatedRequest v) {
    if (req.path().equals("/health")) {
      req.response().setStatusCode(204).end();
      return;
    }
    if (!req.path().equals("/files")) {
      violations.add("not simulated: envd " + req.method() + " " + req.path());
      apiError(req.response(), 501, "not simulated");
      return;
    }
    Path file = resolve(s, req.getParam("path"));
    if (file == null || req.getParam("path") == null) {
      apiError(req.response(), 400, "invalid path");
      return;
    }
    if (req.method() == HttpMethod.GET) {
      // streamed from disk with its Content-Length, as Go's http.ServeContent does
      vertx.executeBlocking(() -> !Files.exists(file) ? 404 : Files.isDirectory(file) ? 400 : 200).onComplete(ar -> {
        int status = ar.succeeded() ? ar.result() : 500;
        if (status == 404) {
          apiError(req.response(), 404, "path does not exist");
        } else if (status == 400) {
          apiError(req.response(), 400, "path is a directory");
        } else if (status != 200) {
          apiError(req.response(), 500, "cannot read");
        } else {
          req.response().putHeader("Content-Type", "application/octet-stream").sendFile(file.toString())
              .onFailure(t -> req.connection().close());
        }
      });
      return;
    }
    String length = req.getHeader("Content-Length");
    uploadLengths.add(length == null ? -1L : Long.parseLong(length));
    String type = String.valueOf(req.getHeader("Content-Type"));
    if (!type.startsWith("application/octet-stream")) {
      violations.add("simulator handles octet-stream uploads only");
      apiError(req.response(), 400, "unsupported upload");
      return;
    }
    Buffer data = v == null || v.getBody() == null ? Buffer.buffer() : v.getBody().getBuffer();
    vertx.executeBlocking(() -> {
      Files.createDirectories(file.getParent());
      Files.write(file, data.getBytes());
      return null;
    }).onComplete(ar -> {
      if (ar.failed()) {
        apiError(req.response(), 500, "write failed");
      } else {
        req.response().putHeader("Content-Type", "application/json").end(new JsonArray().add(new JsonObject()
            .put("path", "/" + s.root.relativize(file)).put("name", file.getFileName().toString()).put("type", "file"))
            .encode());
      }
    });
  }

  // ---- process.Process/Start ----------------------------------------------------------------------------

  /**
   * Server-streaming Start: one request envelope in; start, data and end events out as envelopes, then the
   * end-of-stream message. The program is a real host process in the sandbox's home.
   */
  private void start(HttpServerRequest req, Sandbox s, int dropAfter) {
    if (!String.valueOf(req.getHeader("Content-Type")).startsWith("application/connect+json")) {
      violations.add("Start needs application/connect+json");
      connectError(req.response(), 415, "invalid_argument", "bad content type");
      return;
    }
    String deadline = req.getHeader("Connect-Timeout-Ms");
    if (deadline != null && !deadline.matches("[0-9]{1,10}")) {
      violations.add("bad Connect-Timeout-Ms");
      connectError(req.response(), 400, "invalid_argument", "bad timeout");
      return;
    }
    req.body().onSuccess(body -> {
      StartRequest start;
      try {
        if (body.length() < 5 || body.getByte(0) != 0 || body.getInt(1) != body.length() - 5) {
          throw new ProtoJson.Invalid("the request must be exactly one uncompressed envelope");
        }
        start = ProtoJson.parse(body.getBuffer(5, body.length()), StartRequest.newBuilder());
      } catch (ProtoJson.Invalid e) {
        violations.add(e.getMessage());
        connectError(req.response(), 400, "invalid_argument", e.getMessage());
        return;
      }
      HttpServerResponse res = req.response().setChunked(true).putHeader("Content-Type", "application/connect+json");
      Out out = new Out(vertx.getOrCreateContext(), res, dropAfter, req);
      res.closeHandler(v -> out.detach());
      res.writeHead();
      vertx.executeBlocking(() -> {
        run(s, start, out, deadline == null ? 0 : Long.parseLong(deadline), req.getHeader("Keepalive-Ping-Interval"));
        return null;
      });
    });
  }

  private void run(Sandbox s, StartRequest start, Out out, long deadlineMs, String keepalive) throws Exception {
    List<String> argv = new ArrayList<>();
    argv.add(start.getProcess().getCmd());
    argv.addAll(start.getProcess().getArgsList());
    Map<String, String> env = new LinkedHashMap<>(ProcessSpec.environment(s.home, s.envVars, Map.of()));
    env.put("PATH", System.getenv().getOrDefault("PATH", ProcessSpec.BASE_PATH));
    env.putAll(start.getProcess().getEnvsMap());
    Path cwd = start.getProcess().hasCwd() ? resolve(s, start.getProcess().getCwd()) : s.home;
    if (cwd == null || !Files.isDirectory(cwd)) {
      out.end(null, "invalid_argument");
      return;
    }
    Proc proc = new Proc(out);
    // output waits until the start event is queued and the handle is known (SendInput may follow at once)
    java.util.concurrent.CountDownLatch ready = new java.util.concurrent.CountDownLatch(1);
    boolean stdin = !start.hasStdin() || start.getStdin();
    ExecSink sink = new ExecSink() {
      @Override
      public void output(ai.bespokelabs.sandbox.adapters.spi.OutputSink.Stream stream, byte[] data) throws InterruptedException {
        ready.await();
        ProcessEvent.DataEvent.Builder d = ProcessEvent.DataEvent.newBuilder();
        if (stream == ai.bespokelabs.sandbox.adapters.spi.OutputSink.Stream.STDOUT) {
          d.setStdout(ByteString.copyFrom(data));
        } else {
          d.setStderr(ByteString.copyFrom(data));
        }
        out.put(event(ProcessEvent.newBuilder().setData(d)));
      }

      @Override
      public void exited(int exitCode, boolean timedOut, boolean cancelled, long durationMs) {
        try {
          ready.await();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
        s.processes.values().remove(proc);
        out.cancelTimers();
        if (proc.deadline) {
          out.end(null, "deadline_exceeded");
          return;
        }
        ProcessEvent.EndEvent.Builder end = ProcessEvent.EndEvent.newBuilder();
        Integer signo = proc.lastSignal == null ? null : proc.lastSignal.equals("KILL") ? 9 : 15;
        if (signo != null && exitCode == 128 + signo) {
          // as envd reports a process ended by a signal (Go's ProcessState)
          end.setExitCode(-1).setExited(false).setStatus(signo == 9 ? "signal: killed" : "signal: terminated");
        } else {
          end.setExitCode(exitCode).setExited(true).setStatus("exit status " + exitCode);
        }
        out.end(event(ProcessEvent.newBuilder().setEnd(end)), null);
      }
    };
    long[] pid = {-1};
    try {
      proc.handle = runner.start(new ProcessSpec(argv, cwd, env, 24 * 3600, Integer.MAX_VALUE), stdin, sink,
          started -> pid[0] = started);
    } catch (RuntimeException e) {
      // envd could not start the program (not found, not executable)
      out.end(null, "invalid_argument");
      return;
    }
    s.processes.put(pid[0], proc);
    if (!sandboxes.containsKey(s.id)) {
      proc.handle.signal("KILL");
      out.cut();
    }
    out.put(event(ProcessEvent.newBuilder().setStart(ProcessEvent.StartEvent.newBuilder().setPid((int) pid[0]))));
    ready.countDown();
    if (deadlineMs > 0) {
      out.timer(vertx.setTimer(deadlineMs, t -> {
        proc.deadline = true;
        vertx.executeBlocking(() -> {
          proc.handle.signal("KILL");
          return null;
        });
      }));
    }
    if (keepalive != null && keepalive.matches("[1-9][0-9]{0,5}")) {
      out.timer(vertx.setPeriodic(Long.parseLong(keepalive) * 1000, t -> out.offer(
          event(ProcessEvent.newBuilder().setKeepalive(ProcessEvent.KeepAlive.getDefaultInstance())))));
    }
  }

  private static Buffer event(ProcessEvent.Builder e) {
    return envelope(0, ProtoJson.print(StartResponse.newBuilder().setEvent(e)));
  }

  private static Buffer envelope(int flags, Buffer message) {
    return Buffer.buffer().appendByte((byte) flags).appendInt(message.length()).appendBuffer(message);
  }

  /**
   * The response side of one Start stream: program threads put envelopes into a small bounded queue (and
   * block when it is full), the event loop writes them while the socket has room. A slow reader thus
   * stalls the program, as envd's pipes would.
   */
  private final class Out {
    private final Context context;
    private final HttpServerResponse res;
    private final HttpServerRequest req;
    private final ArrayBlockingQueue<Buffer> queue = new ArrayBlockingQueue<>(16);
    private final List<Long> timers = new CopyOnWriteArrayList<>();
    private final Buffer last = Buffer.buffer();
    private volatile boolean detached;
    private volatile boolean ending;
    private boolean ended;
    private int dropAfter;
    private boolean pumping;

    Out(Context context, HttpServerResponse res, int dropAfter, HttpServerRequest req) {
      this.context = context;
      this.res = res;
      this.dropAfter = dropAfter;
      this.req = req;
    }

    void put(Buffer frame) throws InterruptedException {
      while (!detached && !queue.offer(frame, 50, TimeUnit.MILLISECONDS)) {
        // waiting for the reader
      }
      context.runOnContext(v -> pump());
    }

    void offer(Buffer frame) {
      if (!detached && !ending && queue.offer(frame)) {
        context.runOnContext(v -> pump());
      }
    }

    /** The end event (if any) and the end-of-stream message ({@code {}} or an error). */
    void end(Buffer endEvent, String errorCode) {
      try {
        if (endEvent != null) {
          put(endEvent);
        }
        JsonObject eos = errorCode == null ? new JsonObject()
            : new JsonObject().put("error", new JsonObject().put("code", errorCode).put("message", errorCode));
        ending = true;
        put(envelope(0x02, eos.toBuffer()));
        put(last);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }

    void timer(long id) {
      timers.add(id);
    }

    void cancelTimers() {
      timers.forEach(vertx::cancelTimer);
    }

    /** The client went away: the program keeps running, its output is discarded (as envd does). */
    void detach() {
      detached = true;
      queue.clear();
    }

    /** The sandbox vanished under the stream. */
    void cut() {
      detached = true;
      queue.clear();
      cancelTimers();
      context.runOnContext(v -> req.connection().close());
    }

    private void pump() {
      if (pumping || ended) {
        return;
      }
      pumping = true;
      try {
        while (!detached && !res.writeQueueFull()) {
          Buffer b = queue.poll();
          if (b == null) {
            return;
          }
          if (b == last) {
            cancelTimers();
            ended = true;
            res.end();
            return;
          }
          res.write(b);
          if (dropAfter > 0 && --dropAfter == 0) {
            detached = true;
            queue.clear();
            req.connection().close();
            return;
          }
        }
        if (!detached) {
          res.drainHandler(v -> pump());
        } else {
          queue.clear();
        }
      } finally {
        pumping = false;
      }
    }
  }

  private static String token(int n) {
    String alphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
    StringBuilder b = new StringBuilder(n);
    for (int i = 0; i < n; i++) {
      b.append(alphabet.charAt(RANDOM.nextInt(alphabet.length())));
    }
    return b.toString();
  }

  /** Kills every sandbox (and so every process) and stops the servers. */
  @Override
  public void close() {
    vertx.cancelTimer(expiryTimer);
    metricsIntervalMs(0);
    sandboxes.values().forEach(s -> s.processes.values().forEach(p -> {
      if (p.handle != null) {
        p.handle.signal("KILL");
      }
    }));
    sandboxes.clear();
    try {
      vertx.close().await(10, TimeUnit.SECONDS);
    } catch (Exception ignored) {
      // best effort
    }
    deleteTree(root);
  }
}
