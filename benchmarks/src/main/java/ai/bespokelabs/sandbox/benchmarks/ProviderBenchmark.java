package ai.bespokelabs.sandbox.benchmarks;

import ai.bespokelabs.sandbox.adapters.daytona.DaytonaSimulator;
import ai.bespokelabs.sandbox.adapters.e2b.E2bSimulator;
import ai.bespokelabs.sandbox.adapters.tensorlake.TensorlakeSimulator;
import ai.bespokelabs.sandbox.adapters.modal.ModalSimulator;
import ai.bespokelabs.sandbox.adapters.ray.RaySimulator;
import ai.bespokelabs.sandbox.adapters.codecapsules.CodeCapsulesSimulator;
import ai.bespokelabs.sandbox.adapters.runpod.RunPodSimulator;
import ai.bespokelabs.sandbox.adapters.exec.CommandLine;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.WebSocket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

/**
 * The gateway's overhead per operation against each provider simulator: create, and exec of {@code true},
 * through the gateway's API against the same HTTP calls made directly to the simulator by this process,
 * interleaved round by round so both see the same machine. The direct calls are the adapter's own sequence:
 *
 * <ul>
 *   <li>e2b create: {@code POST /sandboxes}; exec: one Connect {@code process.Process/Start} call read to its
 *   end (envd's address comes with the create answer, as in the adapter).
 *   <li>daytona create: {@code POST /sandbox}, then {@code GET /sandbox/{id}} until started (the simulator
 *   starts sandboxes at once here); exec: {@code GET /sandbox/{id}} for the toolbox, create a session, run the
 *   command in it asynchronously, follow its log over a WebSocket to the end, read its exit code (the
 *   session's deletion is off the clock, as it is in the adapter).
 *   <li>tensorlake: see {@link TensorlakeDirect}.
 *   <li>modal (gRPC, {@link ModalDirect}) create: {@code AppGetOrCreate}, {@code ImageGetOrCreate},
 *   {@code SandboxCreate}; exec: the task and its router's token, {@code TaskExecStart}, both output streams to
 *   their end and {@code TaskExecWait}.
 *   <li>ray, codecapsules, runpod (REST, and SSH for runpod's exec): see {@link RayDirect},
 *   {@link CodeCapsulesDirect}, {@link RunPodDirect}.
 * </ul>
 *
 * <p>Each round also times one {@code GET /healthz} and one committed insert on the gateway's database, so the
 * floor (what any call through a gateway that makes its state durable before answering must add) is seen under
 * the same load. Both paths are warmed up first ({@value #WARMUP_ROUNDS} rounds at least), as a serving
 * gateway is. The simulators share the machine's cores with the gateway and its database, so the time each
 * took to answer the requests of an operation (arrival to end of response) is printed for both paths too
 * (for the simulators that count it: not runpod; ray's counts HTTP requests, not its log tail's WebSocket).
 * Destroys are done for both paths but not reported. The simulators validate every request against the
 * provider's spec; the run fails if any request, direct or the gateway's, did not conform. The simulators are
 * test code, so this lives in the test sources; {@code bin/benchmark providers} runs it on the gateway
 * module's test classpath.
 *
 * <p>Usage: {@code bin/benchmark providers [--iterations N] [--providers e2b,daytona,...]}
 */
public final class ProviderBenchmark {
  private static final String DAYTONA_KEY = "dtn_benchmark_key";
  private static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(10)).build();
  private static final Duration TIMEOUT = Duration.ofSeconds(30);
  private static final int WARMUP_ROUNDS = 300;

  private ProviderBenchmark() {}

  /** One provider reached directly: the adapter's calls for each operation. */
  interface Direct {
    String create();

    void exec(String id);

    void destroy(String id);
  }

  public static void main(String[] args) throws Exception {
    int n = 200;
    List<String> only = List.of("e2b", "daytona", "tensorlake", "modal", "ray", "codecapsules", "runpod");
    for (int i = 0; i < args.length; i += 2) {
      if (args[i].equals("--iterations") && i + 1 < args.length) {
        n = Integer.parseInt(args[i + 1]);
      } else if (args[i].equals("--providers") && i + 1 < args.length) {
        only = List.of(args[i + 1].split(","));
      } else {
        throw new IllegalArgumentException("unknown argument " + args[i]);
      }
    }
    int code = 0;
    try (E2bSimulator e2b = E2bSimulator.start();
        DaytonaSimulator daytona = DaytonaSimulator.start(DAYTONA_KEY).startDelayMs(0);
        TensorlakeSimulator tensorlake = TensorlakeSimulator.start(TensorlakeDirect.KEY).startDelayMs(1);
        ModalSimulator modal = ModalSimulator.start();
        ModalDirect modalDirect = new ModalDirect(modal);
        RaySimulator ray = RaySimulator.start(RayDirect.TOKEN);
        CodeCapsulesSimulator codecapsules = CodeCapsulesSimulator.start();
        RunPodSimulator runpod = RunPodSimulator.start(RunPodDirect.KEY).startDelayMs(0);
        RunPodDirect runpodDirect = new RunPodDirect(runpod)) {
      Map<String, String> providers = new HashMap<>(e2b.env());
      providers.putAll(TensorlakeDirect.env(tensorlake));
      providers.putAll(modal.env());
      providers.put("DAYTONA_API_KEY", DAYTONA_KEY);
      providers.put("DAYTONA_API_URL", daytona.url());
      providers.putAll(RayDirect.env(ray));
      providers.putAll(codecapsules.env());
      providers.putAll(RunPodDirect.env(runpod));
      try (BenchGateway gw = BenchGateway.start(providers)) {
        System.out.printf("%nGateway overhead against the provider simulators, %d interleaved rounds each, "
            + "microseconds:%n", n);
        System.out.printf("  %-40s %9s %9s %9s %9s%n", "", "p50", "p99", "added p50", "ratio p50");
        if (only.contains("e2b")) {
          run(gw, "e2b", new E2bDirect(e2b), e2b::answeringNanos, n);
        }
        if (only.contains("daytona")) {
          run(gw, "daytona", new DaytonaDirect(daytona), daytona::answeringNanos, n);
        }
        if (only.contains("tensorlake")) {
          run(gw, "tensorlake", new TensorlakeDirect(tensorlake), tensorlake::answeringNanos, n);
        }
        if (only.contains("modal")) {
          run(gw, "modal", modalDirect, modal::answeringNanos, n);
        }
        if (only.contains("ray")) {
          run(gw, "ray", new RayDirect(ray), ray::answeringNanos, n);
        }
        if (only.contains("codecapsules")) {
          run(gw, "codecapsules", new CodeCapsulesDirect(codecapsules), codecapsules::answeringNanos, n);
        }
        if (only.contains("runpod")) {
          run(gw, "runpod", runpodDirect, null, n);
        }
      }
      List<String> violations = new java.util.ArrayList<>(e2b.violations());
      violations.addAll(daytona.violations());
      violations.addAll(tensorlake.violations());
      violations.addAll(modal.violations());
      violations.addAll(ray.violations());
      violations.addAll(codecapsules.violations());
      violations.addAll(runpod.violations());
      if (!violations.isEmpty()) {
        System.err.println("requests the providers' specs do not allow:");
        violations.forEach(v -> System.err.println("  " + v));
        code = 1;
      }
    }
    System.exit(code);
  }

  /** @param counted the simulator's nanoseconds spent answering requests so far; null when it does not count */
  private static void run(BenchGateway gw, String backend, Direct direct, java.util.function.LongSupplier counted,
      int n) {
    java.util.function.LongSupplier sim = counted == null ? () -> 0 : counted;
    // a gateway serves many requests: warm both paths up (JIT) before measuring
    for (int i = 0; i < Math.max(WARMUP_ROUNDS, n / 10); i++) {
      round(direct, sim, new long[4]);
      viaGateway(gw, backend, sim, new long[4]);
    }
    long[][] d = new long[4][n];
    long[][] g = new long[4][n];
    long[] one = new long[4];
    long[] hop = new long[n];
    long[] commits = new long[n];
    for (int i = 0; i < n; i++) { // interleaved, alternating which goes first
      long h0 = System.nanoTime();
      gw.call("GET", "/healthz", null, 200);
      hop[i] = (System.nanoTime() - h0) / 1000;
      try {
        commits[i] = gw.commitOnce();
      } catch (Exception e) {
        throw new IllegalStateException(e);
      }
      if (i % 2 == 0) {
        round(direct, sim, one);
        copy(one, d, i);
        viaGateway(gw, backend, sim, one);
        copy(one, g, i);
      } else {
        viaGateway(gw, backend, sim, one);
        copy(one, g, i);
        round(direct, sim, one);
        copy(one, d, i);
      }
    }
    Arrays.sort(hop);
    System.out.printf("  %-40s %9d %9d%n", "one HTTP round trip (GET /healthz)", hop[n / 2], p99(hop));
    Arrays.sort(commits);
    System.out.printf("  %-40s %9d %9d%n", "one committed write", commits[n / 2], p99(commits));
    // each call adds at least its own request, and one state change made durable before it is answered
    // (create: the sandbox running, its claim overlapping the provider's call; exec: the stored result)
    System.out.printf("  %-40s %9d            (round trip + committed write, at their p50)%n",
        "floor of what a call adds", hop[n / 2] + commits[n / 2]);
    String[] ops = {"create", "exec"};
    for (int op = 0; op < 2; op++) {
      Arrays.sort(d[op]);
      Arrays.sort(g[op]);
      long d50 = d[op][n / 2];
      long g50 = g[op][n / 2];
      System.out.printf("  %-40s %9d %9d%n", backend + " " + ops[op] + " direct", d50, p99(d[op]));
      System.out.printf("  %-40s %9d %9d %9d %9.2f%n", backend + " " + ops[op] + " through the gateway", g50,
          p99(g[op]), g50 - d50, (double) g50 / d50);
    }
    // the simulator shares this machine's cores with the gateway and its database: how long it took to answer
    // the same requests on each path shows how much of the difference is the simulator slowed down
    if (counted == null) {
      return;
    }
    System.out.printf("  %-40s %9s %9s %9s%n", "simulator answering, p50", "direct", "gateway", "added");
    for (int op = 0; op < 2; op++) {
      Arrays.sort(d[2 + op]);
      Arrays.sort(g[2 + op]);
      System.out.printf("  %-40s %9d %9d %9d%n", "  " + backend + " " + ops[op], d[2 + op][n / 2],
          g[2 + op][n / 2], g[2 + op][n / 2] - d[2 + op][n / 2]);
    }
  }

  private static void copy(long[] one, long[][] into, int i) {
    for (int k = 0; k < one.length; k++) {
      into[k][i] = one[k];
    }
  }

  /**
   * Create and exec directly, timing each (and the simulator's answering time during each, in {@code times[2]}
   * and {@code [3]}); destroy off the clock.
   */
  private static void round(Direct direct, java.util.function.LongSupplier sim, long[] times) {
    long s0 = sim.getAsLong();
    long t0 = System.nanoTime();
    String id = direct.create();
    long t1 = System.nanoTime();
    long s1 = sim.getAsLong();
    direct.exec(id);
    long t2 = System.nanoTime();
    long s2 = sim.getAsLong();
    direct.destroy(id);
    times[0] = (t1 - t0) / 1000;
    times[1] = (t2 - t1) / 1000;
    times[2] = (s1 - s0) / 1000;
    times[3] = (s2 - s1) / 1000;
  }

  /** The same through the gateway's API. */
  private static void viaGateway(BenchGateway gw, String backend, java.util.function.LongSupplier sim,
      long[] times) {
    long s0 = sim.getAsLong();
    long t0 = System.nanoTime();
    String id = gw.call("POST", "/v1/sandboxes", new JsonObject().put("backend", backend), 201).getString("id");
    long t1 = System.nanoTime();
    long s1 = sim.getAsLong();
    JsonObject r = gw.call("POST", "/v1/sandboxes/" + id + "/execute", new JsonObject().put("command", "true"), 200);
    long t2 = System.nanoTime();
    long s2 = sim.getAsLong();
    if (r.getInteger("exit_code") != 0) {
      throw new IllegalStateException(backend + ": true exited " + r.getInteger("exit_code"));
    }
    gw.call("DELETE", "/v1/sandboxes/" + id, null, 200);
    times[0] = (t1 - t0) / 1000;
    times[1] = (t2 - t1) / 1000;
    times[2] = (s1 - s0) / 1000;
    times[3] = (s2 - s1) / 1000;
  }

  private static long p99(long[] sorted) {
    return sorted[(int) Math.ceil(sorted.length * 0.99) - 1];
  }

  // ------------------------------------------------------------------------------------------------ e2b

  private static final class E2bDirect implements Direct {
    private final E2bSimulator sim;
    private final Map<String, String> accessTokens = new HashMap<>();

    E2bDirect(E2bSimulator sim) {
      this.sim = sim;
    }

    @Override
    public String create() {
      JsonObject body = new JsonObject().put("templateID", "base").put("timeout", 300).put("secure", true)
          .put("metadata", new JsonObject().put("bespoke_scope", "bench-direct")
              .put("bespoke_sandbox_id", "sbx_" + UUID.randomUUID().toString().replace("-", ""))
              .put("bespoke_organization_id", "org_bench").put("bespoke_create_token", UUID.randomUUID().toString()));
      HttpResponse<String> r = send(HttpRequest.newBuilder(URI.create(sim.apiUrl() + "/sandboxes"))
          .header("X-API-Key", E2bSimulator.API_KEY).header("Accept", "application/json")
          .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body.encode())));
      expect(r, 2, "e2b create");
      JsonObject created = new JsonObject(r.body());
      String id = created.getString("sandboxID");
      accessTokens.put(id, created.getString("envdAccessToken"));
      return id;
    }

    @Override
    public void exec(String id) {
      List<String> argv = CommandLine.of(null, null, "true", null);
      byte[] json = new JsonObject().put("process", new JsonObject().put("cmd", argv.get(0))
          .put("args", new JsonArray(argv.subList(1, argv.size())))).put("stdin", false).toBuffer().getBytes();
      ByteBuffer envelope = ByteBuffer.allocate(5 + json.length).put((byte) 0).putInt(json.length).put(json);
      HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(sim.sandboxUrl() + "/process.Process/Start"))
          .header("E2b-Sandbox-Id", id).header("E2b-Sandbox-Port", "49983")
          .header("Content-Type", "application/connect+json").header("Connect-Protocol-Version", "1")
          .header("Connect-Timeout-Ms", "60000")
          .POST(HttpRequest.BodyPublishers.ofByteArray(envelope.array()));
      String token = accessTokens.get(id);
      if (token != null) {
        b.header("X-Access-Token", token);
      }
      HttpResponse<String> r = send(b);
      expect(r, 200, "e2b exec");
      if (!r.body().contains("\"end\"")) {
        throw new IllegalStateException("e2b exec: the stream ended without an end event");
      }
    }

    @Override
    public void destroy(String id) {
      accessTokens.remove(id);
      expect(send(HttpRequest.newBuilder(URI.create(sim.apiUrl() + "/sandboxes/" + id))
          .header("X-API-Key", E2bSimulator.API_KEY).DELETE()), 204, "e2b destroy");
    }
  }

  // -------------------------------------------------------------------------------------------- daytona

  private static final class DaytonaDirect implements Direct {
    private final DaytonaSimulator sim;

    DaytonaDirect(DaytonaSimulator sim) {
      this.sim = sim;
    }

    private HttpRequest.Builder request(String url) {
      return HttpRequest.newBuilder(URI.create(url)).header("Authorization", "Bearer " + DAYTONA_KEY)
          .header("X-Daytona-Source", "sandbox-gateway");
    }

    private static HttpRequest.BodyPublisher json(JsonObject body) {
      return HttpRequest.BodyPublishers.ofString(body.encode());
    }

    @Override
    public String create() {
      JsonObject labels = new JsonObject().put("bespokelabs.ai/managed", "bench-direct")
          .put("bespokelabs.ai/sandbox-id", "sbx_" + UUID.randomUUID().toString().replace("-", ""))
          .put("bespokelabs.ai/organization-id", "org_bench")
          .put("bespokelabs.ai/create-token", UUID.randomUUID().toString());
      HttpResponse<String> r = send(request(sim.url() + "/sandbox").header("Content-Type", "application/json")
          .POST(json(new JsonObject().put("labels", labels))));
      expect(r, 2, "daytona create");
      String id = new JsonObject(r.body()).getString("id");
      while (!"started".equals(sandbox(id).getString("state"))) {
        sleep(100);
      }
      return id;
    }

    private JsonObject sandbox(String id) {
      HttpResponse<String> r = send(request(sim.url() + "/sandbox/" + id).GET());
      expect(r, 200, "daytona get");
      return new JsonObject(r.body());
    }

    @Override
    public void exec(String id) {
      String toolbox = sandbox(id).getString("toolboxProxyUrl") + "/" + id;
      String session = "bench-" + UUID.randomUUID();
      expect(send(request(toolbox + "/process/session").header("Content-Type", "application/json")
          .POST(json(new JsonObject().put("sessionId", session)))), 201, "daytona session");
      try {
        String command = CommandLine.of(null, null, "true", null).stream()
            .map(a -> "'" + a.replace("'", "'\\''") + "'").collect(Collectors.joining(" "));
        HttpResponse<String> r = send(request(toolbox + "/process/session/" + session + "/exec")
            .header("Content-Type", "application/json").POST(json(new JsonObject().put("command", command)
                .put("runAsync", true).put("suppressInputEcho", true))));
        expect(r, 2, "daytona exec");
        String cmd = toolbox + "/process/session/" + session + "/command/" + new JsonObject(r.body()).getString("cmdId");
        follow(cmd + "/logs?follow=true");
        Object exit = new JsonObject(expect(send(request(cmd).GET()), 200, "daytona command").body()).getValue("exitCode");
        if (!(exit instanceof Number code) || code.intValue() != 0) {
          throw new IllegalStateException("daytona exec: true exited " + exit);
        }
      } finally {
        send(request(toolbox + "/process/session/" + URLEncoder.encode(session, StandardCharsets.UTF_8)).DELETE());
      }
    }

    /** Reads the log WebSocket until the daemon closes it at the command's end. */
    private void follow(String httpUrl) {
      CompletableFuture<Integer> closed = new CompletableFuture<>();
      WebSocket ws = HTTP.newWebSocketBuilder().header("Authorization", "Bearer " + DAYTONA_KEY)
          .header("X-Daytona-Source", "sandbox-gateway").connectTimeout(TIMEOUT)
          .buildAsync(URI.create(httpUrl.replaceFirst("^http", "ws")), new WebSocket.Listener() {
            @Override
            public CompletionStage<?> onClose(WebSocket webSocket, int statusCode, String reason) {
              closed.complete(statusCode);
              return null;
            }

            @Override
            public void onError(WebSocket webSocket, Throwable error) {
              closed.completeExceptionally(error);
            }
          }).orTimeout(TIMEOUT.toSeconds(), TimeUnit.SECONDS).join();
      try {
        int status = closed.orTimeout(TIMEOUT.toSeconds(), TimeUnit.SECONDS).join();
        if (status != 1000) {
          throw new IllegalStateException("daytona log stream closed with " + status);
        }
      } finally {
        ws.abort();
      }
    }

    @Override
    public void destroy(String id) {
      expect(send(request(sim.url() + "/sandbox/" + id).DELETE()), 200, "daytona destroy");
    }
  }

  // ------------------------------------------------------------------------------------------------ http

  static HttpResponse<String> send(HttpRequest.Builder b) {
    try {
      return HTTP.send(b.timeout(TIMEOUT).build(), HttpResponse.BodyHandlers.ofString());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  /** {@code r}, if its status is {@code status} (a single digit: any status of that class); else fails. */
  static HttpResponse<String> expect(HttpResponse<String> r, int status, String what) {
    if (status < 10 ? r.statusCode() / 100 != status : r.statusCode() != status) {
      throw new IllegalStateException(what + " answered " + r.statusCode() + ": " + r.body());
    }
    return r;
  }

  static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }
}
