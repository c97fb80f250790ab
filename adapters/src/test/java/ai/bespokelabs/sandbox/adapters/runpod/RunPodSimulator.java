package ai.bespokelabs.sandbox.adapters.runpod;

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
import java.io.InputStream;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A local stand-in for RunPod's REST v1 pods API, built from its published description
 * ({@code provider-specs/runpod/openapi.json}: the fields of {@code PodCreateInput}, the GPU type ids, the list's
 * query parameters), with a real SSH server ({@link PodSshServer}) as every pod's sshd.
 *
 * <p>Strict: every request needs {@code Authorization: Bearer <key>} (else 401); a create with an unknown field,
 * a wrong type, an unknown GPU type id or a malformed port, an unknown query parameter or route is refused with
 * 400 and recorded in {@link #violations()}. A new pod is {@code RUNNING} at once but shows no public IP and no
 * port mapping until {@link #startDelayMs}; then {@code 22} maps to the SSH server's port and the pod's
 * {@code PUBLIC_KEY} may log in.
 *
 * <p>Faults ({@link #faults()}): any status with headers (429 with {@code Retry-After}), slow answers (the
 * request is handled after the delay), dropped connections, lost answers (the create happens, its answer is
 * lost), and {@link #failNextCreateAfterAllocating}.
 */
public final class RunPodSimulator implements AutoCloseable {
  private static final Pattern POD = Pattern.compile("^/pods/([^/]+)$");
  private static final Pattern PORT = Pattern.compile("[0-9]{1,5}/(http|tcp)");

  private final Vertx vertx;
  private final String apiKey;
  private final HttpServer server;
  private final PodSshServer ssh;
  private final Set<String> createFields;
  private final Set<String> gpuTypes;
  private final Set<String> listParams;
  private final Map<String, JsonObject> pods = new ConcurrentHashMap<>();
  private final Map<String, Long> readyAt = new ConcurrentHashMap<>();
  private final List<String> violations = new CopyOnWriteArrayList<>();
  private final List<String> requests = new CopyOnWriteArrayList<>();
  private final Faults faults = new Faults();
  private volatile long startDelayMs = 200;
  private volatile boolean failNextCreate;

  private RunPodSimulator(Vertx vertx, String apiKey, HttpServer server, PodSshServer ssh, JsonObject spec) {
    this.vertx = vertx;
    this.apiKey = apiKey;
    this.server = server;
    this.ssh = ssh;
    JsonObject create = spec.getJsonObject("components").getJsonObject("schemas").getJsonObject("PodCreateInput")
        .getJsonObject("properties");
    this.createFields = Set.copyOf(create.fieldNames());
    this.gpuTypes = Set.copyOf(create.getJsonObject("gpuTypeIds").getJsonObject("items").getJsonArray("enum")
        .getList());
    JsonArray params = spec.getJsonObject("paths").getJsonObject("/pods").getJsonObject("get")
        .getJsonArray("parameters");
    this.listParams = ConcurrentHashMap.newKeySet();
    params.forEach(p -> listParams.add(((JsonObject) p).getString("name")));
  }

  public static RunPodSimulator start(String apiKey) {
    Vertx vertx = Vertx.vertx();
    try (InputStream in = Objects.requireNonNull(RunPodSimulator.class.getClassLoader()
        .getResourceAsStream("provider-specs/runpod/openapi.json"))) {
      JsonObject spec = new JsonObject(Buffer.buffer(in.readAllBytes()));
      PodSshServer ssh = PodSshServer.start();
      RunPodSimulator[] self = new RunPodSimulator[1];
      HttpServer server = vertx.createHttpServer(new HttpServerOptions().setHost("127.0.0.1").setPort(0))
          .requestHandler(req -> self[0].handle(req));
      server.listen().await(10, TimeUnit.SECONDS);
      self[0] = new RunPodSimulator(vertx, apiKey, server, ssh, spec);
      return self[0];
    } catch (Exception e) {
      vertx.close();
      throw new IllegalStateException("the RunPod simulator did not start", e);
    }
  }

  // -------------------------------------------------------------------------------------------- test API

  /** REST v1, as {@code RUNPOD_API_URL}. */
  public String url() {
    return "http://127.0.0.1:" + server.actualPort() + "/v1";
  }

  public Faults faults() {
    return faults;
  }

  public PodSshServer ssh() {
    return ssh;
  }

  public List<String> violations() {
    return violations;
  }

  public RunPodSimulator startDelayMs(long ms) {
    startDelayMs = ms;
    return this;
  }

  /** The next create allocates its pod but answers 500. */
  public RunPodSimulator failNextCreateAfterAllocating() {
    failNextCreate = true;
    return this;
  }

  /** The pod as the API would show it, or null. */
  public JsonObject pod(String id) {
    JsonObject p = pods.get(id);
    return p == null ? null : view(p);
  }

  /** How many requests of {@code method} reached a path matching the regular expression {@code path} (after auth). */
  public long count(HttpMethod method, String path) {
    Pattern p = Pattern.compile(path);
    String prefix = method + " ";
    return requests.stream().filter(r -> r.startsWith(prefix) && p.matcher(r.substring(prefix.length())).matches())
        .count();
  }

  /** A pod created behind the gateway's back, carrying the given name. */
  public String plant(String name) {
    String id = newId();
    pods.put(id, new JsonObject().put("id", id).put("name", name).put("desiredStatus", "RUNNING")
        .put("imageName", "x").put("env", new JsonObject()).put("costPerHr", 0.5)
        .put("lastStartedAt", Instant.now().toString()));
    readyAt.put(id, 0L);
    return id;
  }

  @Override
  public void close() throws Exception {
    ssh.close();
    vertx.close().await(10, TimeUnit.SECONDS);
  }

  // -------------------------------------------------------------------------------------------- serving

  private static String newId() {
    return UUID.randomUUID().toString().replace("-", "").substring(0, 14);
  }

  private JsonObject view(JsonObject stored) {
    JsonObject p = stored.copy();
    boolean ready = System.currentTimeMillis() >= readyAt.getOrDefault(p.getString("id"), Long.MAX_VALUE);
    p.put("image", p.remove("imageName"));
    if (ready && "RUNNING".equals(p.getString("desiredStatus"))) {
      p.put("publicIp", "127.0.0.1").put("portMappings", new JsonObject().put("22", ssh.port()));
    } else {
      p.put("publicIp", "").putNull("portMappings");
    }
    return p;
  }

  private void violation(HttpServerRequest req, String why) {
    violations.add(req.method() + " " + req.path() + ": " + why);
    json(req.response(), 400, new JsonObject().put("error", why));
  }

  private static void json(HttpServerResponse resp, int status, Object body) {
    resp.setStatusCode(status).putHeader("Content-Type", "application/json").end(String.valueOf(body instanceof
        JsonObject o ? o.encode() : body instanceof JsonArray a ? a.encode() : body));
  }

  private void handle(HttpServerRequest req) {
    req.pause();
    if (!("Bearer " + apiKey).equals(req.getHeader("Authorization"))) {
      req.resume();
      json(req.response(), 401, new JsonObject().put("error", "unauthorized"));
      return;
    }
    Faults.Fault f = faults.take(req);
    if (f != null && f.kind() == Faults.Kind.STATUS) {
      req.resume();
      f.headers().forEach(req.response()::putHeader);
      json(req.response(), f.status(), f.body() == null ? new JsonObject().put("error", "injected") : f.body());
      return;
    }
    if (f != null && f.kind() == Faults.Kind.DROP) {
      req.connection().close();
      return;
    }
    if (f != null && f.kind() == Faults.Kind.LOSE_RESPONSE) {
      req.response().headersEndHandler(v -> req.connection().close());
    }
    if (f != null && f.kind() == Faults.Kind.DELAY) {
      vertx.setTimer(f.delayMs(), t -> serve(req));
      return;
    }
    serve(req);
  }

  private void serve(HttpServerRequest req) {
    req.body().onSuccess(body -> {
      String path = req.path().startsWith("/v1/") ? req.path().substring(3) : null;
      if (path == null) {
        violation(req, "not under /v1");
        return;
      }
      requests.add(req.method() + " " + path);
      try {
        route(req, path, body);
      } catch (RuntimeException e) {
        violation(req, "unhandled: " + e);
      }
    });
    req.resume();
  }

  private void route(HttpServerRequest req, String path, Buffer body) {
    Matcher m = POD.matcher(path);
    if ("/pods".equals(path) && req.method() == HttpMethod.POST) {
      create(req, body);
    } else if ("/pods".equals(path) && req.method() == HttpMethod.GET) {
      for (String name : req.params().names()) {
        if (!listParams.contains(name)) {
          violation(req, "unknown query parameter " + name);
          return;
        }
      }
      String desired = req.getParam("desiredStatus");
      JsonArray out = new JsonArray();
      pods.values().stream().filter(p -> desired == null || desired.equals(p.getString("desiredStatus")))
          .forEach(p -> out.add(view(p)));
      json(req.response(), 200, out);
    } else if (m.matches() && req.method() == HttpMethod.GET) {
      JsonObject p = pods.get(m.group(1));
      json(req.response(), p == null ? 404 : 200, p == null ? new JsonObject().put("error", "pod not found")
          : view(p));
    } else if (m.matches() && req.method() == HttpMethod.DELETE) {
      JsonObject p = pods.remove(m.group(1));
      if (p == null) {
        json(req.response(), 404, new JsonObject().put("error", "pod not found"));
      } else {
        req.response().setStatusCode(204).end();
      }
    } else {
      violation(req, "no such route");
    }
  }

  private void create(HttpServerRequest req, Buffer raw) {
    if (!String.valueOf(req.getHeader("Content-Type")).startsWith("application/json")) {
      violation(req, "not JSON");
      return;
    }
    JsonObject body;
    try {
      body = new JsonObject(raw);
    } catch (RuntimeException e) {
      violation(req, "not a JSON object");
      return;
    }
    String why = check(body);
    if (why != null) {
      violation(req, why);
      return;
    }
    String id = newId();
    JsonObject pod = new JsonObject().put("id", id).put("name", body.getString("name"))
        .put("imageName", body.getString("imageName")).put("desiredStatus", "RUNNING")
        .put("env", body.getJsonObject("env", new JsonObject())).put("costPerHr", 0.69)
        .put("adjustedCostPerHr", 0.69).put("gpu", new JsonObject().put("id", body.getJsonArray("gpuTypeIds")
            .getString(0)).put("count", body.getInteger("gpuCount", 1)))
        .put("lastStartedAt", Instant.now().toString()).put("ports", body.getJsonArray("ports"));
    String key = pod.getJsonObject("env").getString("PUBLIC_KEY");
    if (key != null) {
      ssh.authorize(key);
    }
    pods.put(id, pod);
    readyAt.put(id, System.currentTimeMillis() + startDelayMs);
    if (failNextCreate) {
      failNextCreate = false;
      json(req.response(), 500, new JsonObject().put("error", "internal error"));
      return;
    }
    json(req.response(), 201, view(pod));
  }

  private String check(JsonObject body) {
    for (String field : body.fieldNames()) {
      if (!createFields.contains(field)) {
        return "unknown field " + field;
      }
    }
    if (!(body.getValue("name") instanceof String) || !(body.getValue("imageName") instanceof String)) {
      return "name and imageName must be strings";
    }
    if (body.getValue("computeType") != null && !Set.of("GPU", "CPU").contains(body.getValue("computeType"))) {
      return "computeType must be GPU or CPU";
    }
    if (!(body.getValue("gpuTypeIds") instanceof JsonArray gpus) || gpus.isEmpty()) {
      return "a GPU pod needs gpuTypeIds";
    }
    for (Object g : gpus) {
      if (!gpuTypes.contains(g)) {
        return "unknown GPU type id";
      }
    }
    if (body.getValue("gpuCount") != null && !(body.getValue("gpuCount") instanceof Integer)) {
      return "gpuCount must be an integer";
    }
    if (body.getValue("containerDiskInGb") != null && !(body.getValue("containerDiskInGb") instanceof Integer)) {
      return "containerDiskInGb must be an integer";
    }
    if (body.getValue("ports") != null) {
      if (!(body.getValue("ports") instanceof JsonArray ports)) {
        return "ports must be an array";
      }
      for (Object p : ports) {
        if (!(p instanceof String s) || !PORT.matcher(s).matches()) {
          return "malformed port";
        }
      }
    }
    if (body.getValue("env") != null) {
      if (!(body.getValue("env") instanceof JsonObject env)) {
        return "env must be an object";
      }
      for (Map.Entry<String, Object> e : env) {
        if (!(e.getValue() instanceof String)) {
          return "env values must be strings";
        }
      }
    }
    return null;
  }
}
