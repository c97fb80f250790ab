package ai.bespokelabs.sandbox.adapters.ray;

import ai.bespokelabs.sandbox.adapters.sim.Faults;
import ai.bespokelabs.sandbox.adapters.sim.SpecValidator;
import io.vertx.core.Context;
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
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A local stand-in for a Ray cluster's dashboard, for the Jobs API routes the adapter uses: submit, list, get,
 * stop, delete, logs, the log-tail WebSocket and the version.
 *
 * <p>Strict where Ray is, and a little stricter: with a token, every request must carry
 * {@code Authorization: Bearer <token>} (else 401); every request must conform to Ray's published OpenAPI
 * document ({@code provider-specs/ray/openapi.yml}), a submit may name only the fields of
 * {@code JobSubmitRequest} and a runtime env only {@code env_vars} (strings), and the collection is served
 * with its trailing slash only ({@code /api/jobs/}) as the dashboard registers it. Anything else is answered
 * 400/404 and recorded in {@link #violations()}, which tests assert empty. Errors are {@code text/plain}.
 *
 * <p>Real where the adapter depends on it: an entrypoint is a real {@code /bin/sh -c} process (its own
 * directory, the runtime env's variables, stdout and stderr merged into one log as Ray does); a stop sends
 * {@code SIGTERM} to the job's process group and {@code SIGKILL} after {@link #STOP_GRACE_MS}; statuses and
 * messages are Ray's; the tail replays the log from its start and follows it, never faster than the socket
 * drains, and closes (1000) once the job is terminal. Faults ({@link #faults()}) apply per request.
 */
public final class RaySimulator implements AutoCloseable {
  static final long STOP_GRACE_MS = 3_000;
  private static final int CHUNK = 32 * 1024;
  private static final Set<String> SUBMIT_FIELDS = Set.of("entrypoint", "submission_id", "job_id", "runtime_env",
      "metadata", "entrypoint_num_cpus", "entrypoint_num_gpus", "entrypoint_memory", "entrypoint_resources");
  private static final Pattern JOB = Pattern.compile("^/api/jobs/([^/]+)(/stop|/logs|/logs/tail)?$");

  private final Vertx vertx;
  private final String token;
  private final Path root;
  private final SpecValidator spec;
  private final HttpServer server;
  private final Faults faults = new Faults();
  private final Map<String, Job> jobs = new ConcurrentHashMap<>();
  private final List<String> violations = new CopyOnWriteArrayList<>();
  private final List<String> requests = new CopyOnWriteArrayList<>();
  private final AtomicLong streamed = new AtomicLong();
  private final AtomicLong drainWaits = new AtomicLong();
  private final AtomicLong seq = new AtomicLong();
  private final AtomicLong answering = new AtomicLong();

  private RaySimulator(Vertx vertx, String token, Path root, SpecValidator spec, HttpServer server) {
    this.vertx = vertx;
    this.token = token;
    this.root = root;
    this.spec = spec;
    this.server = server;
  }

  /** Starts a simulator on a free port of 127.0.0.1; {@code token} null for a cluster without token auth. */
  public static RaySimulator start(String token) {
    Vertx vertx = Vertx.vertx();
    try {
      SpecValidator spec = SpecValidator.load(vertx, "ray/openapi.yml").await(60, TimeUnit.SECONDS);
      Path root = Files.createTempDirectory("ray-sim-");
      RaySimulator[] self = new RaySimulator[1];
      HttpServer server = vertx.createHttpServer(new HttpServerOptions().setHost("127.0.0.1").setPort(0))
          .requestHandler(req -> self[0].handle(req));
      server.listen().await(10, TimeUnit.SECONDS);
      self[0] = new RaySimulator(vertx, token, root, spec, server);
      return self[0];
    } catch (Exception e) {
      vertx.close();
      throw new IllegalStateException("the Ray simulator did not start", e);
    }
  }

  // -------------------------------------------------------------------------------------------- test API

  /** The dashboard URL, as {@code RAY_ADDRESS}. */
  public String url() {
    return "http://127.0.0.1:" + server.actualPort();
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

  /** Every authorised request so far as {@code METHOD path}. */
  public List<String> requests() {
    return List.copyOf(requests);
  }

  /** How many requests so far matched {@code method} and the regular expression {@code path}. */
  public long count(HttpMethod method, String path) {
    String prefix = method.name() + " ";
    return requests.stream().filter(r -> r.startsWith(prefix) && r.substring(prefix.length()).matches(path)).count();
  }

  /** A job's details as Ray lists them, null when there is none. */
  public JsonObject job(String submissionId) {
    Job j = jobs.get(submissionId);
    return j == null ? null : j.details();
  }

  /** Every job's details. */
  public List<JsonObject> jobs() {
    return jobs.values().stream().sorted(Comparator.comparingLong(j -> j.order)).map(Job::details).toList();
  }

  /** A job's submit request as received. */
  public JsonObject submitted(String submissionId) {
    Job j = jobs.get(submissionId);
    return j == null ? null : j.request.copy();
  }

  /** A job's log so far, "" when there is no such job. */
  public String log(String submissionId) {
    Job j = jobs.get(submissionId);
    return j == null ? "" : new String(j.log(0, Integer.MAX_VALUE), StandardCharsets.UTF_8);
  }

  /** Submits a job behind the adapter's back (another client of the cluster); returns its submission id. */
  public String submitDirectly(String entrypoint, JsonObject metadata) {
    JsonObject body = new JsonObject().put("entrypoint", entrypoint).put("metadata", metadata);
    return submit(body);
  }

  /** Log bytes the tails have sent so far. */
  public long streamedBytes() {
    return streamed.get();
  }

  /**
   * Nanoseconds spent answering HTTP requests so far, each from its arrival to the end of its response (a
   * benchmark reads it around a call to see how long the simulator itself took); the log tail's WebSocket,
   * which lasts as long as its job, is not counted.
   */
  public long answeringNanos() {
    return answering.get();
  }

  /** How often a tail waited for its socket to drain. */
  public long drainWaits() {
    return drainWaits.get();
  }

  @Override
  public void close() {
    jobs.values().forEach(j -> j.kill(true));
    try {
      vertx.close().await(10, TimeUnit.SECONDS);
    } catch (java.util.concurrent.TimeoutException e) {
      throw new IllegalStateException("the Ray simulator did not stop", e);
    } finally {
      try (var walk = Files.walk(root)) {
        walk.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
      } catch (IOException ignored) {
        // a temporary directory
      }
    }
  }

  // ------------------------------------------------------------------------------------------ front door

  private void handle(HttpServerRequest req) {
    req.pause();
    String path = req.path();
    boolean upgrade = "websocket".equalsIgnoreCase(req.getHeader("Upgrade"));
    if (!upgrade) {
      long t0 = System.nanoTime();
      req.response().endHandler(v -> answering.addAndGet(System.nanoTime() - t0));
    }
    String specPath = path.equals("/api/jobs/") ? "/api/jobs" : path;
    if (path.equals("/api/jobs")) {
      violations.add(req.method() + " /api/jobs: the dashboard serves the collection as /api/jobs/");
      text(req, 404, "Not Found");
      return;
    }
    Future<Buffer> body = req.method() == HttpMethod.GET || upgrade ? Future.succeededFuture(null) : req.body();
    if (!upgrade) {
      req.resume();
    }
    body.compose(b -> spec.validate(req, specPath, b).map(v -> b)).onComplete(ar -> {
      if (ar.failed()) {
        violations.add(ar.cause().getMessage());
        text(req, 400, "request does not conform");
        return;
      }
      if (token != null && !("Bearer " + token).equals(req.getHeader("Authorization"))) {
        text(req, 401, "Unauthorized");
        return;
      }
      requests.add(req.method() + " " + path);
      Faults.Fault fault = faults.take(req);
      if (fault != null && fault.kind() == Faults.Kind.STATUS) {
        req.response().setStatusCode(fault.status()).putHeader("Content-Type", "text/plain");
        fault.headers().forEach((k, v) -> req.response().putHeader(k, v));
        req.response().end("injected failure");
        return;
      }
      if (fault != null && fault.kind() == Faults.Kind.DROP) {
        req.connection().close();
        return;
      }
      long delay = fault != null && fault.kind() == Faults.Kind.DELAY ? fault.delayMs() : 0;
      Runnable work = () -> route(req, path, upgrade, ar.result(), fault);
      if (delay > 0) {
        vertx.setTimer(delay, t -> work.run());
      } else {
        work.run();
      }
    });
  }

  private void route(HttpServerRequest req, String path, boolean upgrade, Buffer body, Faults.Fault fault) {
    boolean lose = fault != null && fault.kind() == Faults.Kind.LOSE_RESPONSE;
    if (path.equals("/api/version")) {
      answer(req, lose, 200, new JsonObject().put("version", "4").put("ray_version", "2.52.0")
          .put("ray_commit", "simulated").put("session_name", "session_sim").encode());
      return;
    }
    if (path.equals("/api/jobs/") && req.method() == HttpMethod.POST) {
      JsonObject json;
      try {
        json = new JsonObject(body);
        String problem = nonConforming(json);
        if (problem != null) {
          violations.add("POST /api/jobs/: " + problem);
          text(req, 400, problem);
          return;
        }
        if (json.getString("submission_id") != null && jobs.containsKey(json.getString("submission_id"))) {
          text(req, 400, "Job with submission_id " + json.getString("submission_id") + " already exists.");
          return;
        }
      } catch (RuntimeException e) {
        violations.add("POST /api/jobs/: not a JSON object");
        text(req, 400, "bad JSON");
        return;
      }
      String id = submit(json);
      answer(req, lose, 200, new JsonObject().put("submission_id", id).put("job_id", jobs.get(id).jobId).encode());
      return;
    }
    if (path.equals("/api/jobs/")) {
      JsonArray all = new JsonArray();
      jobs().forEach(all::add);
      answer(req, lose, 200, all.encode());
      return;
    }
    Matcher m = JOB.matcher(path);
    Job job = m.matches() ? jobs.get(m.group(1)) : null;
    if (job == null) {
      text(req, 404, "Job " + (m.matches() ? m.group(1) : path) + " does not exist.");
      return;
    }
    String rest = m.group(2) == null ? "" : m.group(2);
    switch (rest) {
      case "/logs/tail" -> {
        if (!upgrade) {
          violations.add("GET " + path + " without a WebSocket upgrade");
          text(req, 400, "WebSocket expected");
          return;
        }
        tail(req, job, fault != null && fault.kind() == Faults.Kind.DROP_STREAM ? fault.frames() : -1);
      }
      case "/logs" -> answer(req, lose, 200, new JsonObject().put("logs",
          new String(job.log(0, Integer.MAX_VALUE), StandardCharsets.UTF_8)).encode());
      case "/stop" -> answer(req, lose, 200, new JsonObject().put("stopped", job.stop()).encode());
      default -> {
        if (req.method() == HttpMethod.DELETE) {
          if (!job.terminal()) {
            text(req, 500, "Attempted to delete job with status " + job.status + ", but the job is not terminal.");
            return;
          }
          jobs.remove(job.submissionId);
          answer(req, lose, 200, new JsonObject().put("deleted", true).encode());
        } else {
          answer(req, lose, 200, job.details().encode());
        }
      }
    }
  }

  /** What is wrong with a submit beyond the spec (which allows any field): unknown fields, a runtime env we do not run. */
  private static String nonConforming(JsonObject json) {
    for (String f : json.fieldNames()) {
      if (!SUBMIT_FIELDS.contains(f)) {
        return "unknown field " + f;
      }
    }
    if (json.getValue("runtime_env") instanceof JsonObject env) {
      for (String f : env.fieldNames()) {
        if (!f.equals("env_vars")) {
          return "runtime_env." + f + " is not simulated";
        }
      }
      if (env.getValue("env_vars") instanceof JsonObject vars) {
        for (String k : vars.fieldNames()) {
          if (!(vars.getValue(k) instanceof String)) {
            return "runtime_env.env_vars." + k + " must be a string";
          }
        }
      } else if (env.containsKey("env_vars")) {
        return "runtime_env.env_vars must be an object";
      }
    }
    return null;
  }

  private void answer(HttpServerRequest req, boolean lose, int status, String json) {
    if (lose) {
      req.connection().close();
      return;
    }
    req.response().setStatusCode(status).putHeader("Content-Type", "application/json").end(json);
  }

  private static void text(HttpServerRequest req, int status, String message) {
    req.resume();
    req.response().setStatusCode(status).putHeader("Content-Type", "text/plain").end(message);
  }

  // ------------------------------------------------------------------------------------------------ jobs

  private String submit(JsonObject body) {
    String id = body.getString("submission_id", "raysubmit_" + UUID.randomUUID().toString().replace("-", ""));
    Job job = new Job(id, String.format("%08x", seq.incrementAndGet()), body);
    jobs.put(id, job);
    job.start();
    return id;
  }

  private final class Job {
    final String submissionId;
    final String jobId;
    final JsonObject request;
    final long order = System.nanoTime();
    final long startTime = System.currentTimeMillis();
    /** The merged log: {@code logBytes[0, logSize)}. */
    private byte[] logBytes = new byte[CHUNK];
    private int logSize;
    final List<Runnable> followers = new CopyOnWriteArrayList<>();
    volatile String status = "PENDING";
    volatile String message = "Job has not started yet.";
    volatile Long endTime;
    volatile boolean stopping;
    Process process;

    Job(String submissionId, String jobId, JsonObject request) {
      this.submissionId = submissionId;
      this.jobId = jobId;
      this.request = request.copy();
    }

    void start() {
      try {
        Path dir = Files.createDirectories(root.resolve(submissionId));
        ProcessBuilder pb = new ProcessBuilder("setsid", "/bin/sh", "-c",
            request.getString("entrypoint")).directory(dir.toFile())
            .redirectErrorStream(true);
        JsonObject vars = request.getJsonObject("runtime_env", new JsonObject()).getJsonObject("env_vars",
            new JsonObject());
        // the simulated node's temporary directory
        pb.environment().put("TMPDIR", root.toString());
        vars.forEach(e -> pb.environment().put(e.getKey(), String.valueOf(e.getValue())));
        pb.redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")));
        process = pb.start();
        status = "RUNNING";
        message = "Job is currently running.";
      } catch (IOException e) {
        end("FAILED", "Job failed to start: " + e.getMessage());
        return;
      }
      Thread.ofPlatform().daemon().name("ray-sim-" + submissionId).start(this::read);
    }

    private void read() {
      byte[] buf = new byte[CHUNK];
      try (InputStream in = process.getInputStream()) {
        int n;
        while ((n = in.read(buf)) > 0) {
          append(buf, n);
          wake();
        }
      } catch (IOException ignored) {
        // the process ended
      }
      int code;
      try {
        code = process.waitFor();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
      if (stopping) {
        end("STOPPED", "Job was intentionally stopped.");
      } else if (code == 0) {
        end("SUCCEEDED", "Job finished successfully.");
      } else {
        byte[] all = log(0, Integer.MAX_VALUE);
        String tail = new String(all, Math.max(0, all.length - 20_000), Math.min(all.length, 20_000),
            StandardCharsets.UTF_8);
        end("FAILED", "Job entrypoint command failed with exit code " + code
            + ", last available logs (truncated to 20,000 chars):\n" + tail);
      }
    }

    void end(String status, String message) {
      this.message = message;
      this.endTime = System.currentTimeMillis();
      this.status = status;
      wake();
    }

    void wake() {
      followers.forEach(Runnable::run);
    }

    boolean terminal() {
      return Set.of("SUCCEEDED", "FAILED", "STOPPED").contains(status);
    }

    /** SIGTERM to the process tree, SIGKILL after the grace period. */
    boolean stop() {
      if (terminal() || process == null) {
        return false;
      }
      stopping = true;
      kill(false);
      vertx.setTimer(STOP_GRACE_MS, t -> kill(true));
      return true;
    }

    /** Signals the job's process group, as Ray kills a job's processes (the entrypoint runs under setsid). */
    void kill(boolean forcibly) {
      Process p = process;
      if (p == null || !p.isAlive()) {
        return;
      }
      String pgid = "-" + p.pid();
      Thread.ofVirtual().start(() -> {
        try {
          new ProcessBuilder("kill", forcibly ? "-KILL" : "-TERM", "--", pgid).redirectErrorStream(true)
              .redirectOutput(ProcessBuilder.Redirect.DISCARD).start().waitFor();
        } catch (IOException e) {
          p.destroyForcibly();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      });
    }

    synchronized void append(byte[] b, int n) {
      if (logSize + n > logBytes.length) {
        logBytes = Arrays.copyOf(logBytes, Math.max(logBytes.length * 2, logSize + n));
      }
      System.arraycopy(b, 0, logBytes, logSize, n);
      logSize += n;
    }

    synchronized byte[] log(long from, int max) {
      if (from >= logSize) {
        return new byte[0];
      }
      return Arrays.copyOfRange(logBytes, (int) from, (int) Math.min(logSize, from + max));
    }

    synchronized long size() {
      return logSize;
    }

    JsonObject details() {
      JsonObject d = new JsonObject().put("type", "SUBMISSION").put("entrypoint", request.getString("entrypoint"))
          .put("job_id", jobId).put("submission_id", submissionId).put("status", status).put("message", message)
          .put("error_type", "FAILED".equals(status) ? "JOB_ENTRYPOINT_COMMAND_ERROR" : null)
          .put("start_time", startTime).put("end_time", endTime)
          .put("metadata", request.getJsonObject("metadata", new JsonObject()).copy())
          .put("runtime_env", request.getJsonObject("runtime_env", new JsonObject()).copy())
          .put("driver_info", null);
      return d;
    }
  }

  // ------------------------------------------------------------------------------------------- log tail

  private void tail(HttpServerRequest req, Job job, int dropAfterFrames) {
    HttpConnection conn = req.connection();
    req.toWebSocket().onSuccess(ws -> {
      Follower f = new Follower(ws, conn, job, dropAfterFrames, vertx.getOrCreateContext());
      Runnable wake = () -> f.context.runOnContext(v -> f.pump());
      job.followers.add(wake);
      ws.closeHandler(v -> {
        f.closed = true;
        job.followers.remove(wake);
      });
      f.pump();
    }).onFailure(t -> violations.add("the log tail could not be opened: " + t));
  }

  /** Sends a job's log to one WebSocket from its start, never faster than the socket drains. */
  private final class Follower {
    final ServerWebSocket ws;
    final HttpConnection conn;
    final Job job;
    final Context context;
    int framesLeft;
    long sent;
    boolean closed;
    boolean waiting;

    Follower(ServerWebSocket ws, HttpConnection conn, Job job, int dropAfterFrames, Context context) {
      this.ws = ws;
      this.conn = conn;
      this.job = job;
      this.framesLeft = dropAfterFrames;
      this.context = context;
    }

    void pump() {
      while (!closed && !waiting) {
        if (ws.writeQueueFull()) {
          drainWaits.incrementAndGet();
          waiting = true;
          ws.drainHandler(v -> {
            waiting = false;
            pump();
          });
          return;
        }
        boolean done = job.terminal();
        byte[] chunk = job.log(sent, CHUNK);
        if (chunk.length == 0) {
          if (done && sent >= job.size()) {
            closed = true;
            ws.close((short) 1000);
          }
          return;
        }
        if (framesLeft == 0) {
          closed = true;
          // a dropped connection, not a closing handshake: the socket is closed beneath Netty's handler
          var channel = ((io.vertx.core.net.impl.ConnectionBase) conn).channel();
          channel.eventLoop().execute(() -> channel.unsafe().close(channel.voidPromise()));
          return;
        }
        framesLeft--;
        int whole = ai.bespokelabs.sandbox.adapters.exec.Utf8.completePrefix(chunk, chunk.length);
        if (whole > 0 && whole < chunk.length) {
          chunk = Arrays.copyOf(chunk, whole);
        }
        sent += chunk.length;
        streamed.addAndGet(chunk.length);
        String text = utf8(chunk);
        if (text != null) {
          ws.writeTextMessage(text);
        } else {
          ws.writeBinaryMessage(Buffer.buffer(chunk));
        }
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
}
