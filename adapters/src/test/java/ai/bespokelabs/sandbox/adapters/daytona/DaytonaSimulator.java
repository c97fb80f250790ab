package ai.bespokelabs.sandbox.adapters.daytona;

import ai.bespokelabs.sandbox.adapters.sim.SpecValidator;
import ai.bespokelabs.sandbox.adapters.sim.UsageSampler;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpConnection;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.http.ServerWebSocket;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.openapi.validation.ValidatedRequest;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A local stand-in for Daytona: the control plane ({@code <url>/sandbox...}) and each sandbox's toolbox
 * ({@code <toolboxProxyUrl>/<sandboxId>/...}) on one Vert.x server, for the subset the adapter uses.
 *
 * <p>It is strict where Daytona is: every request must carry {@code Authorization: Bearer <key>} (else 401)
 * and must conform to Daytona's published OpenAPI documents (control plane and toolbox; else 400 and the
 * violation is recorded in {@link #violations()}, which tests assert empty). It is realistic where the
 * adapter depends on it: sandboxes go {@code creating} (or {@code pending_build}) to {@code started} after
 * a delay, stop when idle past their {@code autoStopInterval} (one "minute" is {@link #minuteMs} long) and
 * vanish on {@code autoDeleteInterval=0}, both set at create or later through {@code POST
 * /sandbox/{id}/autostop/{minutes}} and {@code .../autodelete/{minutes}}; session commands are real {@code /bin/sh} processes in a per-sandbox
 * directory whose output is logged with Daytona's 3-byte stdout/stderr markers and followed over a
 * WebSocket that honours backpressure; {@code process/execute} splits its command like the daemon does;
 * files live on disk under the sandbox directory (paths are resolved against it, the sandbox user's home);
 * telemetry is recorded every {@link #telemetryIntervalMs} from each started sandbox's real processes and
 * files, under the metric names Daytona's sandboxes export.
 *
 * <p>Faults are injected per request ({@link #inject}): any status with a retry hint, slow answers,
 * dropped connections, answers lost after the work was done, log streams cut after some bytes; and
 * {@link #failNextBuild()}. Later simulators copy this shape: strict front (auth, spec), a small state
 * model, real processes, injectable faults, inspectable state.
 */
public final class DaytonaSimulator implements AutoCloseable {
  /** One injected fault; see the factory methods. */
  public record Fault(int status, Long retryAfterSecs, long delayMs, boolean dropped, boolean lose, long streamBytes) {
    /** Answer with {@code status} instead of doing the work. */
    public static Fault status(int status) {
      return new Fault(status, null, 0, false, false, -1);
    }

    /** 429 with a {@code Retry-After} hint. */
    public static Fault rateLimited(long retryAfterSecs) {
      return new Fault(429, retryAfterSecs, 0, false, false, -1);
    }

    /** Do the work, but answer only after {@code ms}. */
    public static Fault delay(long ms) {
      return new Fault(0, null, ms, false, false, -1);
    }

    /** Close the connection without doing anything. */
    public static Fault drop() {
      return new Fault(0, null, 0, true, false, -1);
    }

    /** Do the work, then close the connection instead of answering. */
    public static Fault loseResponse() {
      return new Fault(0, null, 0, false, true, -1);
    }

    /** For a followed log: cut the connection (no close frame) after {@code bytes} bytes. */
    public static Fault cutStreamAfter(long bytes) {
      return new Fault(0, null, 0, false, false, bytes);
    }
  }

  private record Injected(HttpMethod method, Pattern path, Fault fault) {}

  /** An HTTP answer. */
  private record Answer(int status, String contentType, Buffer body, Map<String, String> headers) {
    static Answer json(int status, Object json) {
      Buffer b = json instanceof JsonArray a ? a.toBuffer() : ((JsonObject) json).toBuffer();
      return new Answer(status, "application/json", b, Map.of());
    }

    static Answer empty(int status) {
      return new Answer(status, null, Buffer.buffer(), Map.of());
    }

    /** The answer was already sent (streamed). */
    static final Answer STREAMED = new Answer(0, null, null, Map.of());

    static Answer error(int status, String message) {
      return json(status, new JsonObject().put("statusCode", status).put("message", message));
    }
  }

  private static final String API = "/api";
  private static final String TOOLBOX = "/toolbox";
  private static final Pattern TOOLBOX_PATH = Pattern.compile("^/toolbox/([^/]+)(/.*)?$");
  private static final byte[] OUT = {1, 1, 1};
  private static final byte[] ERR = {2, 2, 2};
  private static final int CHUNK = 64 * 1024;

  private final Vertx vertx;
  private final String apiKey;
  private final Path root;
  private final SpecValidator control;
  private final SpecValidator toolbox;
  private final HttpServer server;
  private final Map<String, Sandbox> sandboxes = new ConcurrentHashMap<>();
  private final List<Injected> faults = new CopyOnWriteArrayList<>();
  private final List<String> violations = new CopyOnWriteArrayList<>();
  private final List<String> requests = new CopyOnWriteArrayList<>();
  private final long timer;
  private volatile long startDelayMs = 150;
  private volatile long minuteMs = 60_000;
  private volatile boolean failNextBuild;
  private volatile boolean telemetryEnabled = true;
  private long telemetryTimer = -1;

  private DaytonaSimulator(Vertx vertx, String apiKey, Path root, SpecValidator control, SpecValidator toolbox,
      HttpServer server) {
    this.vertx = vertx;
    this.apiKey = apiKey;
    this.root = root;
    this.control = control;
    this.toolbox = toolbox;
    this.server = server;
    this.timer = vertx.setPeriodic(25, t -> tick());
    telemetryIntervalMs(1_000);
  }

  /** Starts a simulator on a free port of 127.0.0.1 accepting {@code apiKey}. */
  public static DaytonaSimulator start(String apiKey) {
    Vertx vertx = Vertx.vertx();
    try {
      SpecValidator control = SpecValidator.load(vertx, "daytona/api/openapi.yaml", API).await(60, TimeUnit.SECONDS);
      SpecValidator toolbox = SpecValidator.load(vertx, "daytona/toolbox/openapi.yaml", TOOLBOX + "/sandbox")
          .await(60, TimeUnit.SECONDS);
      Path root = Files.createTempDirectory("daytona-sim-");
      DaytonaSimulator[] self = new DaytonaSimulator[1];
      HttpServer server = vertx.createHttpServer(new HttpServerOptions().setHost("127.0.0.1").setPort(0))
          .requestHandler(req -> self[0].handle(req));
      server.listen().await(10, TimeUnit.SECONDS);
      self[0] = new DaytonaSimulator(vertx, apiKey, root, control, toolbox, server);
      return self[0];
    } catch (Exception e) {
      vertx.close();
      throw new IllegalStateException("the Daytona simulator did not start", e);
    }
  }

  // -------------------------------------------------------------------------------------------- test API

  /** The control-plane URL, as {@code DAYTONA_API_URL}. */
  public String url() {
    return "http://127.0.0.1:" + server.actualPort() + API;
  }

  /** Requests that Daytona's specs do not allow, or that the simulator does not implement. */
  public List<String> violations() {
    return List.copyOf(violations);
  }

  /** Forgets the violations seen so far (for a test that provoked one on purpose). */
  public void clearViolations() {
    violations.clear();
  }

  /** Every authorised, valid request so far as {@code METHOD path}. */
  public List<String> requests() {
    return List.copyOf(requests);
  }

  /** How many requests so far matched {@code method} and the regular expression {@code path}. */
  public long count(HttpMethod method, String path) {
    Pattern p = Pattern.compile(path);
    return requests.stream().filter(r -> r.startsWith(method.name() + " ")
        && p.matcher(r.substring(method.name().length() + 1)).matches()).count();
  }

  /** The next request matching {@code method} and the regular expression {@code path} gets {@code fault}. */
  public DaytonaSimulator inject(HttpMethod method, String path, Fault fault) {
    faults.add(new Injected(method, Pattern.compile(path), fault));
    return this;
  }

  /** Drops the faults injected and not yet fired. */
  public void clearFaults() {
    faults.clear();
  }

  /** How long sandboxes take from create to {@code started}; 0 for started already in the create answer. */
  public DaytonaSimulator startDelayMs(long ms) {
    this.startDelayMs = ms;
    return this;
  }

  /** The length of one of Daytona's interval minutes (auto-stop, auto-delete). */
  public DaytonaSimulator minuteMs(long ms) {
    this.minuteMs = ms;
    return this;
  }

  /** The next sandbox's build fails ({@code build_failed}). */
  public DaytonaSimulator failNextBuild() {
    this.failNextBuild = true;
    return this;
  }

  /** The sandbox as the API shows it, or null when there is none. */
  public JsonObject sandbox(String id) {
    Sandbox s = sandboxes.get(id);
    return s == null ? null : s.dto();
  }

  /** The body of the create request of a sandbox, or null. */
  public JsonObject createRequest(String id) {
    Sandbox s = sandboxes.get(id);
    return s == null ? null : s.body.copy();
  }

  /** All live sandboxes as the API shows them. */
  public List<JsonObject> sandboxes() {
    return sandboxes.values().stream().map(Sandbox::dto).toList();
  }

  /** A sandbox's directory (its user's home). */
  public Path dir(String id) {
    return sandboxes.get(id).dir;
  }

  /** Creates a started sandbox directly, as someone using Daytona behind the gateway's back would. */
  public String createDirectly(JsonObject labels) {
    Sandbox s = newSandbox(new JsonObject().put("labels", labels));
    s.state = "started";
    return s.id;
  }

  /** The sandbox is stopped at once (from Daytona's dashboard, say): its processes end. */
  public void stopDirectly(String id) {
    Sandbox s = sandboxes.get(id);
    s.state = "stopped";
    s.kill();
  }

  /**
   * How often every started sandbox's usage is recorded as telemetry ({@code GET
   * /sandbox/{id}/telemetry/metrics}); 0 records nothing more, so a sandbox created meanwhile has no data.
   */
  public synchronized DaytonaSimulator telemetryIntervalMs(long ms) {
    if (telemetryTimer >= 0) {
      vertx.cancelTimer(telemetryTimer);
      telemetryTimer = -1;
    }
    if (ms > 0) {
      telemetryTimer = vertx.setPeriodic(ms, t -> collectTelemetry());
    }
    return this;
  }

  /** Whether the organization has telemetry; without it the endpoint answers 403, as Daytona's feature gate. */
  public DaytonaSimulator telemetryEnabled(boolean enabled) {
    this.telemetryEnabled = enabled;
    return this;
  }

  /** Records data points for a sandbox as its telemetry collector would have. */
  public void addTelemetry(String id, Instant at, Map<String, Double> values) {
    sandboxes.get(id).telemetry.addLast(new TelemetryPoint(at, Map.copyOf(values)));
  }

  /** The sandbox disappears at once (deleted elsewhere). */
  public void vanish(String id) {
    Sandbox s = sandboxes.remove(id);
    if (s != null) {
      s.kill();
    }
  }

  /** The Content-Length of every file upload so far (-1 when the request had none). */
  public List<Long> uploadLengths() {
    return List.copyOf(uploadLengths);
  }

  private final List<Long> uploadLengths = new CopyOnWriteArrayList<>();

  /**
   * Bytes written to log followers and file downloads so far, and how often either waited for the
   * connection to drain.
   */
  public long streamedBytes() {
    return streamed.get();
  }

  public long drainWaits() {
    return drainWaits.get();
  }

  private final AtomicLong streamed = new AtomicLong();
  private final AtomicLong drainWaits = new AtomicLong();

  @Override
  public void close() {
    vertx.cancelTimer(timer);
    telemetryIntervalMs(0);
    sandboxes.values().forEach(Sandbox::kill);
    sandboxes.clear();
    try {
      vertx.close().await(10, TimeUnit.SECONDS);
    } catch (java.util.concurrent.TimeoutException e) {
      throw new IllegalStateException("the Daytona simulator did not stop", e);
    } finally {
      deleteTree(root);
    }
  }

  // ------------------------------------------------------------------------------------------ front door

  private final java.util.concurrent.atomic.AtomicLong answering = new java.util.concurrent.atomic.AtomicLong();

  /**
   * Nanoseconds spent answering HTTP requests so far, each from its arrival to the end of its response
   * (WebSocket sessions not counted); a benchmark reads it around a call to see how long the simulator took.
   */
  public long answeringNanos() {
    return answering.get();
  }

  private void handle(HttpServerRequest req) {
    long t0 = System.nanoTime();
    if (!"websocket".equalsIgnoreCase(req.getHeader("Upgrade"))) {
      req.response().endHandler(v -> answering.addAndGet(System.nanoTime() - t0));
    }
    req.pause();
    String path = req.path();
    boolean upgrade = "websocket".equalsIgnoreCase(req.getHeader("Upgrade"));
    Matcher tb = TOOLBOX_PATH.matcher(path);
    String sandboxId = tb.matches() ? tb.group(1) : null;
    String rest = tb.matches() ? Objects.requireNonNullElse(tb.group(2), "/") : null;
    SpecValidator spec = sandboxId != null ? toolbox : path.startsWith(API + "/") ? control : null;
    if (spec == null) {
      violations.add(req.method() + " " + path + " is outside the simulated APIs");
      req.response().setStatusCode(404).end();
      return;
    }
    String specPath = sandboxId != null ? TOOLBOX + "/sandbox" + rest : path;
    if (upgrade) {
      upgrade(req, spec, specPath, sandboxId, rest);
      return;
    }
    Future<Buffer> body = req.method() == HttpMethod.GET ? Future.succeededFuture(null) : req.body();
    req.resume();
    body.compose(b -> spec.validate(req, specPath, b).map(v -> new Object[] {v, b})).onComplete(ar -> {
      if (ar.failed()) {
        violations.add(ar.cause().getMessage());
        req.response().setStatusCode(400).putHeader("Content-Type", "application/json")
            .end(new JsonObject().put("statusCode", 400).put("message", "request does not conform").encode());
        return;
      }
      String auth = req.getHeader("Authorization");
      if (!("Bearer " + apiKey).equals(auth)) {
        send(req, Answer.error(401, "Unauthorized"));
        return;
      }
      requests.add(req.method() + " " + path);
      Fault fault = takeFault(req.method(), path);
      if (fault != null && fault.dropped()) {
        req.connection().close();
        return;
      }
      if (fault != null && fault.status() > 0) {
        Answer a = Answer.error(fault.status(), "injected");
        if (fault.retryAfterSecs() != null) {
          a = new Answer(a.status(), a.contentType(), a.body(), Map.of("Retry-After", fault.retryAfterSecs().toString()));
        }
        send(req, a);
        return;
      }
      ValidatedRequest valid = (ValidatedRequest) ar.result()[0];
      Buffer raw = (Buffer) ar.result()[1];
      Runnable work = () -> {
        Future<Answer> answer;
        try {
          answer = sandboxId != null ? toolboxCall(req, sandboxId, rest, valid, raw) : controlCall(req, path, valid);
        } catch (RuntimeException e) {
          answer = Future.succeededFuture(Answer.error(500, "simulator error: " + e));
        }
        answer.onComplete(a -> {
          if (fault != null && fault.lose()) {
            req.connection().close();
          } else if (a.succeeded()) {
            send(req, a.result());
          } else {
            send(req, Answer.error(500, "simulator error"));
          }
        });
      };
      if (fault != null && fault.delayMs() > 0) {
        vertx.setTimer(fault.delayMs(), t -> work.run());
      } else {
        work.run();
      }
    });
  }

  /**
   * Sends a file as the daemon does (its length declared, then its bytes), a chunk at a time: the next chunk
   * is read only once the connection took the previous one, and every wait for room is counted.
   */
  private Future<Answer> streamFile(HttpServerRequest req, Path file) {
    return vertx.fileSystem().open(file.toString(), new io.vertx.core.file.OpenOptions().setRead(true).setWrite(false))
        .compose(f -> f.size().compose(size -> {
          var res = req.response().setStatusCode(200).putHeader("Content-Type", "application/octet-stream")
              .putHeader("Content-Length", String.valueOf(size)).setWriteQueueMaxSize(CHUNK);
          io.vertx.core.Promise<Answer> done = io.vertx.core.Promise.promise();
          java.util.concurrent.atomic.AtomicBoolean open = new java.util.concurrent.atomic.AtomicBoolean(true);
          Runnable closeFile = () -> {
            if (open.compareAndSet(true, false)) {
              f.close();
            }
          };
          res.closeHandler(v -> closeFile.run());
          new Object() {
            long pos;

            void next() {
              if (res.closed()) {
                closeFile.run();
                done.tryComplete(Answer.STREAMED);
                return;
              }
              if (pos >= size) {
                closeFile.run();
                res.end();
                done.tryComplete(Answer.STREAMED);
                return;
              }
              f.read(Buffer.buffer(CHUNK), 0, pos, (int) Math.min(CHUNK, size - pos)).onComplete(ar -> {
                if (ar.failed()) {
                  closeFile.run();
                  req.connection().close();
                  done.tryComplete(Answer.STREAMED);
                  return;
                }
                pos += ar.result().length();
                streamed.addAndGet(ar.result().length());
                res.write(ar.result());
                if (res.writeQueueFull()) {
                  drainWaits.incrementAndGet();
                  res.drainHandler(v -> next());
                } else {
                  next();
                }
              });
            }
          }.next();
          return done.future();
        }).onFailure(t -> f.close()));
  }

  private Fault takeFault(HttpMethod method, String path) {
    for (Injected i : faults) {
      if (i.method().equals(method) && i.path().matcher(path).matches() && faults.remove(i)) {
        return i.fault();
      }
    }
    return null;
  }

  private static void send(HttpServerRequest req, Answer a) {
    if (a == Answer.STREAMED) {
      return;
    }
    var resp = req.response().setStatusCode(a.status());
    a.headers().forEach(resp::putHeader);
    if (a.contentType() != null) {
      resp.putHeader("Content-Type", a.contentType());
    }
    resp.end(a.body());
  }

  // ------------------------------------------------------------------------------------------- control

  private static final Pattern SANDBOX = Pattern.compile("^/api/sandbox/([^/]+)(/start)?$");
  private static final Pattern TELEMETRY = Pattern.compile("^/api/sandbox/([^/]+)/telemetry/metrics$");
  private static final Pattern INTERVAL = Pattern.compile("^/api/sandbox/([^/]+)/(autostop|autodelete)/([^/]+)$");

  private Future<Answer> controlCall(HttpServerRequest req, String path, ValidatedRequest valid) {
    if (path.equals(API + "/sandbox") && req.method() == HttpMethod.POST) {
      JsonObject body = valid.getBody().getJsonObject();
      return Future.succeededFuture(Answer.json(200, newSandbox(body).dto()));
    }
    if (path.equals(API + "/sandbox") && req.method() == HttpMethod.GET) {
      return Future.succeededFuture(list(req));
    }
    Matcher tm = TELEMETRY.matcher(path);
    if (tm.matches() && req.method() == HttpMethod.GET) {
      return Future.succeededFuture(telemetry(req, tm.group(1)));
    }
    Matcher iv = INTERVAL.matcher(path);
    if (iv.matches() && req.method() == HttpMethod.POST) {
      Sandbox s = sandboxes.get(iv.group(1));
      if (s == null) {
        return Future.succeededFuture(Answer.error(404, "Sandbox not found"));
      }
      double minutes;
      try {
        minutes = Double.parseDouble(iv.group(3));
      } catch (NumberFormatException e) {
        return Future.succeededFuture(Answer.error(400, "interval must be a number"));
      }
      if (minutes < (iv.group(2).equals("autodelete") ? -1 : 0) || minutes != Math.rint(minutes)) {
        return Future.succeededFuture(Answer.error(400, "invalid interval"));
      }
      if (iv.group(2).equals("autostop")) {
        s.autoStop = (int) minutes;
      } else {
        s.autoDelete = (int) minutes;
      }
      return Future.succeededFuture(Answer.json(200, s.dto()));
    }
    Matcher m = SANDBOX.matcher(path);
    if (m.matches()) {
      Sandbox s = sandboxes.get(m.group(1));
      if (s == null) {
        return Future.succeededFuture(Answer.error(404, "Sandbox not found"));
      }
      if (m.group(2) != null && req.method() == HttpMethod.POST) {
        if (s.state.equals("stopped")) {
          s.state = "starting";
          vertx.setTimer(startDelayMs, t -> {
            s.state = "started";
            s.lastActivity = System.nanoTime();
          });
        }
        return Future.succeededFuture(Answer.json(200, s.dto()));
      }
      if (req.method() == HttpMethod.GET) {
        return Future.succeededFuture(Answer.json(200, s.dto()));
      }
      if (req.method() == HttpMethod.DELETE) {
        sandboxes.remove(s.id);
        s.kill();
        s.state = "destroying";
        return Future.succeededFuture(Answer.json(200, s.dto()));
      }
    }
    violations.add(req.method() + " " + path + " is not simulated");
    return Future.succeededFuture(Answer.error(501, "not simulated"));
  }

  private Sandbox newSandbox(JsonObject body) {
    Sandbox s = new Sandbox(UUID.randomUUID().toString(), body);
    sandboxes.put(s.id, s);
    boolean fail = failNextBuild;
    failNextBuild = false;
    if (startDelayMs <= 0 && !fail && s.state.equals("creating")) {
      s.state = "started";
      return s;
    }
    vertx.setTimer(Math.max(1, startDelayMs), t -> {
      if (s.state.equals("creating") || s.state.equals("pending_build")) {
        s.state = fail ? "build_failed" : "started";
        s.lastActivity = System.nanoTime();
      }
    });
    return s;
  }

  private Answer list(HttpServerRequest req) {
    JsonObject labels = req.getParam("labels") == null ? new JsonObject() : new JsonObject(req.getParam("labels"));
    int limit = req.getParam("limit") == null ? 100 : (int) Double.parseDouble(req.getParam("limit"));
    int from = req.getParam("cursor") == null ? 0 : Integer.parseInt(req.getParam("cursor"));
    List<Sandbox> all = sandboxes.values().stream()
        .filter(s -> labels.fieldNames().stream().allMatch(k -> labels.getValue(k).equals(s.labels.getValue(k))))
        .sorted(Comparator.comparing((Sandbox s) -> s.createdAt).thenComparing(s -> s.id)).toList();
    JsonArray items = new JsonArray();
    all.stream().skip(from).limit(limit).forEach(s -> items.add(s.dto()));
    String next = from + limit < all.size() ? String.valueOf(from + limit) : null;
    return Answer.json(200, new JsonObject().put("items", items).put("nextCursor", next));
  }

  /** One recorded moment of a sandbox's telemetry: a value per metric name. */
  private record TelemetryPoint(Instant at, Map<String, Double> values) {}

  /** How many telemetry points a sandbox keeps. */
  private static final int KEPT_POINTS = 600;

  /**
   * {@code GET /sandbox/{id}/telemetry/metrics}: one series per metric (only those asked for in
   * {@code metricNames}, when given) with the points recorded between {@code from} and {@code to}; 403 when
   * the organization has no telemetry.
   */
  private Answer telemetry(HttpServerRequest req, String id) {
    if (!telemetryEnabled) {
      return Answer.error(403, "Forbidden resource");
    }
    Sandbox s = sandboxes.get(id);
    if (s == null) {
      return Answer.error(404, "Sandbox not found");
    }
    Instant from = java.time.OffsetDateTime.parse(req.getParam("from")).toInstant();
    Instant to = java.time.OffsetDateTime.parse(req.getParam("to")).toInstant();
    if (from.isAfter(to)) {
      return Answer.error(400, "from must not be after to");
    }
    List<String> names = req.params().getAll("metricNames");
    Map<String, JsonArray> series = new LinkedHashMap<>();
    for (TelemetryPoint p : s.telemetry) {
      if (p.at().isBefore(from) || p.at().isAfter(to)) {
        continue;
      }
      p.values().forEach((name, value) -> {
        if (names.isEmpty() || names.contains(name)) {
          series.computeIfAbsent(name, n -> new JsonArray()).add(new JsonObject()
              .put("timestamp", p.at().toString()).put("value", value));
        }
      });
    }
    JsonArray out = new JsonArray();
    series.forEach((name, points) -> out.add(new JsonObject().put("metricName", name).put("dataPoints", points)));
    return Answer.json(200, new JsonObject().put("series", out));
  }

  /**
   * Records a point for every started sandbox, as the OpenTelemetry collector in Daytona's sandboxes does:
   * CPU over the time since its previous point as a percentage of its CPU limit, memory as the resident size
   * of its running commands, the filesystem as the bytes of its files, and its limits.
   */
  private void collectTelemetry() {
    List<Sandbox> started = sandboxes.values().stream().filter(s -> s.state.equals("started")).toList();
    vertx.executeBlocking(() -> {
      for (Sandbox s : started) {
        List<Long> pids = s.sessions.values().stream().flatMap(x -> x.commands.values().stream())
            .filter(c -> c.exitCode == null && c.process != null).map(c -> c.process.pid()).toList();
        UsageSampler.Usage u = s.sampler.sample(pids, s.dir);
        double cores = s.body.getInteger("cpu", 1);
        double memory = (double) s.body.getInteger("memory", 1) * (1L << 30);
        double disk = (double) s.body.getInteger("disk", 3) * (1L << 30);
        Map<String, Double> v = new LinkedHashMap<>();
        v.put("daytona.sandbox.cpu.utilization", Math.min(100.0, Math.round(u.cpus() / cores * 10_000) / 100.0));
        v.put("daytona.sandbox.cpu.limit", cores);
        v.put("daytona.sandbox.memory.utilization", Math.round(u.memoryBytes() / memory * 10_000) / 100.0);
        v.put("daytona.sandbox.memory.usage", (double) u.memoryBytes());
        v.put("daytona.sandbox.memory.limit", memory);
        v.put("daytona.sandbox.memory.cache", 0.0);
        v.put("daytona.sandbox.filesystem.utilization", Math.round(u.diskBytes() / disk * 10_000) / 100.0);
        v.put("daytona.sandbox.filesystem.usage", (double) u.diskBytes());
        v.put("daytona.sandbox.filesystem.available", Math.max(0, disk - u.diskBytes()));
        v.put("daytona.sandbox.filesystem.total", disk);
        s.telemetry.addLast(new TelemetryPoint(Instant.now(), v));
        while (s.telemetry.size() > KEPT_POINTS) {
          s.telemetry.pollFirst();
        }
      }
      return null;
    }, false);
  }

  /** Idle sandboxes stop, and those with {@code autoDeleteInterval=0} then vanish. */
  private void tick() {
    long now = System.nanoTime();
    for (Sandbox s : sandboxes.values()) {
      int stopAfter = s.autoStop;
      if (s.state.equals("started") && stopAfter > 0 && s.idleCommands()
          && now - s.lastActivity > TimeUnit.MILLISECONDS.toNanos(stopAfter * minuteMs)) {
        s.state = "stopped";
        s.kill();
        if (s.autoDelete == 0) {
          sandboxes.remove(s.id);
        }
      }
    }
  }

  // ------------------------------------------------------------------------------------------- toolbox

  private static final Pattern SESSION = Pattern.compile("^/process/session/([^/]+)$");
  private static final Pattern SESSION_EXEC = Pattern.compile("^/process/session/([^/]+)/exec$");
  private static final Pattern COMMAND = Pattern.compile("^/process/session/([^/]+)/command/([^/]+)(/input|/logs)?$");

  private Future<Answer> toolboxCall(HttpServerRequest req, String sandboxId, String rest, ValidatedRequest valid,
      Buffer raw) {
    Sandbox s = sandboxes.get(sandboxId);
    if (s == null) {
      return Future.succeededFuture(Answer.error(404, "sandbox not found"));
    }
    if (!s.state.equals("started")) {
      return Future.succeededFuture(Answer.error(409, "sandbox is not started"));
    }
    s.lastActivity = System.nanoTime();
    HttpMethod method = req.method();
    if (rest.equals("/process/execute") && method == HttpMethod.POST) {
      JsonObject body = valid.getBody().getJsonObject();
      return vertx.executeBlocking(() -> s.execute(body), false);
    }
    if (rest.equals("/process/session") && method == HttpMethod.POST) {
      String id = valid.getBody().getJsonObject().getString("sessionId");
      if (s.sessions.putIfAbsent(id, new Session(id)) != null) {
        return Future.succeededFuture(Answer.error(409, "session already exists"));
      }
      return Future.succeededFuture(Answer.empty(201));
    }
    Matcher m = SESSION.matcher(rest);
    if (m.matches() && method == HttpMethod.DELETE) {
      Session session = s.sessions.remove(m.group(1));
      if (session == null) {
        return Future.succeededFuture(Answer.error(404, "session not found"));
      }
      session.kill();
      return Future.succeededFuture(Answer.empty(204));
    }
    m = SESSION_EXEC.matcher(rest);
    if (m.matches() && method == HttpMethod.POST) {
      Session session = s.sessions.get(m.group(1));
      if (session == null) {
        return Future.succeededFuture(Answer.error(404, "session not found"));
      }
      JsonObject body = valid.getBody().getJsonObject();
      boolean async = body.getBoolean("runAsync", false) || body.getBoolean("async", false);
      Command c = s.run(session, body.getString("command"), body.getBoolean("suppressInputEcho", false));
      if (async) {
        return Future.succeededFuture(Answer.json(202, new JsonObject().put("cmdId", c.id)));
      }
      return vertx.executeBlocking(() -> {
        c.awaitEnd();
        String out = new String(c.log.all(), StandardCharsets.UTF_8);
        return Answer.json(200, new JsonObject().put("cmdId", c.id).put("exitCode", c.exitCode).put("output", out));
      }, false);
    }
    m = COMMAND.matcher(rest);
    if (m.matches()) {
      Session session = s.sessions.get(m.group(1));
      Command c = session == null ? null : session.commands.get(m.group(2));
      if (c == null) {
        return Future.succeededFuture(Answer.error(404, "command not found"));
      }
      if (m.group(3) == null && method == HttpMethod.GET) {
        JsonObject j = new JsonObject().put("id", c.id).put("command", c.command);
        if (c.exitCode != null) {
          j.put("exitCode", c.exitCode);
        }
        return Future.succeededFuture(Answer.json(200, j));
      }
      if ("/input".equals(m.group(3)) && method == HttpMethod.POST) {
        String data = valid.getBody().getJsonObject().getString("data");
        return vertx.executeBlocking(() -> c.input(data), false);
      }
      if ("/logs".equals(m.group(3)) && method == HttpMethod.GET) {
        return Future.succeededFuture(new Answer(200, "text/plain", Buffer.buffer(c.log.all()), Map.of()));
      }
    }
    if (rest.equals("/files/upload") && method == HttpMethod.POST) {
      uploadLengths.add(req.getHeader("Content-Length") == null ? -1L : Long.parseLong(req.getHeader("Content-Length")));
      return vertx.executeBlocking(() -> s.upload(req.getParam("path"), req.getHeader("Content-Type"), raw), false);
    }
    if (rest.equals("/files/download") && method == HttpMethod.GET) {
      return vertx.executeBlocking(() -> s.downloadable(req.getParam("path")), false)
          .compose(a -> a.status() == 200 ? streamFile(req, s.resolve(req.getParam("path"))) : Future.succeededFuture(a));
    }
    if (rest.equals("/files") && method == HttpMethod.GET) {
      return vertx.executeBlocking(() -> s.listFiles(req.getParam("path")), false);
    }
    if (rest.equals("/files") && method == HttpMethod.DELETE) {
      return vertx.executeBlocking(() -> s.deleteFile(req.getParam("path"), "true".equals(req.getParam("recursive"))),
          false);
    }
    if (rest.equals("/files/info") && method == HttpMethod.GET) {
      return vertx.executeBlocking(() -> s.fileInfo(req.getParam("path")), false);
    }
    if (rest.equals("/files/permissions") && method == HttpMethod.POST) {
      return vertx.executeBlocking(() -> s.setMode(req.getParam("path"), req.getParam("mode")), false);
    }
    violations.add(method + " " + rest + " is not simulated");
    return Future.succeededFuture(Answer.error(501, "not simulated"));
  }

  /**
   * A WebSocket upgrade: {@code GET .../logs?follow=true}. The handshake must be answered before the request
   * ends, so authentication is checked first, the handshake and the spec validation run together, and a
   * request that turns out not to conform is recorded and its socket closed (1008).
   */
  private void upgrade(HttpServerRequest req, SpecValidator spec, String specPath, String sandboxId, String rest) {
    if (!("Bearer " + apiKey).equals(req.getHeader("Authorization"))) {
      send(req, Answer.error(401, "Unauthorized"));
      return;
    }
    Sandbox s = sandboxId == null ? null : sandboxes.get(sandboxId);
    Matcher m = COMMAND.matcher(rest == null ? "" : rest);
    Session session = s == null || !m.matches() ? null : s.sessions.get(m.group(1));
    Command c = session == null ? null : session.commands.get(m.group(2));
    if (c == null || !"/logs".equals(m.group(3))) {
      spec.validate(req, specPath, null).onFailure(t -> violations.add(t.getMessage()));
      send(req, Answer.error(404, "command not found"));
      return;
    }
    requests.add(req.method() + " " + req.path());
    Fault fault = takeFault(req.method(), req.path());
    boolean follow = "true".equals(req.getParam("follow"));
    HttpConnection conn = req.connection();
    Future<ValidatedRequest> valid = spec.validate(req, specPath, null);
    req.toWebSocket().onSuccess(ws -> valid.onComplete(ar -> {
      if (ar.failed()) {
        violations.add(ar.cause().getMessage());
        ws.close((short) 1008);
        return;
      }
      Follower f = new Follower(ws, conn, c, follow, fault == null ? -1 : fault.streamBytes());
      c.followers.add(f);
      ws.closeHandler(v -> {
        f.closed = true;
        c.followers.remove(f);
      });
      f.pump();
    })).onFailure(t -> violations.add("the log WebSocket could not be opened: " + t));
  }

  /** Sends a command's log to one WebSocket, never faster than the socket drains. */
  private final class Follower {
    final ServerWebSocket ws;
    final HttpConnection conn;
    final Command command;
    final boolean follow;
    final long cutAfter;
    final io.vertx.core.Context context = vertx.getOrCreateContext();
    long sent;
    boolean closed;

    Follower(ServerWebSocket ws, HttpConnection conn, Command command, boolean follow, long cutAfter) {
      this.ws = ws;
      this.conn = conn;
      this.command = command;
      this.follow = follow;
      this.cutAfter = cutAfter;
    }

    /** Runs on the server's event loop. */
    void pump() {
      while (!closed) {
        if (ws.writeQueueFull()) {
          drainWaits.incrementAndGet();
          ws.drainHandler(v -> pump());
          return;
        }
        byte[] chunk = command.log.read(sent, CHUNK);
        if (chunk.length == 0) {
          if (command.exitCode != null || !follow) {
            closed = true;
            ws.close((short) 1000);
          }
          return;
        }
        if (cutAfter >= 0 && sent + chunk.length > cutAfter) {
          chunk = Arrays.copyOf(chunk, (int) (cutAfter - sent));
          write(chunk);
          closed = true;
          // a dropped connection, not a closing handshake: closing through the pipeline would make Netty's
          // WebSocket handler send a close frame (1000), so the socket is closed beneath it
          var channel = ((io.vertx.core.net.impl.ConnectionBase) conn).channel();
          channel.eventLoop().execute(() -> channel.unsafe().close(channel.voidPromise()));
          return;
        }
        write(chunk);
      }
    }

    private void write(byte[] chunk) {
      sent += chunk.length;
      streamed.addAndGet(chunk.length);
      if (chunk.length == 0) {
        return;
      }
      String text = utf8(chunk);
      // gorilla sends text frames; bytes that are not UTF-8 can only travel as binary ones here
      if (text != null) {
        ws.writeTextMessage(text);
      } else {
        ws.writeBinaryMessage(Buffer.buffer(chunk));
      }
    }
  }

  private static String utf8(byte[] b) {
    try {
      return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
          .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(b)).toString();
    } catch (CharacterCodingException e) {
      return null;
    }
  }

  // --------------------------------------------------------------------------------------------- state

  private final class Sandbox {
    final String id;
    final JsonObject body;
    final JsonObject labels;
    final Instant createdAt = Instant.now();
    final Path dir;
    final Map<String, Session> sessions = new ConcurrentHashMap<>();
    final UsageSampler sampler = new UsageSampler();
    final java.util.Deque<TelemetryPoint> telemetry = new java.util.concurrent.ConcurrentLinkedDeque<>();
    volatile String state;
    volatile long lastActivity = System.nanoTime();
    /** Minutes idle before stopping (0: never), and after stopping before deletion (-1: never). */
    volatile int autoStop;
    volatile int autoDelete;

    Sandbox(String id, JsonObject body) {
      this.id = id;
      this.body = body;
      this.autoStop = body.getInteger("autoStopInterval", 15);
      this.autoDelete = body.getInteger("autoDeleteInterval", -1);
      this.labels = body.getJsonObject("labels", new JsonObject());
      this.state = body.containsKey("buildInfo") ? "pending_build" : "creating";
      try {
        this.dir = Files.createDirectories(root.resolve(id));
      } catch (IOException e) {
        throw new IllegalStateException(e);
      }
    }

    JsonObject dto() {
      JsonObject d = new JsonObject().put("id", id).put("organizationId", "org-simulated").put("name",
              body.getString("name", id)).put("user", "daytona")
          .put("env", body.getJsonObject("env", new JsonObject())).put("labels", labels).put("public", false)
          .put("networkBlockAll", body.getBoolean("networkBlockAll", false))
          .put("target", body.getString("target", "us")).put("cpu", body.getInteger("cpu", 1))
          .put("gpu", body.getInteger("gpu", 0)).put("memory", body.getInteger("memory", 1))
          .put("disk", body.getInteger("disk", 3)).put("state", state)
          .put("desiredState", state.startsWith("destroy") ? "destroyed" : "started")
          .put("autoStopInterval", autoStop)
          .put("autoDeleteInterval", autoDelete)
          .put("toolboxProxyUrl", "http://127.0.0.1:" + server.actualPort() + TOOLBOX)
          .put("createdAt", createdAt.toString()).put("updatedAt", Instant.now().toString());
      if (body.getString("snapshot") != null) {
        d.put("snapshot", body.getString("snapshot"));
      }
      if (state.equals("build_failed")) {
        d.put("errorReason", "build failed").put("recoverable", false);
      }
      return d;
    }

    Map<String, String> env() {
      Map<String, String> env = new LinkedHashMap<>();
      env.put("PATH", "/usr/local/bin:/usr/bin:/bin");
      env.put("HOME", dir.toString());
      env.put("TMPDIR", dir.toString());
      env.put("LANG", "C.UTF-8");
      body.getJsonObject("env", new JsonObject()).forEach(e -> env.put(e.getKey(), String.valueOf(e.getValue())));
      return env;
    }

    boolean idleCommands() {
      return sessions.values().stream().allMatch(Session::idle);
    }

    void kill() {
      sessions.values().forEach(Session::kill);
    }

    /** {@code process/execute}: the command split like the daemon's parseCommand, run without a shell. */
    Answer execute(JsonObject body) throws Exception {
      List<String> argv = parseCommand(body.getString("command"));
      if (argv.isEmpty()) {
        return Answer.error(400, "empty command");
      }
      ProcessBuilder pb = new ProcessBuilder(argv).directory(dir.toFile()).redirectErrorStream(true);
      pb.environment().clear();
      pb.environment().putAll(env());
      body.getJsonObject("envs", new JsonObject()).forEach(e -> pb.environment().put(e.getKey(),
          String.valueOf(e.getValue())));
      Process p;
      try {
        p = pb.start();
      } catch (IOException e) {
        return Answer.json(200, new JsonObject().put("exitCode", -1).put("result", ""));
      }
      p.getOutputStream().close();
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      Thread reader = Thread.ofPlatform().daemon().start(() -> {
        try (InputStream in = p.getInputStream()) {
          in.transferTo(out);
        } catch (IOException ignored) {
          // process gone
        }
      });
      int timeout = body.getInteger("timeout", 0) > 0 ? body.getInteger("timeout") : 360;
      if (!p.waitFor(timeout, TimeUnit.SECONDS)) {
        p.descendants().forEach(ProcessHandle::destroyForcibly);
        p.destroyForcibly();
        return Answer.error(408, "command execution timeout");
      }
      reader.join(1_000);
      return Answer.json(200, new JsonObject().put("exitCode", p.exitValue()).put("result",
          out.toString(StandardCharsets.UTF_8)));
    }

    Command run(Session session, String command, boolean suppressEcho) {
      ProcessBuilder pb = new ProcessBuilder("/bin/sh", "-c", command).directory(dir.toFile());
      pb.environment().clear();
      pb.environment().putAll(env());
      Command c = new Command(UUID.randomUUID().toString(), command, suppressEcho);
      session.commands.put(c.id, c);
      try {
        c.start(pb);
      } catch (IOException e) {
        c.log.append(ERR, ("sh: " + e.getMessage() + "\n").getBytes(StandardCharsets.UTF_8));
        c.end(127);
      }
      return c;
    }

    Path resolve(String path) {
      Path p = (path.startsWith("/") ? Path.of(path) : dir.resolve(path)).normalize();
      if (!p.startsWith(dir)) {
        throw new IllegalArgumentException("outside");
      }
      return p;
    }

    Answer upload(String path, String contentType, Buffer raw) throws IOException {
      Path target;
      try {
        target = resolve(path);
      } catch (IllegalArgumentException e) {
        return Answer.error(400, "path is outside the simulated sandbox");
      }
      byte[] file = multipartFile(contentType, raw.getBytes());
      if (file == null) {
        return Answer.error(400, "no file part");
      }
      if (Files.isDirectory(target)) {
        return Answer.error(400, "is a directory");
      }
      Files.createDirectories(target.getParent());
      Files.write(target, file);
      return Answer.json(200, new JsonObject().put("message", "File uploaded successfully"));
    }

    /** Whether the daemon would send the file: 200, 404 missing, 400 a directory or outside. */
    Answer downloadable(String path) {
      try {
        Path p = resolve(path);
        if (!Files.exists(p)) {
          return Answer.error(404, "file not found");
        }
        if (Files.isDirectory(p)) {
          return Answer.error(400, "path must be a file");
        }
        return Answer.empty(200);
      } catch (IllegalArgumentException e) {
        return Answer.error(400, "path is outside the simulated sandbox");
      }
    }

    Answer listFiles(String path) throws IOException {
      Path p;
      try {
        p = resolve(path == null ? "." : path);
      } catch (IllegalArgumentException e) {
        return Answer.error(400, "path is outside the simulated sandbox");
      }
      if (!Files.exists(p)) {
        return Answer.error(404, "directory not found");
      }
      if (!Files.isDirectory(p)) {
        return Answer.error(400, "not a directory");
      }
      JsonArray out = new JsonArray();
      try (var entries = Files.list(p)) {
        for (Path e : entries.sorted().toList()) {
          out.add(info(e));
        }
      }
      return Answer.json(200, out);
    }

    /** A {@code FileInfo} as the daemon builds it (permissions as four octal digits). */
    private JsonObject info(Path e) throws IOException {
      boolean isDir = Files.isDirectory(e);
      var perms = Files.getPosixFilePermissions(e);
      int bits = 0;
      for (var perm : perms) {
        bits |= 1 << (8 - perm.ordinal());
      }
      String modified = Files.getLastModifiedTime(e).toInstant().toString();
      return new JsonObject().put("name", e.getFileName().toString()).put("isDir", isDir)
          .put("size", isDir ? 4096 : Files.size(e))
          .put("mode", (isDir ? "d" : "-") + PosixFilePermissions.toString(perms))
          .put("permissions", String.format("%04o", bits)).put("owner", "1000").put("group", "1000")
          .put("modTime", modified).put("modifiedAt", modified);
    }

    Answer fileInfo(String path) throws IOException {
      try {
        Path p = resolve(path);
        return Files.exists(p) ? Answer.json(200, info(p)) : Answer.error(404, "file not found");
      } catch (IllegalArgumentException e) {
        return Answer.error(400, "path is outside the simulated sandbox");
      }
    }

    /** The daemon's delete: a directory needs {@code recursive}, even an empty one. */
    Answer deleteFile(String path, boolean recursive) throws IOException {
      Path p;
      try {
        p = resolve(path);
      } catch (IllegalArgumentException e) {
        return Answer.error(400, "path is outside the simulated sandbox");
      }
      if (!Files.exists(p, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
        return Answer.error(404, "file not found");
      }
      if (Files.isDirectory(p) && !recursive) {
        return Answer.error(400, "cannot delete directory without recursive flag");
      }
      if (recursive) {
        deleteTree(p);
      } else {
        Files.delete(p);
      }
      return Answer.empty(204);
    }

    Answer setMode(String path, String mode) throws IOException {
      Path p;
      try {
        p = resolve(path);
      } catch (IllegalArgumentException e) {
        return Answer.error(400, "path is outside the simulated sandbox");
      }
      if (!Files.exists(p)) {
        return Answer.error(404, "file not found");
      }
      if (mode != null && !mode.isEmpty()) {
        int bits;
        try {
          bits = Integer.parseInt(mode, 8);
        } catch (NumberFormatException e) {
          return Answer.error(400, "invalid mode format");
        }
        StringBuilder rwx = new StringBuilder();
        for (int i = 8; i >= 0; i--) {
          rwx.append((bits >> i & 1) == 0 ? '-' : "rwx".charAt((8 - i) % 3));
        }
        Files.setPosixFilePermissions(p, PosixFilePermissions.fromString(rwx.toString()));
      }
      return Answer.empty(200);
    }
  }

  private final class Session {
    final String id;
    final Map<String, Command> commands = new ConcurrentHashMap<>();

    Session(String id) {
      this.id = id;
    }

    boolean idle() {
      return commands.values().stream().allMatch(c -> c.exitCode != null);
    }

    void kill() {
      commands.values().forEach(Command::kill);
    }
  }

  /** One session command: a real process whose output is logged with Daytona's markers. */
  private final class Command {
    final String id;
    final String command;
    final boolean suppressEcho;
    final Log log = new Log();
    final List<Follower> followers = new CopyOnWriteArrayList<>();
    volatile Integer exitCode;
    volatile Process process;
    private OutputStream stdin;

    Command(String id, String command, boolean suppressEcho) {
      this.id = id;
      this.command = command;
      this.suppressEcho = suppressEcho;
    }

    void start(ProcessBuilder pb) throws IOException {
      Process p = pb.start();
      process = p;
      stdin = p.getOutputStream();
      Thread out = reader(p.getInputStream(), OUT);
      Thread err = reader(p.getErrorStream(), ERR);
      Thread.ofPlatform().daemon().start(() -> {
        try {
          int code = p.waitFor();
          // background children may hold the pipes: stop waiting for them after a moment, like the daemon
          out.join(200);
          err.join(200);
          end(code);
        } catch (InterruptedException e) {
          end(-1);
        }
      });
    }

    private Thread reader(InputStream in, byte[] marker) {
      return Thread.ofPlatform().daemon().start(() -> {
        byte[] buf = new byte[CHUNK];
        try (in) {
          int n;
          while ((n = in.read(buf)) > 0) {
            log.append(marker, Arrays.copyOf(buf, n));
            notifyFollowers();
          }
        } catch (IOException ignored) {
          // the process was killed
        }
      });
    }

    void end(int code) {
      exitCode = code;
      notifyFollowers();
      synchronized (this) {
        notifyAll();
      }
    }

    synchronized void awaitEnd() throws InterruptedException {
      while (exitCode == null) {
        wait();
      }
    }

    private void notifyFollowers() {
      for (Follower f : followers) {
        f.context.runOnContext(v -> f.pump());
      }
    }

    Answer input(String data) {
      if (exitCode != null || stdin == null) {
        return Answer.error(410, "command has finished");
      }
      byte[] bytes = data.getBytes(StandardCharsets.UTF_8);
      try {
        stdin.write(bytes);
        stdin.flush();
      } catch (IOException e) {
        return Answer.error(410, "command has finished");
      }
      if (!suppressEcho) {
        log.append(OUT, bytes);
        notifyFollowers();
      }
      return Answer.empty(204);
    }

    void kill() {
      Process p = process;
      if (p != null) {
        p.descendants().forEach(ProcessHandle::destroyForcibly);
        p.destroyForcibly();
      }
    }
  }

  /** An append-only, in-memory log file. */
  private static final class Log {
    private byte[] data = new byte[1024];
    private int size;

    synchronized void append(byte[] marker, byte[] chunk) {
      ensure(size + marker.length + chunk.length);
      System.arraycopy(marker, 0, data, size, marker.length);
      System.arraycopy(chunk, 0, data, size + marker.length, chunk.length);
      size += marker.length + chunk.length;
    }

    synchronized byte[] read(long from, int max) {
      int n = (int) Math.max(0, Math.min(max, size - from));
      return Arrays.copyOfRange(data, (int) from, (int) from + n);
    }

    synchronized byte[] all() {
      return Arrays.copyOf(data, size);
    }

    private void ensure(int n) {
      if (n > data.length) {
        data = Arrays.copyOf(data, Math.max(n, data.length * 2));
      }
    }
  }

  // ------------------------------------------------------------------------------------------- helpers

  /** The daemon's {@code parseCommand}: split on spaces outside single or double quotes; no escapes. */
  static List<String> parseCommand(String command) {
    List<String> args = new ArrayList<>();
    StringBuilder current = new StringBuilder();
    char quote = 0;
    for (char c : command.toCharArray()) {
      if ((c == '"' || c == '\'') && (quote == 0 || quote == c)) {
        quote = quote == 0 ? c : 0;
      } else if (c == ' ' && quote == 0) {
        if (!current.isEmpty()) {
          args.add(current.toString());
          current.setLength(0);
        }
      } else {
        current.append(c);
      }
    }
    if (!current.isEmpty()) {
      args.add(current.toString());
    }
    return args;
  }

  /** The content of the multipart part named {@code file}, or null. */
  private static byte[] multipartFile(String contentType, byte[] body) {
    if (contentType == null || !contentType.startsWith("multipart/form-data")) {
      return null;
    }
    Matcher m = Pattern.compile("boundary=\"?([^\";]+)\"?").matcher(contentType);
    if (!m.find()) {
      return null;
    }
    byte[] delimiter = ("--" + m.group(1)).getBytes(StandardCharsets.ISO_8859_1);
    int at = indexOf(body, delimiter, 0);
    while (at >= 0) {
      int headersStart = at + delimiter.length + 2;
      int headersEnd = indexOf(body, "\r\n\r\n".getBytes(StandardCharsets.ISO_8859_1), headersStart);
      if (headersEnd < 0) {
        return null;
      }
      String headers = new String(body, headersStart, headersEnd - headersStart, StandardCharsets.ISO_8859_1);
      int next = indexOf(body, ("\r\n--" + m.group(1)).getBytes(StandardCharsets.ISO_8859_1), headersEnd + 4);
      if (next < 0) {
        return null;
      }
      if (headers.contains("name=\"file\"")) {
        return Arrays.copyOfRange(body, headersEnd + 4, next);
      }
      at = next + 2;
    }
    return null;
  }

  private static int indexOf(byte[] hay, byte[] needle, int from) {
    outer:
    for (int i = Math.max(0, from); i <= hay.length - needle.length; i++) {
      for (int j = 0; j < needle.length; j++) {
        if (hay[i + j] != needle[j]) {
          continue outer;
        }
      }
      return i;
    }
    return -1;
  }

  private static void deleteTree(Path dir) {
    try (var walk = Files.walk(dir)) {
      walk.sorted(Collections.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException ignored) {
      // best effort
    }
  }
}
