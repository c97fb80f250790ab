package ai.bespokelabs.sandbox.adapters.codecapsules;

import ai.bespokelabs.sandbox.adapters.host.ExecHandle;
import ai.bespokelabs.sandbox.adapters.host.ExecSink;
import ai.bespokelabs.sandbox.adapters.local.ProcessRunner;
import ai.bespokelabs.sandbox.adapters.local.ProcessSpec;
import ai.bespokelabs.sandbox.adapters.sim.Faults;
import ai.bespokelabs.sandbox.adapters.spi.OutputSink.Stream;
import io.vertx.core.Context;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A local stand-in for CodeCapsules implementing exactly the layout {@link CodeCapsulesWire} assumes. A sandbox is
 * a directory whose {@code workspace} is where commands run; the files route takes absolute paths only (inside
 * the sandbox's directory) and refuses a relative one as a violation, as a provider whose paths are absolute
 * would. Commands are real host processes ({@link ProcessRunner}) run by a shell. Strict: a request without the Bearer key, on an unknown
 * route, with an unknown field or a field of the wrong type, or outside the documented limits is refused (401,
 * 404, 400 {@code invalid_request}) and recorded in {@link #violations()}, which tests assert empty.
 * {@link #faults()} injects failures; {@link #quota} bounds concurrent sandboxes ({@code quota_exceeded}).
 */
public final class CodeCapsulesSimulator implements AutoCloseable {
  public static final String API_KEY = "cc_sim_0123456789abcdef0123456789abcdef";
  private static final Pattern ROUTE =
      Pattern.compile("^/sandboxes(?:/([^/]+)(/exec|/exec/stream|/files|/logs|/metrics|/stop)?)?$");
  private static final SecureRandom RANDOM = new SecureRandom();
  private static final Set<String> FLAVORS = Set.of("python-3.12", "node-20", "browser", "full");

  private final Vertx vertx;
  private final Path root;
  private final HttpServer server;
  private final ProcessRunner runner = new ProcessRunner("codecapsules-simulator");
  private final Faults faults = new Faults();
  private final Map<String, Sandbox> sandboxes = new ConcurrentHashMap<>();
  private final List<String> violations = new CopyOnWriteArrayList<>();
  private final List<String> requests = new CopyOnWriteArrayList<>();
  private final List<String> authorizations = new CopyOnWriteArrayList<>();
  private final AtomicInteger deletes = new AtomicInteger();
  private final AtomicLong answering = new AtomicLong();
  private final long expiryTimer;
  private volatile int quota = Integer.MAX_VALUE;

  /** One simulated sandbox. */
  public static final class Sandbox {
    public final String id;
    public final String flavor;
    public final int cpu;
    public final int memory;
    public final int ttlMinutes;
    public final Map<String, String> metadata;
    final Path dir;
    final Path workspace;
    final Instant createdAt = Instant.now();
    final Instant expiresAt;
    volatile String status = "running";
    final Set<ExecHandle> processes = ConcurrentHashMap.newKeySet();
    final AtomicInteger execs = new AtomicInteger();
    final List<JsonObject> logs = new CopyOnWriteArrayList<>();

    Sandbox(String id, String flavor, int cpu, int memory, int ttlMinutes, Map<String, String> metadata, Path dir) {
      this.id = id;
      this.flavor = flavor;
      this.cpu = cpu;
      this.memory = memory;
      this.ttlMinutes = ttlMinutes;
      this.metadata = Map.copyOf(metadata);
      this.dir = dir;
      this.workspace = dir.resolve("workspace");
      this.expiresAt = createdAt.plusSeconds(ttlMinutes * 60L);
    }

    public Path workspace() {
      return workspace;
    }

    JsonObject json() {
      return new JsonObject().put("id", id).put("flavor", flavor).put("status", status).put("cpu", cpu)
          .put("memory", memory).put("createdAt", createdAt.toString()).put("expiresAt", expiresAt.toString())
          .put("metadata", new JsonObject(new LinkedHashMap<>(metadata)));
    }
  }

  private CodeCapsulesSimulator(Vertx vertx, Path root) {
    this.vertx = vertx;
    this.root = root;
    this.server = vertx.createHttpServer().requestHandler(this::onRequest);
    this.expiryTimer = vertx.setPeriodic(500, t -> expire());
  }

  public static CodeCapsulesSimulator start() {
    Vertx vertx = Vertx.vertx();
    try {
      CodeCapsulesSimulator sim = new CodeCapsulesSimulator(vertx, Files.createTempDirectory("codecapsules-sim-"));
      sim.server.listen(0, "127.0.0.1").await(10, TimeUnit.SECONDS);
      return sim;
    } catch (Exception e) {
      vertx.close();
      throw new IllegalStateException("simulator did not start", e);
    }
  }

  public String apiUrl() {
    return "http://127.0.0.1:" + server.actualPort() + "/v1";
  }

  /** Provider settings pointing at this simulator, as the gateway reads them. */
  public Map<String, String> env() {
    return Map.of("CODECAPSULES_API_KEY", API_KEY, "CODECAPSULES_API_URL", apiUrl());
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

  /** {@code METHOD path} of every request received, in order. */
  public List<String> requests() {
    return List.copyOf(requests);
  }

  public Map<String, Sandbox> sandboxes() {
    return Map.copyOf(sandboxes);
  }

  public int deletes() {
    return deletes.get();
  }

  /** At most {@code n} sandboxes at once; more answer {@code quota_exceeded}. */
  public void quota(int n) {
    quota = n;
  }

  // ---- dispatch ----------------------------------------------------------------------------------------------

  /**
   * Nanoseconds spent answering requests so far, each from its arrival to the end of its response (a
   * benchmark reads it around a call to see how long the simulator itself took).
   */
  public long answeringNanos() {
    return answering.get();
  }

  private void onRequest(HttpServerRequest req) {
    long t0 = System.nanoTime();
    req.response().endHandler(v -> answering.addAndGet(System.nanoTime() - t0));
    req.pause();
    requests.add(req.method() + " " + req.path());
    Faults.Fault fault = faults.take(req);
    if (fault != null && fault.kind() == Faults.Kind.DELAY) {
      vertx.setTimer(fault.delayMs(), t -> handle(req, null));
    } else {
      handle(req, fault);
    }
  }

  private void handle(HttpServerRequest req, Faults.Fault fault) {
    req.resume();
    if (fault != null && fault.kind() == Faults.Kind.STATUS) {
      HttpServerResponse res = req.response().setStatusCode(fault.status());
      fault.headers().forEach(res::putHeader);
      res.putHeader("Content-Type", "application/json").end((fault.body() == null
          ? error("injected", "injected failure with a secret-looking text: " + API_KEY) : fault.body()).encode());
      return;
    }
    if (fault != null && fault.kind() == Faults.Kind.DROP) {
      req.connection().close();
      return;
    }
    String auth = req.getHeader("Authorization");
    if (!("Bearer " + API_KEY).equals(auth)) {
      violations.add("without the Bearer API key: " + req.method() + " " + req.path());
      reply(req, 401, error("unauthorized", "invalid API key"));
      return;
    }
    String path = req.path().startsWith("/v1/") ? req.path().substring(3) : null;
    Matcher m = path == null ? null : ROUTE.matcher(path);
    if (m == null || !m.matches()) {
      refuse(req, 404, "no such route: " + req.method() + " " + req.path());
      return;
    }
    boolean lose = fault != null && fault.kind() == Faults.Kind.LOSE_RESPONSE;
    int dropAfter = fault != null && fault.kind() == Faults.Kind.DROP_STREAM ? fault.frames() : -1;
    String id = m.group(1);
    String sub = m.group(2) == null ? "" : m.group(2);
    HttpMethod method = req.method();
    if (id == null) {
      if (method == HttpMethod.POST) {
        json(req, body -> create(req, body, lose));
      } else {
        refuse(req, 405, "method not allowed: " + method + " " + req.path());
      }
      return;
    }
    Sandbox s = sandboxes.get(id);
    String route = method + " " + sub;
    if (!Set.of("GET ", "DELETE ", "POST /exec", "POST /exec/stream", "PUT /files", "GET /files", "GET /logs",
        "GET /metrics", "POST /stop").contains(route)) {
      refuse(req, 405, "method not allowed: " + route);
      return;
    }
    if (s == null) {
      req.body().onComplete(b -> reply(req, 404, error("not_found", "sandbox not found")));
      return;
    }
    switch (route) {
      case "GET " -> reply(req, 200, s.json());
      case "DELETE " -> {
        kill(s);
        deletes.incrementAndGet();
        if (lose) {
          req.connection().close();
        } else {
          req.response().setStatusCode(204).end();
        }
      }
      case "POST /stop" -> {
        s.status = "stopped";
        s.processes.forEach(p -> p.signal("KILL"));
        reply(req, 200, s.json());
      }
      case "POST /exec" -> json(req, body -> exec(req, s, body, lose));
      case "POST /exec/stream" -> json(req, body -> stream(req, s, body, dropAfter));
      case "PUT /files" -> upload(req, s);
      case "GET /files" -> download(req, s);
      case "GET /logs" -> reply(req, 200, new JsonArray(new ArrayList<>(s.logs)));
      default -> metrics(req, s);
    }
  }

  private void json(HttpServerRequest req, java.util.function.Consumer<JsonObject> then) {
    if (!"application/json".equals(req.getHeader("Content-Type"))) {
      refuse(req, 400, "body is not application/json: " + req.path());
      return;
    }
    req.body().onComplete(ar -> {
      JsonObject body;
      try {
        body = ar.succeeded() ? ar.result().toJsonObject() : null;
      } catch (RuntimeException e) {
        body = null;
      }
      if (body == null) {
        refuse(req, 400, "body is not a JSON object: " + req.path());
        return;
      }
      then.accept(body);
    });
  }

  /** Null when {@code body} has only the allowed fields, each of its type, and every required one; else why not. */
  private static String check(JsonObject body, Map<String, Class<?>> allowed, Set<String> required) {
    for (String k : body.fieldNames()) {
      Class<?> type = allowed.get(k);
      if (type == null) {
        return "unknown field " + k;
      }
      Object v = body.getValue(k);
      if (!type.isInstance(v) || v instanceof Number n && type == Integer.class && !(n instanceof Integer)) {
        return "field " + k + " is not a " + type.getSimpleName();
      }
      if (v instanceof JsonObject o && o.stream().anyMatch(e -> !(e.getValue() instanceof String))) {
        return "field " + k + " must map strings to strings";
      }
    }
    for (String k : required) {
      if (!body.containsKey(k)) {
        return "missing field " + k;
      }
    }
    return null;
  }

  private static boolean within(JsonObject body, String field, int min, int max) {
    Integer v = body.getInteger(field);
    return v == null || v >= min && v <= max;
  }

  // ---- lifecycle ---------------------------------------------------------------------------------------------

  private void create(HttpServerRequest req, JsonObject body, boolean lose) {
    String bad = check(body, Map.of("flavor", String.class, "memory", Integer.class, "cpu", Integer.class,
        "ttl", Integer.class, "metadata", JsonObject.class), Set.of());
    if (bad == null && body.containsKey("flavor") && !FLAVORS.contains(body.getString("flavor"))) {
      bad = "unknown flavor";
    }
    if (bad == null && !(within(body, "memory", 1, 8192) && within(body, "cpu", 1, 4)
        && within(body, "ttl", 1, 480))) {
      bad = "a value outside the documented limits";
    }
    if (bad != null) {
      refuse(req, 400, "create: " + bad);
      return;
    }
    if (sandboxes.size() >= quota) {
      reply(req, 403, error("quota_exceeded", "too many concurrent sandboxes"));
      return;
    }
    Map<String, String> metadata = new LinkedHashMap<>();
    body.getJsonObject("metadata", new JsonObject()).forEach(e -> metadata.put(e.getKey(), (String) e.getValue()));
    Sandbox s = newSandbox(body.getString("flavor", "python-3.12"), body.getInteger("cpu", 1),
        body.getInteger("memory", 512), body.getInteger("ttl", 60), metadata);
    if (lose) {
      req.connection().close();
      return;
    }
    reply(req, 201, s.json());
  }

  /** Creates a sandbox directly, as another client of the same account would. */
  public Sandbox newSandbox(String flavor, int cpu, int memory, int ttl, Map<String, String> metadata) {
    String id = "sb_" + HexFormat.of().formatHex(RANDOM.generateSeed(10));
    Path dir = root.resolve(id);
    try {
      Files.createDirectories(dir.resolve("workspace"));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    Sandbox s = new Sandbox(id, flavor, cpu, memory, ttl, metadata, dir);
    s.logs.add(new JsonObject().put("ts", Instant.now().toString()).put("source", "system").put("message", "started"));
    sandboxes.put(id, s);
    return s;
  }

  private void expire() {
    Instant now = Instant.now();
    sandboxes.values().stream().filter(s -> s.expiresAt.isBefore(now)).forEach(this::kill);
  }

  private void kill(Sandbox s) {
    if (sandboxes.remove(s.id) == null) {
      return;
    }
    List<ExecHandle> procs = new ArrayList<>(s.processes);
    vertx.executeBlocking(() -> {
      procs.forEach(p -> p.signal("KILL"));
      deleteTree(s.dir);
      return null;
    });
  }

  private static void deleteTree(Path dir) {
    for (int attempt = 0; attempt < 3 && Files.exists(dir); attempt++) {
      try (java.util.stream.Stream<Path> walk = Files.walk(dir)) {
        walk.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
      } catch (IOException | UncheckedIOException ignored) {
        // a process killed a moment ago may still be writing: walk again
      }
    }
  }

  // ---- exec --------------------------------------------------------------------------------------------------

  private static final Map<String, Class<?>> EXEC_FIELDS = Map.of("command", String.class, "timeout", Integer.class,
      "env", JsonObject.class, "stdin", String.class);
  private static final Map<String, Class<?>> STREAM_FIELDS = Map.of("command", String.class,
      "timeout", Integer.class, "env", JsonObject.class);

  private String checkExec(Sandbox s, JsonObject body, Map<String, Class<?>> fields) {
    String bad = check(body, fields, Set.of("command"));
    if (bad == null && !within(body, "timeout", 1, 300)) {
      bad = "timeout outside 1..300";
    }
    return bad;
  }

  /** A program of {@code s}: its shell command line, environment and working directory. */
  private ProcessSpec spec(Sandbox s, JsonObject body) {
    Map<String, String> env = new LinkedHashMap<>();
    body.getJsonObject("env", new JsonObject()).forEach(e -> env.put(e.getKey(), (String) e.getValue()));
    Map<String, String> all = new LinkedHashMap<>(ProcessSpec.environment(s.workspace, Map.of(), env));
    all.put("PATH", System.getenv().getOrDefault("PATH", ProcessSpec.BASE_PATH));
    all.putAll(env);
    return new ProcessSpec(List.of(ProcessSpec.SHELL, "-c", body.getString("command")), s.workspace, all, 24 * 3600,
        Integer.MAX_VALUE);
  }

  /** Runs a program to its end; {@code output} may block (back-pressure). */
  private interface Run {
    void output(Stream stream, byte[] data) throws InterruptedException;

    void exited(int code, boolean timedOut, long durationMs);
  }

  private void run(Sandbox s, JsonObject body, String stdin, Run run, java.util.function.Consumer<ExecHandle> started) {
    if (!"running".equals(s.status)) {
      run.exited(-2, false, 0);
      return;
    }
    s.execs.incrementAndGet();
    int timeout = body.getInteger("timeout", 30);
    boolean[] timedOut = {false};
    long[] timer = {-1};
    ExecHandle[] handle = new ExecHandle[1];
    boolean[] ended = {false};
    ExecSink sink = new ExecSink() {
      @Override
      public void output(Stream stream, byte[] data) throws InterruptedException {
        run.output(stream, data);
      }

      @Override
      public void exited(int exitCode, boolean t, boolean cancelled, long durationMs) {
        vertx.cancelTimer(timer[0]);
        ended[0] = true;
        if (handle[0] != null) {
          s.processes.remove(handle[0]);
        }
        run.exited(exitCode, timedOut[0], durationMs);
      }
    };
    vertx.executeBlocking(() -> {
      handle[0] = runner.start(spec(s, body), stdin != null, sink, pid -> { });
      s.processes.add(handle[0]);
      if (ended[0]) {
        s.processes.remove(handle[0]);
      }
      if (stdin != null) {
        handle[0].writeStdin(stdin.getBytes(StandardCharsets.UTF_8));
        handle[0].closeStdin();
      }
      return handle[0];
    }).onSuccess(h -> {
      started.accept(h);
      timer[0] = vertx.setTimer(timeout * 1000L, t -> {
        timedOut[0] = true;
        vertx.executeBlocking(() -> {
          h.signal("KILL");
          return null;
        });
      });
    }).onFailure(t -> run.exited(127, false, 0));
  }

  private void exec(HttpServerRequest req, Sandbox s, JsonObject body, boolean lose) {
    String bad = checkExec(s, body, EXEC_FIELDS);
    if (bad != null) {
      refuse(req, 400, "exec: " + bad);
      return;
    }
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    Context context = vertx.getOrCreateContext();
    Instant started = Instant.now();
    String execId = "ex_" + HexFormat.of().formatHex(RANDOM.generateSeed(6));
    run(s, body, body.getString("stdin"), new Run() {
      @Override
      public synchronized void output(Stream stream, byte[] data) {
        (stream == Stream.STDOUT ? out : err).writeBytes(data);
      }

      @Override
      public void exited(int code, boolean timedOut, long durationMs) {
        context.runOnContext(v -> {
          if (code == -2) {
            reply(req, 409, error("not_ready", "sandbox is not running"));
          } else if (timedOut) {
            reply(req, 408, error("exec_timeout", "command timed out").put("timeoutSeconds", body.getInteger("timeout")));
          } else if (lose) {
            req.connection().close();
          } else {
            s.logs.add(new JsonObject().put("ts", Instant.now().toString()).put("source", "exec")
                .put("message", body.getString("command")).put("execId", execId));
            reply(req, 200, new JsonObject().put("execId", execId).put("command", body.getString("command"))
                .put("stdout", out.toString(StandardCharsets.UTF_8)).put("stderr", err.toString(StandardCharsets.UTF_8))
                .put("exitCode", code).put("durationMs", durationMs).put("startedAt", started.toString())
                .put("completedAt", Instant.now().toString()));
          }
        });
      }
    }, h -> { });
  }

  private void stream(HttpServerRequest req, Sandbox s, JsonObject body, int dropAfter) {
    String bad = checkExec(s, body, STREAM_FIELDS);
    if (bad != null) {
      refuse(req, 400, "exec stream: " + bad);
      return;
    }
    if (!"running".equals(s.status)) {
      reply(req, 409, error("not_ready", "sandbox is not running"));
      return;
    }
    HttpServerResponse res = req.response().setStatusCode(200).setChunked(true)
        .putHeader("Content-Type", "application/x-ndjson");
    Context context = vertx.getOrCreateContext();
    boolean[] closed = {false};
    ExecHandle[] handle = new ExecHandle[1];
    AtomicInteger frames = new AtomicInteger();
    res.closeHandler(v -> {
      closed[0] = true;
      if (handle[0] != null) {
        ExecHandle h = handle[0];
        vertx.executeBlocking(() -> {
          h.signal("KILL");
          return null;
        });
      }
    });
    run(s, body, null, new Run() {
      @Override
      public void output(Stream stream, byte[] data) throws InterruptedException {
        CompletableFuture<Void> written = new CompletableFuture<>();
        Buffer line = new JsonObject().put("type", stream.wire())
            .put("data", new String(data, StandardCharsets.UTF_8)).toBuffer().appendString("\n");
        context.runOnContext(v -> {
          if (closed[0]) {
            written.complete(null);
            return;
          }
          res.write(line);
          if (dropAfter >= 0 && frames.incrementAndGet() >= dropAfter) {
            req.connection().close();
            written.complete(null);
          } else if (res.writeQueueFull()) {
            res.drainHandler(d -> written.complete(null));
          } else {
            written.complete(null);
          }
        });
        while (!written.isDone() && !closed[0]) {
          try {
            written.get(100, TimeUnit.MILLISECONDS);
          } catch (TimeoutException | java.util.concurrent.ExecutionException e) {
            // look at closed again
          }
        }
      }

      @Override
      public void exited(int code, boolean timedOut, long durationMs) {
        context.runOnContext(v -> {
          if (!closed[0]) {
            res.end(new JsonObject().put("type", "exit").put("exitCode", code).put("durationMs", durationMs)
                .put("timedOut", timedOut).toBuffer().appendString("\n"));
          }
        });
      }
    }, h -> handle[0] = h);
  }

  // ---- files, metrics ----------------------------------------------------------------------------------------

  /**
   * The file at {@code path}, which must be absolute (the provider's paths are: its examples name
   * {@code /workspace/...}) and inside the sandbox's directory; else null. A relative path is refused.
   */
  private static Path resolve(Sandbox s, String path) {
    if (path == null || !path.startsWith("/")) {
      return null;
    }
    Path p = Path.of(path).normalize();
    return p.startsWith(s.dir) ? p : null;
  }

  private void upload(HttpServerRequest req, Sandbox s) {
    if (!"application/octet-stream".equals(req.getHeader("Content-Type"))) {
      refuse(req, 400, "upload is not application/octet-stream");
      return;
    }
    Path p = resolve(s, req.getParam("path"));
    req.body().onComplete(ar -> {
      if (p == null || req.params().size() != 1) {
        refuse(req, 400, "upload: an absolute path query parameter (and nothing else) is required");
        return;
      }
      vertx.executeBlocking(() -> {
        Files.createDirectories(p.getParent());
        Files.write(p, ar.result().getBytes());
        return Files.size(p);
      }).onComplete(w -> {
        if (w.failed()) {
          reply(req, 400, error("invalid_request", "cannot write"));
        } else {
          reply(req, 200, new JsonObject().put("path", req.getParam("path")).put("sizeBytes", w.result())
              .put("createdAt", Instant.now().toString()));
        }
      });
    });
  }

  private void download(HttpServerRequest req, Sandbox s) {
    Path p = resolve(s, req.getParam("path"));
    if (p == null || req.params().size() != 1) {
      refuse(req, 400, "download: an absolute path query parameter (and nothing else) is required");
      return;
    }
    if (Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS)) {
      reply(req, 400, error("is_directory", "path is a directory"));
    } else if (!Files.isRegularFile(p, LinkOption.NOFOLLOW_LINKS)) {
      reply(req, 404, error("not_found", "file not found"));
    } else {
      req.response().putHeader("Content-Type", "application/octet-stream").sendFile(p.toString());
    }
  }

  private void metrics(HttpServerRequest req, Sandbox s) {
    vertx.executeBlocking(() -> {
      try (java.util.stream.Stream<Path> walk = Files.walk(s.dir)) {
        return walk.filter(Files::isRegularFile).mapToLong(f -> f.toFile().length()).sum();
      }
    }).onComplete(ar -> reply(req, 200, new JsonObject().put("cpuPercent", 1.5).put("memoryUsedMb", 64)
        .put("memoryLimitMb", s.memory).put("diskUsedMb", Math.round((ar.succeeded() ? ar.result() : 0) / 10485.76) / 100.0)
        .put("diskLimitMb", 10240).put("execCount", s.execs.get())
        .put("uptimeSeconds", Instant.now().getEpochSecond() - s.createdAt.getEpochSecond())));
  }

  // ---- answers -----------------------------------------------------------------------------------------------

  private static JsonObject error(String code, String message) {
    return new JsonObject().put("error", new JsonObject().put("code", code).put("message", message));
  }

  private void refuse(HttpServerRequest req, int status, String why) {
    violations.add(why);
    JsonObject body = error(status == 404 ? "not_found" : "invalid_request", why);
    if (req.isEnded()) {
      reply(req, status, body);
    } else {
      req.body().onComplete(b -> reply(req, status, body));
    }
  }

  private static void reply(HttpServerRequest req, int status, Object body) {
    HttpServerResponse res = req.response();
    if (res.ended() || res.closed()) {
      return;
    }
    String text = body instanceof JsonObject o ? o.encode() : ((JsonArray) body).encode();
    res.setStatusCode(status).putHeader("Content-Type", "application/json").end(text);
  }

  @Override
  public void close() {
    vertx.cancelTimer(expiryTimer);
    sandboxes.values().forEach(s -> s.processes.forEach(p -> p.signal("KILL")));
    sandboxes.clear();
    try {
      vertx.close().await(10, TimeUnit.SECONDS);
    } catch (Exception ignored) {
      // best effort
    }
    deleteTree(root);
  }
}
