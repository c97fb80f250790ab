package ai.bespokelabs.sandbox.adapters.tensorlake;

import ai.bespokelabs.sandbox.adapters.sim.Faults;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * A local stand-in for Tensorlake, built from the provider description (the SDK's wire format, section 4 of
 * provider-specs/README.md): the control plane at {@link #url()} ({@code /sandboxes}, {@code /snapshots}) and
 * the in-sandbox daemon at {@link #daemonUrl()} (each sandbox's {@code sandbox_url}; requests name their
 * sandbox in {@code X-Tensorlake-Sandbox-Id}).
 *
 * <p>Strict: every request needs {@code Authorization: Bearer <key>} (else 401); a body with an unknown field
 * or a wrong type, an unknown route, or a daemon request without its sandbox header is refused with 400 and
 * recorded in {@link #violations()}. Sandboxes go {@code pending} to {@code running} after
 * {@link #startDelayMs} (and again after {@code POST .../resume} of a suspended one); processes are real local
 * processes in the sandbox's directory (absolute sandbox paths are resolved under it), their output kept in
 * lines (text: what is not UTF-8 becomes U+FFFD) and followed over SSE; the daemon's {@code GET /api/v1/info}
 * counts them; snapshots copy the directory and turn {@code completed} after a delay.
 *
 * <p>Faults ({@link #faults()}): any status with headers (429 with {@code Retry-After}), dropped connections,
 * lost answers, SSE streams cut after some events; and {@link #failNextCreateAfterAllocating}: the create
 * happens but is answered with an error (504 from {@link #timeoutNextCreate()}).
 */
public final class TensorlakeSimulator implements AutoCloseable {
  private static final String DAEMON = "/daemon";
  private static final Pattern SANDBOX = Pattern.compile("^/sandboxes/([^/]+)(/snapshot|/suspend|/resume)?$");
  private static final Pattern SNAPSHOT = Pattern.compile("^/snapshots/([^/]+)$");
  private static final Pattern PROCESS = Pattern.compile(
      "^/api/v1/processes/([0-9]+)(/signal|/stdin|/stdin/close|/stdout|/stderr|/output|/output/follow)?$");
  private static final Set<String> CREATE_FIELDS = Set.of("image", "resources", "timeout_secs", "entrypoint", "network",
      "snapshot_id", "name", "file_systems", "cloud_init_base64");
  private static final Set<String> PROCESS_FIELDS = Set.of("command", "args", "env", "working_dir", "timeout", "user",
      "stdin_mode", "stdout_mode", "stderr_mode");

  /** One sandbox. */
  final class Sandbox {
    final String id = "tl-" + UUID.randomUUID().toString().replace("-", "").substring(0, 20);
    final JsonObject body;
    final Path dir;
    final Instant created = Instant.now();
    volatile String status = "pending";
    final Map<Long, Proc> procs = new ConcurrentHashMap<>();

    Sandbox(JsonObject body, Path dir) {
      this.body = body;
      this.dir = dir;
    }

    JsonObject dto() {
      JsonObject res = body.getJsonObject("resources", new JsonObject());
      JsonObject d = new JsonObject().put("sandbox_id", id).put("namespace", "default").put("status", status)
          .put("resources", new JsonObject().put("cpus", res.getValue("cpus", 1.0))
              .put("memory_mb", res.getValue("memory_mb", 1024))
              .put("ephemeral_disk_mb", res.getValue("disk_mb", 0)))
          .put("created_at", created.toString()).put("allow_unauthenticated_access", false);
      if (body.getString("name") != null) {
        d.put("name", body.getString("name"));
      }
      if (body.getValue("timeout_secs") != null) {
        d.put("timeout_secs", body.getValue("timeout_secs"));
      }
      if (sandboxUrls) {
        d.put("sandbox_url", daemonUrl());
      }
      return d;
    }

    void kill() {
      procs.values().forEach(p -> p.signal(9));
    }
  }

  /** One daemon process: its output kept as lines in arrival order. */
  final class Proc {
    final long pid;
    final Process process;
    final List<String[]> lines = new CopyOnWriteArrayList<>();
    final Instant started = Instant.now();
    final AtomicInteger readersLeft = new AtomicInteger(2);
    final String command;
    final JsonArray args;
    volatile Integer signalled;
    volatile boolean stdinOpen;

    Proc(Process process, String command, JsonArray args, boolean stdin) {
      this.pid = process.pid();
      this.process = process;
      this.command = command;
      this.args = args;
      this.stdinOpen = stdin;
      Thread.ofVirtual().start(() -> pump(process.getInputStream(), "stdout"));
      Thread.ofVirtual().start(() -> pump(process.getErrorStream(), "stderr"));
    }

    /**
     * The daemon's lines: split at {@code \n}, a {@code \r} before it dropped, a last line without one kept,
     * each decoded as UTF-8 with what is not UTF-8 replaced by U+FFFD (a line travels as a JSON string).
     */
    private void pump(InputStream in, String stream) {
      try (in) {
        ByteArrayOutputStream line = new ByteArrayOutputStream();
        byte[] buf = new byte[8192];
        int n;
        while ((n = in.read(buf)) >= 0) {
          for (int i = 0; i < n; i++) {
            if (buf[i] == '\n') {
              keep(stream, line);
            } else {
              line.write(buf[i]);
            }
          }
        }
        if (line.size() > 0) {
          keep(stream, line);
        }
      } catch (IOException ignored) {
        // the process is gone
      } finally {
        readersLeft.decrementAndGet();
      }
    }

    private void keep(String stream, ByteArrayOutputStream line) {
      byte[] b = line.toByteArray();
      int len = b.length > 0 && b[b.length - 1] == '\r' ? b.length - 1 : b.length;
      lines.add(new String[] {stream, new String(b, 0, len, StandardCharsets.UTF_8), Instant.now().toString()});
      line.reset();
    }

    boolean done() {
      return !process.isAlive() && readersLeft.get() == 0;
    }

    JsonObject info() {
      JsonObject i = new JsonObject().put("pid", pid).put("command", command).put("args", args)
          .put("started_at", started.toString()).put("stdin_writable", stdinOpen && process.isAlive())
          .put("oom_killed", false);
      if (!done()) {
        return i.put("status", "running");
      }
      int code = process.exitValue();
      if (signalled != null && code == 128 + signalled || code > 128 && signalled != null) {
        return i.put("status", "signaled").put("signal", code - 128);
      }
      return i.put("status", "exited").put("exit_code", code);
    }

    JsonObject output(String stream) {
      JsonArray out = new JsonArray();
      for (String[] l : lines) {
        if (stream == null || stream.equals(l[0])) {
          out.add(l[1]);
        }
      }
      return new JsonObject().put("pid", pid).put("lines", out).put("line_count", out.size());
    }

    void signal(int n) {
      signalled = n;
      // the process first, so a shell does not report its children's end
      List<Long> pids = new ArrayList<>();
      pids.add(pid);
      process.toHandle().descendants().forEach(h -> pids.add(h.pid()));
      for (long p : pids) {
        try {
          new ProcessBuilder("kill", "-" + n, String.valueOf(p)).start().waitFor(5, TimeUnit.SECONDS);
        } catch (IOException | InterruptedException ignored) {
          // gone already
        }
      }
    }
  }

  /** A snapshot. */
  record Snap(String id, String sandboxId, Path dir, AtomicLong readyAt) {
    JsonObject dto() {
      return new JsonObject().put("snapshot_id", id).put("namespace", "default").put("sandbox_id", sandboxId)
          .put("status", System.currentTimeMillis() >= readyAt.get() ? "completed" : "in_progress")
          .put("snapshot_type", "filesystem");
    }
  }

  private final Vertx vertx;
  private final String apiKey;
  private final Path root;
  private final HttpServer server;
  private final Faults faults = new Faults();
  private final Map<String, Sandbox> sandboxes = new ConcurrentHashMap<>();
  private final Map<String, Snap> snapshots = new ConcurrentHashMap<>();
  private final List<String> violations = new CopyOnWriteArrayList<>();
  private final List<String> requests = new CopyOnWriteArrayList<>();
  private volatile int createFailure;
  private volatile long startDelayMs = 100;
  private volatile long snapshotDelayMs = 200;
  private volatile boolean sandboxUrls = true;

  private TensorlakeSimulator(Vertx vertx, String apiKey, Path root, HttpServer server) {
    this.vertx = vertx;
    this.apiKey = apiKey;
    this.root = root;
    this.server = server;
  }

  /** Starts a simulator on a free port of 127.0.0.1 accepting {@code apiKey}. */
  public static TensorlakeSimulator start(String apiKey) {
    Vertx vertx = Vertx.vertx();
    try {
      Path root = Files.createTempDirectory("tensorlake-sim-");
      TensorlakeSimulator[] self = new TensorlakeSimulator[1];
      HttpServer server = vertx.createHttpServer(new HttpServerOptions().setHost("127.0.0.1").setPort(0))
          .requestHandler(req -> self[0].handle(req));
      server.listen().await(10, TimeUnit.SECONDS);
      self[0] = new TensorlakeSimulator(vertx, apiKey, root, server);
      return self[0];
    } catch (Exception e) {
      vertx.close();
      throw new IllegalStateException("the Tensorlake simulator did not start", e);
    }
  }

  // -------------------------------------------------------------------------------------------- test API

  /** The control plane, as {@code TENSORLAKE_API_URL}. */
  public String url() {
    return "http://127.0.0.1:" + server.actualPort();
  }

  /** The daemon proxy, as each sandbox's {@code sandbox_url} and {@code TENSORLAKE_SANDBOX_URL}. */
  public String daemonUrl() {
    return url() + DAEMON;
  }

  public Faults faults() {
    return faults;
  }

  public List<String> violations() {
    return List.copyOf(violations);
  }

  public void clearViolations() {
    violations.clear();
  }

  /** How many requests so far matched {@code method} and the regular expression {@code path}. */
  public long count(HttpMethod method, String path) {
    Pattern p = Pattern.compile(path);
    return requests.stream().filter(r -> r.startsWith(method.name() + " ")
        && p.matcher(r.substring(method.name().length() + 1)).matches()).count();
  }

  public TensorlakeSimulator startDelayMs(long ms) {
    this.startDelayMs = ms;
    return this;
  }

  /** Whether sandbox answers carry {@code sandbox_url} (else the client uses its configured proxy). */
  public TensorlakeSimulator sandboxUrls(boolean on) {
    this.sandboxUrls = on;
    return this;
  }

  /** The next create creates the sandbox but is answered 504 (a gateway timeout in front of the provider). */
  public TensorlakeSimulator timeoutNextCreate() {
    return failNextCreateAfterAllocating(504);
  }

  /** The next create creates the sandbox but is answered {@code status}: it failed after allocating. */
  public TensorlakeSimulator failNextCreateAfterAllocating(int status) {
    createFailure = status;
    return this;
  }

  public JsonObject sandbox(String id) {
    Sandbox s = sandboxes.get(id);
    return s == null ? null : s.dto();
  }

  public List<JsonObject> sandboxes() {
    return sandboxes.values().stream().map(Sandbox::dto).toList();
  }

  public JsonObject snapshot(String id) {
    Snap s = snapshots.get(id);
    return s == null ? null : s.dto();
  }

  public Path dir(String id) {
    return sandboxes.get(id).dir;
  }

  /** Creates a running sandbox directly, as someone using Tensorlake behind the gateway's back would. */
  public String createDirectly(String name) {
    JsonObject body = new JsonObject().put("resources", new JsonObject().put("cpus", 1.0).put("memory_mb", 512));
    if (name != null) {
      body.put("name", name);
    }
    Sandbox s = newSandbox(body);
    s.status = "running";
    return s.id;
  }

  /** The sandbox is suspended, as its owner's {@code POST /sandboxes/{id}/suspend} would. */
  public void suspendDirectly(String id) {
    sandboxes.get(id).status = "suspended";
  }

  /** The sandbox is terminated but still listed, as Tensorlake ending it at its {@code timeout_secs} would. */
  public void terminateDirectly(String id) {
    Sandbox s = sandboxes.get(id);
    s.status = "terminated";
    s.kill();
  }

  /** The sandbox disappears at once. */
  public void vanish(String id) {
    Sandbox s = sandboxes.remove(id);
    if (s != null) {
      s.kill();
    }
  }

  @Override
  public void close() {
    sandboxes.values().forEach(Sandbox::kill);
    try {
      vertx.close().await(10, TimeUnit.SECONDS);
    } catch (java.util.concurrent.TimeoutException e) {
      // closed in the background
    }
    try (Stream<Path> walk = Files.walk(root)) {
      walk.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException ignored) {
      // best effort
    }
  }

  // ---------------------------------------------------------------------------------------------- front

  private void violation(HttpServerRequest req, String why) {
    violations.add(req.method() + " " + req.path() + ": " + why);
    json(req.response(), 400, new JsonObject().put("message", "bad request"));
  }

  private static void json(HttpServerResponse resp, int status, JsonObject body) {
    resp.setStatusCode(status).putHeader("Content-Type", "application/json").end(body.toBuffer());
  }

  /** Nanoseconds spent answering requests so far, each from its arrival to the end of its response. */
  public long answeringNanos() {
    return answering.get();
  }

  private final AtomicLong answering = new AtomicLong();

  private void handle(HttpServerRequest req) {
    long t0 = System.nanoTime();
    req.response().endHandler(v -> answering.addAndGet(System.nanoTime() - t0));
    req.pause();
    if (!("Bearer " + apiKey).equals(req.getHeader("Authorization"))) {
      req.resume();
      json(req.response(), 401, new JsonObject().put("message", "unauthorized"));
      return;
    }
    Faults.Fault f = faults.take(req);
    if (f != null && f.kind() == Faults.Kind.STATUS) {
      req.resume();
      HttpServerResponse resp = req.response();
      f.headers().forEach(resp::putHeader);
      json(resp, f.status(), f.body() == null ? new JsonObject().put("message", "injected") : f.body());
      return;
    }
    if (f != null && f.kind() == Faults.Kind.DROP) {
      req.connection().close();
      return;
    }
    if (f != null && f.kind() == Faults.Kind.DELAY) {
      vertx.setTimer(f.delayMs(), t -> route(req, f));
      return;
    }
    route(req, f);
  }

  private void route(HttpServerRequest req, Faults.Fault f) {
    boolean lose = f != null && f.kind() == Faults.Kind.LOSE_RESPONSE;
    int dropAfter = f != null && f.kind() == Faults.Kind.DROP_STREAM ? f.frames() : -1;
    String path = req.path();
    HttpServerResponse resp = req.response();
    if (lose) {
      resp.setWriteQueueMaxSize(Integer.MAX_VALUE);
      resp.headersEndHandler(v -> req.connection().close());
    }
    req.body().onSuccess(body -> {
      try {
        requests.add(req.method() + " " + path);
        if (path.startsWith(DAEMON + "/")) {
          daemon(req, path.substring(DAEMON.length()), body, dropAfter);
        } else {
          control(req, path, body);
        }
      } catch (RuntimeException e) {
        violation(req, "unhandled: " + e);
      }
    });
    req.resume();
  }

  private JsonObject jsonBody(HttpServerRequest req, Buffer body) {
    if (!String.valueOf(req.getHeader("Content-Type")).startsWith("application/json")) {
      return null;
    }
    try {
      return new JsonObject(body);
    } catch (RuntimeException e) {
      return null;
    }
  }

  // --------------------------------------------------------------------------------------- control plane

  private Sandbox newSandbox(JsonObject body) {
    try {
      Path dir = Files.createDirectories(root.resolve("sandboxes").resolve(UUID.randomUUID().toString()));
      Sandbox s = new Sandbox(body, dir);
      sandboxes.put(s.id, s);
      return s;
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  private void control(HttpServerRequest req, String path, Buffer body) {
    HttpServerResponse resp = req.response();
    HttpMethod m = req.method();
    if (path.equals("/sandboxes") && m == HttpMethod.POST) {
      create(req, body);
      return;
    }
    if (path.equals("/sandboxes") && m == HttpMethod.GET) {
      JsonArray all = new JsonArray();
      sandboxes.values().forEach(s -> all.add(s.dto()));
      json(resp, 200, new JsonObject().put("sandboxes", all));
      return;
    }
    if (path.equals("/snapshots") && m == HttpMethod.GET) {
      JsonArray all = new JsonArray();
      snapshots.values().forEach(s -> all.add(s.dto()));
      json(resp, 200, new JsonObject().put("snapshots", all));
      return;
    }
    Matcher sm = SNAPSHOT.matcher(path);
    if (sm.matches() && (m == HttpMethod.GET || m == HttpMethod.DELETE)) {
      Snap s = m == HttpMethod.GET ? snapshots.get(sm.group(1)) : snapshots.remove(sm.group(1));
      if (s == null) {
        json(resp, 404, new JsonObject().put("message", "not found"));
      } else if (m == HttpMethod.GET) {
        json(resp, 200, s.dto());
      } else {
        resp.setStatusCode(200).end();
      }
      return;
    }
    Matcher x = SANDBOX.matcher(path);
    if (!x.matches()) {
      violation(req, "no such route");
      return;
    }
    Sandbox s = sandboxes.get(x.group(1));
    if ("/suspend".equals(x.group(2)) || "/resume".equals(x.group(2))) {
      suspendOrResume(req, s, x.group(2).equals("/resume"), body);
      return;
    }
    if (x.group(2) != null) {
      if (m != HttpMethod.POST) {
        violation(req, "no such route");
        return;
      }
      JsonObject b = body.length() == 0 ? new JsonObject() : jsonBody(req, body);
      if (b == null || !Set.of("snapshot_type").containsAll(b.fieldNames())
          || b.getValue("snapshot_type") != null && !Set.of("memory", "filesystem").contains(b.getValue("snapshot_type"))) {
        violation(req, "snapshot body does not conform");
        return;
      }
      if (s == null || !"running".equals(s.status)) {
        json(resp, 404, new JsonObject().put("message", "not found"));
        return;
      }
      String id = "snap-" + UUID.randomUUID().toString().replace("-", "").substring(0, 16);
      Path dir = root.resolve("snapshots").resolve(id);
      copyTree(s.dir, dir);
      snapshots.put(id, new Snap(id, s.id, dir, new AtomicLong(System.currentTimeMillis() + snapshotDelayMs)));
      json(resp, 200, new JsonObject().put("snapshot_id", id).put("status", "in_progress"));
      return;
    }
    if (s == null) {
      json(resp, 404, new JsonObject().put("message", "not found"));
      return;
    }
    if (m == HttpMethod.GET) {
      json(resp, 200, s.dto());
    } else if (m == HttpMethod.DELETE) {
      sandboxes.remove(s.id);
      s.status = "terminated";
      s.kill();
      resp.setStatusCode(200).end();
    } else {
      violation(req, "no such route");
    }
  }

  /** The SDK sends both with no body; resume takes a suspended sandbox, suspend a running one (else 409). */
  private void suspendOrResume(HttpServerRequest req, Sandbox s, boolean resume, Buffer body) {
    if (req.method() != HttpMethod.POST || body.length() != 0) {
      violation(req, "suspend and resume are a POST without a body");
      return;
    }
    if (s == null) {
      json(req.response(), 404, new JsonObject().put("message", "not found"));
      return;
    }
    if (!(resume ? "suspended" : "running").equals(s.status)) {
      json(req.response(), 409, new JsonObject().put("message", "sandbox is " + s.status));
      return;
    }
    if (resume) {
      s.status = "pending";
      vertx.setTimer(Math.max(1, startDelayMs), t -> {
        if ("pending".equals(s.status)) {
          s.status = "running";
        }
      });
    } else {
      s.status = "suspended";
    }
    req.response().setStatusCode(200).end();
  }

  private void create(HttpServerRequest req, Buffer raw) {
    JsonObject body = jsonBody(req, raw);
    String why = body == null ? "not JSON" : checkCreate(body);
    if (why != null) {
      violation(req, why);
      return;
    }
    String snapshotId = body.getString("snapshot_id");
    if (snapshotId != null && !snapshots.containsKey(snapshotId)) {
      json(req.response(), 404, new JsonObject().put("message", "snapshot not found"));
      return;
    }
    Sandbox s = newSandbox(body);
    if (snapshotId != null) {
      copyTree(snapshots.get(snapshotId).dir(), s.dir);
    }
    vertx.setTimer(Math.max(1, startDelayMs), t -> {
      if ("pending".equals(s.status)) {
        s.status = "running";
      }
    });
    int failure = createFailure;
    if (failure != 0) {
      createFailure = 0;
      json(req.response(), failure, new JsonObject().put("message", "failed after allocating"));
      return;
    }
    json(req.response(), 200, new JsonObject().put("sandbox_id", s.id).put("status", s.status));
  }

  static String checkCreate(JsonObject b) {
    if (!CREATE_FIELDS.containsAll(b.fieldNames())) {
      return "unknown field";
    }
    if (!(b.getValue("resources") instanceof JsonObject r)) {
      return "resources is required";
    }
    if (!Set.of("cpus", "memory_mb", "disk_mb", "gpus").containsAll(r.fieldNames())
        || !(r.getValue("cpus") instanceof Number) || !(r.getValue("memory_mb") instanceof Integer
            || r.getValue("memory_mb") instanceof Long)
        || r.getValue("disk_mb") != null && !(r.getValue("disk_mb") instanceof Integer)) {
      return "resources do not conform";
    }
    for (String k : List.of("image", "snapshot_id", "name")) {
      if (b.getValue(k) != null && !(b.getValue(k) instanceof String)) {
        return k + " must be a string";
      }
    }
    if (b.getValue("timeout_secs") != null && !(b.getValue("timeout_secs") instanceof Integer)) {
      return "timeout_secs must be an integer";
    }
    if (b.getValue("network") != null) {
      if (!(b.getValue("network") instanceof JsonObject n)
          || !Set.of("allow_internet_access", "allow_out", "deny_out").containsAll(n.fieldNames())
          || n.getValue("allow_internet_access") != null && !(n.getValue("allow_internet_access") instanceof Boolean)) {
        return "network does not conform";
      }
    }
    return null;
  }

  private static void copyTree(Path from, Path to) {
    try (Stream<Path> walk = Files.walk(from)) {
      for (Path p : (Iterable<Path>) walk::iterator) {
        Path target = to.resolve(from.relativize(p).toString());
        if (Files.isDirectory(p)) {
          Files.createDirectories(target);
        } else {
          Files.createDirectories(target.getParent());
          Files.copy(p, target, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
          target.toFile().setExecutable(p.toFile().canExecute());
        }
      }
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  // ---------------------------------------------------------------------------------------------- daemon

  private void daemon(HttpServerRequest req, String path, Buffer body, int dropAfter) {
    String id = req.getHeader(TensorlakeClient.SANDBOX_HEADER);
    if (id == null) {
      violation(req, "no sandbox header");
      return;
    }
    Sandbox s = sandboxes.get(id);
    HttpServerResponse resp = req.response();
    if (s == null || !"running".equals(s.status)) {
      json(resp, 404, new JsonObject().put("message", "sandbox not found"));
      return;
    }
    HttpMethod m = req.method();
    if (path.equals("/api/v1/health") && m == HttpMethod.GET) {
      json(resp, 200, new JsonObject().put("healthy", true));
    } else if (path.equals("/api/v1/info") && m == HttpMethod.GET) {
      long running = s.procs.values().stream().filter(p -> p.process.isAlive()).count();
      json(resp, 200, new JsonObject().put("version", "simulator").put("uptime_secs",
              java.time.Duration.between(s.created, Instant.now()).toSeconds()).put("running_processes", running)
          .put("total_processes", s.procs.size()));
    } else if (path.equals("/api/v1/processes") && m == HttpMethod.POST) {
      startProcess(req, s, body);
    } else if (path.equals("/api/v1/files/list") && m == HttpMethod.GET) {
      SimFiles.list(this, req, s.dir);
    } else if (path.equals("/api/v1/files")) {
      SimFiles.file(this, req, s.dir, body);
    } else {
      Matcher x = PROCESS.matcher(path);
      if (!x.matches()) {
        violation(req, "no such route");
        return;
      }
      Proc p = s.procs.get(Long.parseLong(x.group(1)));
      if (p == null) {
        json(resp, 404, new JsonObject().put("message", "process not found"));
        return;
      }
      process(req, p, x.group(2) == null ? "" : x.group(2), body, dropAfter);
    }
  }

  void refuse(HttpServerRequest req, String why) {
    violation(req, why);
  }

  private void startProcess(HttpServerRequest req, Sandbox s, Buffer raw) {
    JsonObject b = jsonBody(req, raw);
    if (b == null || !PROCESS_FIELDS.containsAll(b.fieldNames()) || !(b.getValue("command") instanceof String)
        || b.getValue("args") != null && !(b.getValue("args") instanceof JsonArray)
        || b.getValue("env") != null && !(b.getValue("env") instanceof JsonObject)
        || b.getValue("stdin_mode") != null && !Set.of("pipe", "closed").contains(b.getValue("stdin_mode"))) {
      violation(req, "process body does not conform");
      return;
    }
    List<String> argv = new ArrayList<>();
    argv.add(b.getString("command"));
    b.getJsonArray("args", new JsonArray()).forEach(a -> argv.add(String.valueOf(a)));
    ProcessBuilder pb = new ProcessBuilder(argv);
    Path cwd = b.getString("working_dir") == null ? s.dir : SimFiles.resolve(s.dir, b.getString("working_dir"));
    pb.directory(cwd == null ? s.dir.toFile() : cwd.toFile());
    b.getJsonObject("env", new JsonObject()).forEach(e -> pb.environment().put(e.getKey(), String.valueOf(e.getValue())));
    boolean pipe = "pipe".equals(b.getString("stdin_mode"));
    vertx.<Proc>executeBlocking(() -> {
      Process p = pb.start();
      if (!pipe) {
        p.getOutputStream().close();
      }
      return new Proc(p, b.getString("command"), b.getJsonArray("args", new JsonArray()), pipe);
    }, false).onComplete(ar -> {
      if (ar.failed()) {
        json(req.response(), 500, new JsonObject().put("message", "spawn failed"));
        return;
      }
      s.procs.put(ar.result().pid, ar.result());
      json(req.response(), 200, ar.result().info());
    });
  }

  private void process(HttpServerRequest req, Proc p, String what, Buffer body, int dropAfter) {
    HttpServerResponse resp = req.response();
    HttpMethod m = req.method();
    switch (what) {
      case "" -> {
        if (m == HttpMethod.GET) {
          json(resp, 200, p.info());
        } else if (m == HttpMethod.DELETE) {
          vertx.executeBlocking(() -> {
            p.signal(9);
            return null;
          }, false).onComplete(v -> resp.setStatusCode(200).end());
        } else {
          violation(req, "no such route");
        }
      }
      case "/signal" -> {
        JsonObject b = jsonBody(req, body);
        if (m != HttpMethod.POST || b == null || !Set.of("signal").equals(b.fieldNames())
            || !(b.getValue("signal") instanceof Integer n)) {
          violation(req, "signal body does not conform");
          return;
        }
        vertx.executeBlocking(() -> {
          p.signal(n);
          return null;
        }, false).onComplete(v -> json(resp, 200, new JsonObject().put("success", true)));
      }
      case "/stdin", "/stdin/close" -> {
        if (m != HttpMethod.POST) {
          violation(req, "no such route");
          return;
        }
        if (!p.stdinOpen) {
          json(resp, 409, new JsonObject().put("message", "stdin is not writable"));
          return;
        }
        vertx.executeBlocking(() -> {
          OutputStream in = p.process.getOutputStream();
          if (what.equals("/stdin")) {
            in.write(body.getBytes());
            in.flush();
          } else {
            p.stdinOpen = false;
            in.close();
          }
          return null;
        }, false).onComplete(ar -> resp.setStatusCode(ar.succeeded() ? 200 : 409).end());
      }
      case "/stdout", "/stderr", "/output" -> json(resp, 200, p.output(what.equals("/output") ? null
          : what.substring(1)));
      case "/output/follow" -> follow(req, p, dropAfter);
      default -> violation(req, "no such route");
    }
  }

  /** SSE: every line so far, then each as it comes, until the process ended; cut after {@code dropAfter} events. */
  private void follow(HttpServerRequest req, Proc p, int dropAfter) {
    if (!"text/event-stream".equals(req.getHeader("Accept"))) {
      violation(req, "follow needs Accept: text/event-stream");
      return;
    }
    HttpServerResponse resp = req.response().setChunked(true).putHeader("Content-Type", "text/event-stream");
    int[] sent = {0};
    long[] timer = {0};
    timer[0] = vertx.setPeriodic(10, t -> {
      if (resp.closed()) {
        vertx.cancelTimer(t);
        return;
      }
      boolean done = p.done();
      while (sent[0] < p.lines.size() && !resp.writeQueueFull()) {
        if (dropAfter >= 0 && sent[0] >= dropAfter) {
          vertx.cancelTimer(t);
          req.connection().close();
          return;
        }
        String[] l = p.lines.get(sent[0]++);
        resp.write("data: " + new JsonObject().put("line", l[1]).put("timestamp", l[2]).put("stream", l[0]).encode()
            + "\n\n");
      }
      if (done && sent[0] >= p.lines.size()) {
        vertx.cancelTimer(t);
        resp.end();
      }
    });
  }
}
