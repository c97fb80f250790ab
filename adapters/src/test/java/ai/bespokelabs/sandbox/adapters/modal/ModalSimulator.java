package ai.bespokelabs.sandbox.adapters.modal;

import com.google.protobuf.ByteString;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.Message;
import io.vertx.core.Future;
import io.vertx.core.MultiMap;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.grpc.common.GrpcMessageDecoder;
import io.vertx.grpc.common.GrpcMessageEncoder;
import io.vertx.grpc.common.GrpcStatus;
import io.vertx.grpc.common.ServiceMethod;
import io.vertx.grpc.common.ServiceName;
import io.vertx.grpc.server.GrpcServer;
import io.vertx.grpc.server.GrpcServerRequest;
import io.vertx.grpc.server.GrpcServerResponse;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.regex.Pattern;
import modal.client.Api;
import modal.task_command_router.TaskCommandRouterOuterClass.TaskExecStartRequest;
import modal.task_command_router.TaskCommandRouterOuterClass.TaskExecStartResponse;
import modal.task_command_router.TaskCommandRouterOuterClass.TaskExecStdinWriteRequest;
import modal.task_command_router.TaskCommandRouterOuterClass.TaskExecStdinWriteResponse;
import modal.task_command_router.TaskCommandRouterOuterClass.TaskExecStdioFileDescriptor;
import modal.task_command_router.TaskCommandRouterOuterClass.TaskExecStdioReadRequest;
import modal.task_command_router.TaskCommandRouterOuterClass.TaskExecStdioReadResponse;
import modal.task_command_router.TaskCommandRouterOuterClass.TaskExecStdoutConfig;
import modal.task_command_router.TaskCommandRouterOuterClass.TaskExecWaitRequest;
import modal.task_command_router.TaskCommandRouterOuterClass.TaskExecWaitResponse;

/**
 * Modal as a real gRPC server over HTTP/2 (the Vert.x gRPC server), built from the same protos as the adapter:
 * {@code modal.client.ModalClient} for sandboxes and, on the same port, {@code TaskCommandRouter} for programs.
 * It refuses what Modal would: a call without the token headers (or with wrong ones) is {@code UNAUTHENTICATED}, a
 * router call without its task's bearer token too, and a message with a field the protos do not define, an unknown
 * id or an invalid value is {@code INVALID_ARGUMENT}/{@code NOT_FOUND}; each refusal of a malformed request is
 * recorded as a violation. Images build asynchronously, as Modal's do ({@link ModalImagesSim}): a first use of
 * an image answers before it is built, and {@code SandboxCreate} refuses it until {@code ImageJoinStreaming}
 * reports the build's success. Programs run as real local processes in a directory per sandbox; a file-system
 * snapshot copies that directory. Faults: a status for the next call of a method (optionally with gRPC's retry
 * pushback trailer {@code grpc-retry-pushback-ms}, gRFC A6, which a server sends with a refusal to say when to
 * try again), a status after its effects (a lost answer), a slow answer (the call handled after a delay), and
 * an output stream that ends with {@code UNAVAILABLE} after some bytes.
 */
public final class ModalSimulator implements AutoCloseable {
  public static final String TOKEN_ID = "ak-sim-token-id";
  public static final String TOKEN_SECRET = "as-sim-token-secret-do-not-leak";
  static final ServiceName API = ServiceName.create("modal.client", "ModalClient");
  static final ServiceName ROUTER = ServiceName.create("modal.task_command_router", "TaskCommandRouter");
  static final Set<String> GPUS = Set.of("T4", "L4", "A10G", "A100", "A100-40GB", "A100-80GB", "L40S", "H100", "H200",
      "B200");
  static final Pattern FROM = Pattern.compile("FROM [a-z0-9][a-z0-9./_:@-]*", Pattern.CASE_INSENSITIVE);
  /** Sandboxes per {@code SandboxList} page, small so that paging is exercised. */
  static final int PAGE = 2;

  private final Vertx vertx;
  private final HttpServer server;
  private final Path root;
  private final List<String> violations = new CopyOnWriteArrayList<>();
  private final Map<String, List<Refusal>> faults = new ConcurrentHashMap<>();
  private final Map<String, List<Long>> delays = new ConcurrentHashMap<>();
  private final Map<String, List<GrpcStatus>> faultsAfter = new ConcurrentHashMap<>();
  private final Map<String, Integer> drops = new ConcurrentHashMap<>();
  private final Map<String, Integer> calls = new ConcurrentHashMap<>();
  private final Map<String, String> apps = new ConcurrentHashMap<>();
  private final Map<String, Path> images = new ConcurrentHashMap<>();
  private final Map<String, Map<String, String>> secrets = new ConcurrentHashMap<>();
  private final Map<String, Sbx> sandboxes = new ConcurrentHashMap<>();
  private final Map<String, Sbx> tasks = new ConcurrentHashMap<>();
  private final Map<String, String> jwts = new ConcurrentHashMap<>();
  private final Map<String, Exec> execs = new ConcurrentHashMap<>();
  private final List<String> headerValues = new CopyOnWriteArrayList<>();
  private final java.util.concurrent.atomic.AtomicLong answering = new java.util.concurrent.atomic.AtomicLong();
  private int seq;
  private final Map<String, Long> authTokens = new ConcurrentHashMap<>();
  private final java.util.concurrent.atomic.AtomicInteger expiredRefusals = new java.util.concurrent.atomic.AtomicInteger();
  private volatile long authLifetimeMs = 20 * 60_000L;
  private final ModalFilesSim files = new ModalFilesSim(this);
  private final ModalImagesSim builds;

  /** A sandbox. */
  static final class Sbx {
    final String id;
    final String appId;
    final String taskId;
    final Path dir;
    final Map<String, String> env;
    final List<Api.SandboxTag> tags;
    final double createdAt;
    final Api.Sandbox definition;
    volatile boolean terminated;

    Sbx(String id, String appId, String taskId, Path dir, Map<String, String> env, List<Api.SandboxTag> tags,
        double createdAt, Api.Sandbox definition) {
      this.id = id;
      this.appId = appId;
      this.taskId = taskId;
      this.dir = dir;
      this.env = env;
      this.tags = tags;
      this.createdAt = createdAt;
      this.definition = definition;
    }
  }

  /** A program: a real process, its output so far, its end. */
  static final class Exec {
    final Sbx sandbox;
    final Process process;
    final ByteArrayOutputStream[] out = {new ByteArrayOutputStream(), new ByteArrayOutputStream()};
    final boolean[] pumped = new boolean[2];
    final Promise<TaskExecWaitResponse> end = Promise.promise();
    long stdinWritten;
    boolean stdinClosed;
    volatile boolean killed;

    Exec(Sbx sandbox, Process process) {
      this.sandbox = sandbox;
      this.process = process;
    }

    synchronized byte[] from(int fd, long offset) {
      byte[] all = out[fd].toByteArray();
      return offset >= all.length ? new byte[0] : Arrays.copyOfRange(all, (int) offset, all.length);
    }

    synchronized boolean drained(int fd, long offset) {
      return pumped[fd] && offset >= out[fd].size();
    }
  }

  private ModalSimulator(Vertx vertx, HttpServer server, Path root) {
    this.vertx = vertx;
    this.server = server;
    this.root = root;
    this.builds = new ModalImagesSim(this, root.resolve("empty"));
  }

  public static ModalSimulator start() {
    try {
      Vertx vertx = Vertx.vertx();
      Path root = Files.createTempDirectory("modal-sim");
      // Modal takes a file write of up to 16 MiB in one message
      GrpcServer grpc = GrpcServer.server(vertx, new io.vertx.grpc.server.GrpcServerOptions()
          .setMaxMessageSize(ModalFilesSim.MAX_WRITE + (1 << 20)));
      HttpServer http = vertx.createHttpServer(new HttpServerOptions().setPort(0).setHost("127.0.0.1"));
      ModalSimulator sim = new ModalSimulator(vertx, http, root);
      sim.register(grpc);
      http.requestHandler(grpc).listen().await(10, TimeUnit.SECONDS);
      return sim;
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  public String serverUrl() {
    return "http://127.0.0.1:" + server.actualPort();
  }

  /** The settings that point the gateway's modal backend here. */
  public Map<String, String> env() {
    return Map.of("MODAL_TOKEN_ID", TOKEN_ID, "MODAL_TOKEN_SECRET", TOKEN_SECRET, "MODAL_SERVER_URL", serverUrl());
  }

  public List<String> violations() {
    return violations;
  }

  /** Every metadata value received (the token headers included), to check nothing else carries the secret. */
  public List<String> headerValues() {
    return headerValues;
  }

  /** A status to answer a call with, and the retry pushback trailer's milliseconds to send with it, or null. */
  record Refusal(GrpcStatus status, Long pushbackMs) {}

  /** A registry reference whose build fails on the simulator, with {@link #BUILD_FAILURE} as Modal's exception. */
  public static final String FAILING_IMAGE = ModalImagesSim.FAILING_IMAGE;
  public static final String BUILD_FAILURE = ModalImagesSim.FAILURE_EXCEPTION;
  /** Text of every build's log entries (which Modal streams, and which no tenant should see). */
  public static final String BUILD_LOG = ModalImagesSim.LOG_LINE;

  /** Image builds started from now on take {@code time} (until {@link #clearFaults}; 300 ms by default). */
  public void buildTime(java.time.Duration time) {
    builds.buildTime(time);
  }

  /** The next {@code ImageJoinStreaming} ends without a result once it has sent {@code entries} log entries. */
  public void endJoinAfter(int entries) {
    builds.endJoinAfter(entries);
  }

  /** The next {@code n} {@code ImageJoinStreaming} calls are never answered: no message, no end. */
  public void holdJoins(int n) {
    builds.holdJoins(n);
  }

  /** Every {@code ImageJoinStreaming} request received so far. */
  public List<Api.ImageJoinStreamingRequest> joins() {
    return builds.joins();
  }

  /** Image builds started so far (a recipe seen for the first time starts one). */
  public int buildsStarted() {
    return builds.buildsStarted();
  }

  /** The next call of {@code method} answers {@code status} without effect. */
  public void fail(String method, GrpcStatus status) {
    fail(method, status, null);
  }

  /**
   * The next call of {@code method} answers {@code status} without effect, with the trailer
   * {@code grpc-retry-pushback-ms: <pushbackMs>}.
   */
  public void fail(String method, GrpcStatus status, Long pushbackMs) {
    faults.computeIfAbsent(method, k -> new CopyOnWriteArrayList<>()).add(new Refusal(status, pushbackMs));
  }

  /** The next call of {@code method} is handled (and answered) {@code ms} milliseconds after it arrived. */
  public void delay(String method, long ms) {
    delays.computeIfAbsent(method, k -> new CopyOnWriteArrayList<>()).add(ms);
  }

  /** The next call of {@code method} takes effect, then answers {@code status} (the answer is lost). */
  public void failAfter(String method, GrpcStatus status) {
    faultsAfter.computeIfAbsent(method, k -> new CopyOnWriteArrayList<>()).add(status);
  }

  /** The next stdout read stream ends with {@code UNAVAILABLE} after {@code bytes} bytes. */
  public void dropStdoutAfter(int bytes) {
    drops.put("stdout", bytes);
  }

  /** Auth tokens handed out from now on expire this long after they were issued. */
  public void authTokenLifetime(java.time.Duration lifetime) {
    authLifetimeMs = lifetime.toMillis();
  }

  /** Every auth token handed out so far has expired (as after a clock jump or a revocation). */
  public void expireAuthTokens() {
    authTokens.replaceAll((t, exp) -> 0L);
  }

  /** Calls refused because their auth token had expired. */
  public int expiredRefusals() {
    return expiredRefusals.get();
  }

  /** Every router token handed out so far stops working (as an expired JWT). */
  public void expireRouterTokens() {
    jwts.replaceAll((task, jwt) -> "expired." + UUID.randomUUID());
  }

  /**
   * Nanoseconds spent answering calls so far, each from its request message to the end of its response (a
   * benchmark reads it around a call to see how long the simulator itself took).
   */
  public long answeringNanos() {
    return answering.get();
  }

  public int calls(String method) {
    return calls.getOrDefault(method, 0);
  }

  public Set<String> liveSandboxes() {
    Set<String> out = new java.util.TreeSet<>();
    sandboxes.values().stream().filter(s -> !s.terminated).forEach(s -> out.add(s.id));
    return out;
  }

  /** A sandbox created behind the gateway's back in app {@code appName} (default environment) with {@code tags}. */
  public String createBehindTheBack(String appName, Map<String, String> tags) {
    String appId = apps.computeIfAbsent("/" + appName, k -> id("ap"));
    String id = id("sb");
    Path dir = root.resolve(id);
    copy(root.resolve("empty"), dir);
    List<Api.SandboxTag> t = new ArrayList<>();
    tags.forEach((k, v) -> t.add(Api.SandboxTag.newBuilder().setTagName(k).setTagValue(v).build()));
    Sbx s = new Sbx(id, appId, id("ta"), dir, Map.of(), t, System.currentTimeMillis() / 1000.0,
        Api.Sandbox.getDefaultInstance());
    sandboxes.put(id, s);
    tasks.put(s.taskId, s);
    return id;
  }

  /** Terminates a sandbox behind the gateway's back. */
  public void terminateBehindTheBack(String sandboxId) {
    sandboxes.get(sandboxId).terminated = true;
  }

  /** The directory a sandbox's files live in (its root, and the working directory of its programs). */
  public Path dir(String sandboxId) {
    return sandboxes.get(sandboxId).dir;
  }

  Vertx vertx() {
    return vertx;
  }

  public Api.Sandbox definition(String sandboxId) {
    return sandboxes.get(sandboxId).definition;
  }

  public List<Api.SandboxTag> tags(String sandboxId) {
    return sandboxes.get(sandboxId).tags;
  }

  public void clearFaults() {
    builds.clearFaults();
    faults.clear();
    faultsAfter.clear();
    delays.clear();
    drops.clear();
  }

  /** A status to answer with. */
  static final class Status extends RuntimeException {
    final GrpcStatus status;
    final Long pushbackMs;

    Status(GrpcStatus status, String message) {
      this(status, message, null);
    }

    Status(GrpcStatus status, String message, Long pushbackMs) {
      super(message, null, false, false);
      this.status = status;
      this.pushbackMs = pushbackMs;
    }
  }

  Status invalid(String what) {
    violations.add(what);
    return new Status(GrpcStatus.INVALID_ARGUMENT, what);
  }

  // ---- registration ------------------------------------------------------------------------------------------

  private void register(GrpcServer grpc) {
    unary(grpc, API, "AppGetOrCreate", Api.AppGetOrCreateRequest.getDefaultInstance(), this::appGetOrCreate);
    unary(grpc, API, "AuthTokenGet", Api.AuthTokenGetRequest.getDefaultInstance(), this::authTokenGet);
    unary(grpc, API, "ImageGetOrCreate", Api.ImageGetOrCreateRequest.getDefaultInstance(), this::imageGetOrCreate);
    unary(grpc, API, "SecretGetOrCreate", Api.SecretGetOrCreateRequest.getDefaultInstance(), this::secretGetOrCreate);
    unary(grpc, API, "SandboxCreate", Api.SandboxCreateRequest.getDefaultInstance(), this::sandboxCreate);
    unary(grpc, API, "SandboxGetResourceUsage", Api.SandboxGetResourceUsageRequest.getDefaultInstance(),
        this::resourceUsage);
    unary(grpc, API, "SandboxGetTaskId", Api.SandboxGetTaskIdRequest.getDefaultInstance(), this::getTaskId);
    unary(grpc, API, "SandboxList", Api.SandboxListRequest.getDefaultInstance(), this::sandboxList);
    unary(grpc, API, "SandboxTerminate", Api.SandboxTerminateRequest.getDefaultInstance(), this::terminate);
    unary(grpc, API, "SandboxSnapshotFs", Api.SandboxSnapshotFsRequest.getDefaultInstance(), this::snapshotFs);
    unary(grpc, API, "TaskGetCommandRouterAccess", Api.TaskGetCommandRouterAccessRequest.getDefaultInstance(),
        this::routerAccess);
    unary(grpc, ROUTER, "TaskExecStart", TaskExecStartRequest.getDefaultInstance(), this::execStart);
    unary(grpc, ROUTER, "TaskExecStdinWrite", TaskExecStdinWriteRequest.getDefaultInstance(), this::stdinWrite);
    unary(grpc, ROUTER, "TaskExecWait", TaskExecWaitRequest.getDefaultInstance(), this::execWait);
    unary(grpc, API, "ContainerFilesystemExec", Api.ContainerFilesystemExecRequest.getDefaultInstance(),
        files::exec);
    ServiceMethod<Api.ContainerFilesystemExecGetOutputRequest, Api.FilesystemRuntimeOutputBatch> output =
        ServiceMethod.server(API, "ContainerFilesystemExecGetOutput", GrpcMessageEncoder.encoder(),
            GrpcMessageDecoder.decoder(Api.ContainerFilesystemExecGetOutputRequest.getDefaultInstance()));
    grpc.callHandler(output, req -> req.handler(msg -> {
      try {
        check(req, msg, API, "ContainerFilesystemExecGetOutput");
        files.output(msg, req.response());
      } catch (Status s) {
        req.response().status(s.status).statusMessage(s.getMessage()).end();
      }
    }));
    ServiceMethod<Api.ImageJoinStreamingRequest, Api.ImageJoinStreamingResponse> join = ServiceMethod.server(API,
        "ImageJoinStreaming", GrpcMessageEncoder.encoder(),
        GrpcMessageDecoder.decoder(Api.ImageJoinStreamingRequest.getDefaultInstance()));
    grpc.callHandler(join, req -> req.handler(msg -> {
      try {
        check(req, msg, API, "ImageJoinStreaming");
        builds.join(msg, req.response());
      } catch (Status s) {
        req.response().status(s.status).statusMessage(s.getMessage()).end();
      }
    }));
    ServiceMethod<TaskExecStdioReadRequest, TaskExecStdioReadResponse> read = ServiceMethod.server(ROUTER,
        "TaskExecStdioRead", GrpcMessageEncoder.encoder(),
        GrpcMessageDecoder.decoder(TaskExecStdioReadRequest.getDefaultInstance()));
    grpc.callHandler(read, req -> req.handler(msg -> {
      long t0 = System.nanoTime();
      try {
        check(req, msg, ROUTER, "TaskExecStdioRead");
        stdioRead(msg, req.response(), t0);
      } catch (Status s) {
        req.response().status(s.status).statusMessage(s.getMessage()).end();
      }
    }));
  }

  private <Req extends Message, Resp extends Message> void unary(GrpcServer grpc, ServiceName service, String name,
      Req prototype, Function<Req, Future<Resp>> handler) {
    ServiceMethod<Req, Resp> m = ServiceMethod.server(service, name, GrpcMessageEncoder.encoder(),
        GrpcMessageDecoder.decoder(prototype));
    grpc.callHandler(m, req -> req.handler(msg -> {
      long t0 = System.nanoTime();
      Long slow = take(delays, name);
      if (slow != null) {
        vertx.setTimer(slow, t -> answer(req, msg, service, name, handler, t0));
      } else {
        answer(req, msg, service, name, handler, t0);
      }
    }));
  }

  private <Req extends Message, Resp extends Message> void answer(GrpcServerRequest<Req, Resp> req, Req msg,
      ServiceName service, String name, Function<Req, Future<Resp>> handler, long t0) {
    GrpcServerResponse<Req, Resp> resp = req.response();
    Future<Resp> answer;
    try {
      check(req, msg, service, name);
      answer = handler.apply(msg);
    } catch (Status s) {
      answer = Future.failedFuture(s);
    }
    answer.onComplete(ar -> {
      GrpcStatus after = take(faultsAfter, name);
      if (after != null) {
        resp.status(after).end();
      } else if (ar.succeeded()) {
        resp.end(ar.result());
      } else if (ar.cause() instanceof Status s) {
        if (s.pushbackMs != null) {
          resp.trailers().set("grpc-retry-pushback-ms", String.valueOf(s.pushbackMs));
        }
        resp.status(s.status).statusMessage(s.getMessage()).end();
      } else {
        resp.status(GrpcStatus.INTERNAL).end();
      }
      answering.addAndGet(System.nanoTime() - t0);
    });
  }

  private static <T> T take(Map<String, List<T>> from, String name) {
    List<T> list = from.get(name);
    return list == null || list.isEmpty() ? null : list.remove(0);
  }

  /** Authentication, unknown fields and injected faults, before any effect. */
  private void check(GrpcServerRequest<?, ?> req, Message msg, ServiceName service, String name) {
    calls.merge(name, 1, Integer::sum);
    MultiMap h = req.headers();
    h.forEach((k, v) -> headerValues.add(k + ": " + v));
    if (service == API) {
      if (!TOKEN_ID.equals(h.get("x-modal-token-id")) || !TOKEN_SECRET.equals(h.get("x-modal-token-secret"))) {
        throw new Status(GrpcStatus.UNAUTHENTICATED, "invalid token");
      }
      if (h.get("x-modal-client-type") == null || h.get("x-modal-client-version") == null) {
        throw invalid(name + ": missing x-modal-client-type or x-modal-client-version");
      }
      String auth = h.get("x-modal-auth-token");
      if (auth != null && !name.equals("AuthTokenGet")) {
        Long exp = authTokens.get(auth);
        if (exp == null) {
          throw new Status(GrpcStatus.UNAUTHENTICATED, "invalid auth token");
        }
        if (exp <= System.currentTimeMillis()) {
          expiredRefusals.incrementAndGet();
          throw new Status(GrpcStatus.UNAUTHENTICATED, "auth token expired");
        }
      }
    } else {
      String taskId = (String) msg.getField(msg.getDescriptorForType().findFieldByName("task_id"));
      String jwt = jwts.get(taskId);
      if (jwt == null || !("Bearer " + jwt).equals(h.get("authorization"))) {
        throw new Status(GrpcStatus.UNAUTHENTICATED, "invalid router token");
      }
    }
    unknownFields(msg, name);
    Refusal fault = take(faults, name);
    if (fault != null) {
      throw new Status(fault.status(), "injected", fault.pushbackMs());
    }
  }

  private void unknownFields(Message msg, String where) {
    if (!msg.getUnknownFields().asMap().isEmpty()) {
      throw invalid(where + ": unknown fields " + msg.getUnknownFields().asMap().keySet());
    }
    for (Map.Entry<FieldDescriptor, Object> f : msg.getAllFields().entrySet()) {
      if (f.getKey().getJavaType() == FieldDescriptor.JavaType.MESSAGE) {
        if (f.getKey().isRepeated()) {
          for (Object o : (List<?>) f.getValue()) {
            unknownFields((Message) o, where);
          }
        } else {
          unknownFields((Message) f.getValue(), where);
        }
      }
    }
  }

  synchronized String id(String prefix) {
    return prefix + "-" + (++seq) + UUID.randomUUID().toString().substring(0, 8);
  }

  // ---- ModalClient -------------------------------------------------------------------------------------------

  private Future<Api.AppGetOrCreateResponse> appGetOrCreate(Api.AppGetOrCreateRequest r) {
    if (r.getAppName().isBlank()) {
      throw invalid("AppGetOrCreate: app_name is required");
    }
    if (r.getObjectCreationType() != Api.ObjectCreationType.OBJECT_CREATION_TYPE_CREATE_IF_MISSING) {
      throw invalid("AppGetOrCreate: object_creation_type must be CREATE_IF_MISSING");
    }
    String id = apps.computeIfAbsent(r.getEnvironmentName() + "/" + r.getAppName(), k -> id("ap"));
    return Future.succeededFuture(Api.AppGetOrCreateResponse.newBuilder().setAppId(id).build());
  }

  /** A JWT whose {@code exp} claim (seconds) says when it expires; the simulator refuses it from then on. */
  private Future<Api.AuthTokenGetResponse> authTokenGet(Api.AuthTokenGetRequest r) {
    long exp = System.currentTimeMillis() + authLifetimeMs;
    java.util.Base64.Encoder b64 = java.util.Base64.getUrlEncoder().withoutPadding();
    String token = b64.encodeToString("{\"alg\":\"HS256\",\"typ\":\"JWT\"}".getBytes()) + "."
        + b64.encodeToString(("{\"exp\":" + exp / 1000 + ",\"jti\":\"" + id("jt") + "\"}").getBytes()) + "."
        + b64.encodeToString(UUID.randomUUID().toString().getBytes());
    authTokens.put(token, exp);
    return Future.succeededFuture(Api.AuthTokenGetResponse.newBuilder().setToken(token).build());
  }

  private void knownApp(String appId, String where) {
    if (!apps.containsValue(appId)) {
      throw new Status(GrpcStatus.NOT_FOUND, where + ": unknown app");
    }
  }

  private Future<Api.ImageGetOrCreateResponse> imageGetOrCreate(Api.ImageGetOrCreateRequest r) {
    knownApp(r.getAppId(), "ImageGetOrCreate");
    List<String> commands = r.getImage().getDockerfileCommandsList();
    if (commands.size() != 1 || !FROM.matcher(commands.get(0)).matches()) {
      throw invalid("ImageGetOrCreate: expected one FROM <registry ref> command, got " + commands);
    }
    return Future.succeededFuture(builds.getOrCreate(commands));
  }

  private Future<Api.SecretGetOrCreateResponse> secretGetOrCreate(Api.SecretGetOrCreateRequest r) {
    if (r.getObjectCreationType() != Api.ObjectCreationType.OBJECT_CREATION_TYPE_EPHEMERAL
        || !r.getDeploymentName().isEmpty()) {
      throw invalid("SecretGetOrCreate: an ephemeral secret has no name and object_creation_type EPHEMERAL");
    }
    String id = id("st");
    secrets.put(id, Map.copyOf(r.getEnvDictMap()));
    return Future.succeededFuture(Api.SecretGetOrCreateResponse.newBuilder().setSecretId(id).build());
  }

  private Future<Api.SandboxCreateResponse> sandboxCreate(Api.SandboxCreateRequest r) {
    knownApp(r.getAppId(), "SandboxCreate");
    Api.Sandbox d = r.getDefinition();
    if (d.getEntrypointArgsCount() == 0) {
      throw invalid("SandboxCreate: entrypoint_args is required");
    }
    Path image = images.containsKey(d.getImageId()) ? images.get(d.getImageId()) : builds.files(d.getImageId());
    if (image == null) {
      throw new Status(GrpcStatus.NOT_FOUND, "unknown image");
    }
    Map<String, String> env = new HashMap<>();
    for (String s : d.getSecretIdsList()) {
      Map<String, String> values = secrets.get(s);
      if (values == null) {
        throw new Status(GrpcStatus.NOT_FOUND, "unknown secret");
      }
      env.putAll(values);
    }
    if (d.getResources().hasGpuConfig()) {
      Api.GPUConfig g = d.getResources().getGpuConfig();
      if (!GPUS.contains(g.getGpuType()) || g.getCount() < 1 || g.getCount() > 8) {
        throw invalid("SandboxCreate: invalid gpu_config " + g.getGpuType() + ":" + g.getCount());
      }
    }
    if (d.getTimeoutSecs() < 1 || d.getTimeoutSecs() > 86_400) {
      throw invalid("SandboxCreate: timeout_secs out of range");
    }
    for (Api.SandboxTag t : r.getTagsList()) {
      if (t.getTagName().isBlank()) {
        throw invalid("SandboxCreate: empty tag name");
      }
    }
    String id = id("sb");
    Path dir = root.resolve(id);
    copy(image, dir);
    Sbx s = new Sbx(id, r.getAppId(), id("ta"), dir, env, List.copyOf(r.getTagsList()),
        System.currentTimeMillis() / 1000.0 + seq * 1e-6, d);
    sandboxes.put(id, s);
    tasks.put(s.taskId, s);
    return Future.succeededFuture(Api.SandboxCreateResponse.newBuilder().setSandboxId(id).build());
  }

  private static void copy(Path from, Path to) {
    try {
      Files.createDirectories(to);
      if (!Files.isDirectory(from)) {
        return;
      }
      try (var walk = Files.walk(from)) {
        for (Path p : (Iterable<Path>) walk::iterator) {
          Path target = to.resolve(from.relativize(p).toString());
          if (Files.isDirectory(p)) {
            Files.createDirectories(target);
          } else {
            Files.copy(p, target);
          }
        }
      }
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  private Sbx sandbox(String id) {
    Sbx s = sandboxes.get(id);
    if (s == null) {
      throw new Status(GrpcStatus.NOT_FOUND, "no such sandbox");
    }
    return s;
  }

  private static Api.GenericResult terminated() {
    return Api.GenericResult.newBuilder().setStatus(Api.GenericResult.GenericStatus.GENERIC_STATUS_TERMINATED).build();
  }

  private Future<Api.SandboxGetTaskIdResponse> getTaskId(Api.SandboxGetTaskIdRequest r) {
    if (!r.hasTimeout()) {
      throw invalid("SandboxGetTaskId: new clients must give a timeout");
    }
    Sbx s = sandbox(r.getSandboxId());
    Api.SandboxGetTaskIdResponse.Builder b = Api.SandboxGetTaskIdResponse.newBuilder();
    if (s.terminated) {
      b.setTaskResult(terminated());
    } else {
      b.setTaskId(s.taskId);
    }
    return Future.succeededFuture(b.build());
  }

  /**
   * Usage as Modal bills it: the reserved CPU (at least 1/8 core), memory (at least 128 MiB) and GPUs since
   * creation.
   */
  private Future<Api.SandboxGetResourceUsageResponse> resourceUsage(Api.SandboxGetResourceUsageRequest r) {
    Sbx s = sandbox(r.getSandboxId());
    double secs = Math.max(0, System.currentTimeMillis() / 1000.0 - s.createdAt);
    double cores = Math.max(0.125, s.definition.getResources().getMilliCpu() / 1000.0);
    double gib = Math.max(0.125, s.definition.getResources().getMemoryMb() / 1024.0);
    Api.SandboxGetResourceUsageResponse.Builder b = Api.SandboxGetResourceUsageResponse.newBuilder()
        .setCpuCoreNanosecs((long) (secs * cores * 1e9)).setMemGibNanosecs((long) (secs * gib * 1e9));
    if (s.definition.getResources().hasGpuConfig()) {
      Api.GPUConfig g = s.definition.getResources().getGpuConfig();
      b.setGpuNanosecs((long) (secs * g.getCount() * 1e9)).setGpuType(g.getGpuType());
    }
    return Future.succeededFuture(b.build());
  }

  private Future<Api.SandboxListResponse> sandboxList(Api.SandboxListRequest r) {
    List<Sbx> found = new ArrayList<>();
    for (Sbx s : sandboxes.values()) {
      if ((r.getAppId().isEmpty() || r.getAppId().equals(s.appId)) && (r.getIncludeFinished() || !s.terminated)
          && (r.getBeforeTimestamp() == 0 || s.createdAt < r.getBeforeTimestamp())
          && s.tags.containsAll(r.getTagsList())) {
        found.add(s);
      }
    }
    found.sort(Comparator.comparingDouble((Sbx s) -> s.createdAt).reversed());
    Api.SandboxListResponse.Builder b = Api.SandboxListResponse.newBuilder();
    for (Sbx s : found.subList(0, Math.min(PAGE, found.size()))) {
      b.addSandboxes(Api.SandboxInfo.newBuilder().setId(s.id).setAppId(s.appId).setCreatedAt(s.createdAt)
          .addAllTags(s.tags));
    }
    return Future.succeededFuture(b.build());
  }

  private Future<Api.SandboxTerminateResponse> terminate(Api.SandboxTerminateRequest r) {
    Sbx s = sandbox(r.getSandboxId());
    Api.SandboxTerminateResponse.Builder b = Api.SandboxTerminateResponse.newBuilder();
    if (s.terminated) {
      b.setExistingResult(terminated());
    } else {
      s.terminated = true;
      execs.values().stream().filter(e -> e.sandbox == s).forEach(e -> e.process.descendants()
          .forEach(ProcessHandle::destroyForcibly));
      execs.values().stream().filter(e -> e.sandbox == s).forEach(e -> e.process.destroyForcibly());
    }
    return Future.succeededFuture(b.build());
  }

  private Future<Api.SandboxSnapshotFsResponse> snapshotFs(Api.SandboxSnapshotFsRequest r) {
    Sbx s = sandbox(r.getSandboxId());
    if (s.terminated) {
      throw new Status(GrpcStatus.FAILED_PRECONDITION, "sandbox terminated");
    }
    String id = id("im");
    Path dir = root.resolve(id);
    return vertx.executeBlocking(() -> {
      copy(s.dir, dir);
      images.put(id, dir);
      return Api.SandboxSnapshotFsResponse.newBuilder().setImageId(id).setResult(Api.GenericResult.newBuilder()
          .setStatus(Api.GenericResult.GenericStatus.GENERIC_STATUS_SUCCESS)).build();
    });
  }

  private Future<Api.TaskGetCommandRouterAccessResponse> routerAccess(Api.TaskGetCommandRouterAccessRequest r) {
    Sbx s = tasks.get(r.getTaskId());
    if (s == null) {
      throw new Status(GrpcStatus.NOT_FOUND, "no such task");
    }
    String jwt = jwts.compute(r.getTaskId(), (k, old) -> old == null || old.startsWith("expired.")
        ? "jwt." + UUID.randomUUID() : old);
    return Future.succeededFuture(Api.TaskGetCommandRouterAccessResponse.newBuilder().setJwt(jwt).setUrl(serverUrl())
        .build());
  }

  // ---- TaskCommandRouter -------------------------------------------------------------------------------------

  Sbx task(String taskId) {
    Sbx s = tasks.get(taskId);
    if (s == null || s.terminated) {
      throw new Status(GrpcStatus.NOT_FOUND, "no such task");
    }
    return s;
  }

  private Exec exec(String taskId, String execId) {
    Exec e = execs.get(execId);
    if (e == null || !e.sandbox.taskId.equals(taskId)) {
      throw new Status(GrpcStatus.NOT_FOUND, "no such exec");
    }
    return e;
  }

  private Future<TaskExecStartResponse> execStart(TaskExecStartRequest r) {
    Sbx s = task(r.getTaskId());
    if (r.getExecId().isBlank() || r.getCommandArgsCount() == 0) {
      throw invalid("TaskExecStart: exec_id and command_args are required");
    }
    if (execs.containsKey(r.getExecId())) {
      return Future.succeededFuture(TaskExecStartResponse.getDefaultInstance()); // idempotent by exec id
    }
    if (r.getStdoutConfig() != TaskExecStdoutConfig.TASK_EXEC_STDOUT_CONFIG_PIPE) {
      throw invalid("TaskExecStart: the simulator serves piped stdout only");
    }
    return vertx.executeBlocking(() -> {
      ProcessBuilder pb = new ProcessBuilder(r.getCommandArgsList())
          .directory(r.hasWorkdir() ? s.dir.resolve(r.getWorkdir().replaceFirst("^/+", "")).toFile() : s.dir.toFile());
      pb.environment().putAll(s.env);
      pb.environment().putAll(r.getEnvMap());
      Exec e;
      try {
        e = new Exec(s, pb.start());
      } catch (IOException io) {
        Exec failed = new Exec(s, new ProcessBuilder("sh", "-c", "exit 127").start());
        execs.put(r.getExecId(), failed);
        pump(failed);
        return TaskExecStartResponse.getDefaultInstance();
      }
      execs.put(r.getExecId(), e);
      pump(e);
      if (r.hasTimeoutSecs() && r.getTimeoutSecs() > 0) {
        vertx.setTimer(r.getTimeoutSecs() * 1000L, id -> {
          if (e.process.isAlive()) {
            e.killed = true;
            e.process.descendants().forEach(ProcessHandle::destroyForcibly);
            e.process.destroyForcibly();
          }
        });
      }
      return TaskExecStartResponse.getDefaultInstance();
    });
  }

  private void pump(Exec e) {
    InputStream[] in = {e.process.getInputStream(), e.process.getErrorStream()};
    for (int fd = 0; fd < 2; fd++) {
      int f = fd;
      Thread t = new Thread(() -> {
        byte[] buf = new byte[8192];
        try (InputStream s = in[f]) {
          int n;
          while ((n = s.read(buf)) > 0) {
            synchronized (e) {
              e.out[f].write(buf, 0, n);
            }
          }
        } catch (IOException ignored) {
          // the process went away
        }
        synchronized (e) {
          e.pumped[f] = true;
        }
      }, "modal-sim-pump");
      t.setDaemon(true);
      t.start();
    }
    e.process.onExit().thenAccept(p -> {
      int code = p.exitValue();
      TaskExecWaitResponse.Builder b = TaskExecWaitResponse.newBuilder();
      if (e.killed) {
        b.setSignal(9);
      } else if (code > 128 && code < 160) {
        b.setSignal(code - 128);
      } else {
        b.setCode(code);
      }
      e.end.tryComplete(b.build());
    });
  }

  private Future<TaskExecStdinWriteResponse> stdinWrite(TaskExecStdinWriteRequest r) {
    Exec e = exec(r.getTaskId(), r.getExecId());
    return vertx.executeBlocking(() -> {
      synchronized (e) {
        if (e.stdinClosed) {
          throw new Status(GrpcStatus.FAILED_PRECONDITION, "stdin closed");
        }
        if (r.getOffset() > e.stdinWritten) {
          throw invalid("TaskExecStdinWrite: offset beyond what was written");
        }
        byte[] data = r.getData().toByteArray();
        int skip = (int) (e.stdinWritten - r.getOffset()); // a resumed write: the overlap was written already
        OutputStream os = e.process.getOutputStream();
        try {
          if (skip < data.length) {
            os.write(data, skip, data.length - skip);
            os.flush();
            e.stdinWritten += data.length - skip;
          }
          if (r.getEof()) {
            e.stdinClosed = true;
            os.close();
          }
        } catch (IOException ignored) {
          // the program no longer reads stdin, as a closed pipe
        }
      }
      return TaskExecStdinWriteResponse.getDefaultInstance();
    });
  }

  private Future<TaskExecWaitResponse> execWait(TaskExecWaitRequest r) {
    Exec e = exec(r.getTaskId(), r.getExecId());
    return e.end.future();
  }

  /** Sends the output from the offset asked for as it comes, by the client's demand, until the program's end. */
  private void stdioRead(TaskExecStdioReadRequest r, GrpcServerResponse<TaskExecStdioReadRequest,
      TaskExecStdioReadResponse> resp, long t0) {
    Exec e = exec(r.getTaskId(), r.getExecId());
    int fd = r.getFileDescriptor() == TaskExecStdioFileDescriptor.TASK_EXEC_STDIO_FILE_DESCRIPTOR_STDOUT ? 0 : 1;
    Integer dropAfter = fd == 0 ? drops.remove("stdout") : null;
    long[] offset = {r.getOffset()};
    long[] sent = {0};
    long timer = vertx.setPeriodic(10, id -> {
      if (resp.writeQueueFull()) {
        return;
      }
      byte[] data = e.from(fd, offset[0]);
      if (data.length > 0) {
        int n = Math.min(data.length, 1024);
        if (dropAfter != null) {
          n = (int) Math.min(n, Math.max(0, dropAfter - sent[0]));
          if (n == 0) {
            vertx.cancelTimer(id);
            resp.status(GrpcStatus.UNAVAILABLE).end();
            return;
          }
        }
        resp.write(TaskExecStdioReadResponse.newBuilder().setData(ByteString.copyFrom(data, 0, n)).build());
        offset[0] += n;
        sent[0] += n;
      } else if (e.drained(fd, offset[0]) && e.end.future().isComplete()) {
        vertx.cancelTimer(id);
        resp.end();
        answering.addAndGet(System.nanoTime() - t0);
      }
    });
    resp.exceptionHandler(t -> vertx.cancelTimer(timer)); // the client went away
  }

  @Override
  public void close() {
    execs.values().forEach(e -> e.process.destroyForcibly());
    try {
      vertx.close().await(10, TimeUnit.SECONDS);
    } catch (java.util.concurrent.TimeoutException e) {
      throw new IllegalStateException(e);
    }
    try (var walk = Files.walk(root)) {
      walk.sorted(Collections.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException ignored) {
      // temporary files
    }
  }
}
