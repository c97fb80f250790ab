package ai.bespokelabs.sandbox.benchmarks;

import static ai.bespokelabs.sandbox.benchmarks.ProviderBenchmark.expect;
import static ai.bespokelabs.sandbox.benchmarks.ProviderBenchmark.send;

import ai.bespokelabs.sandbox.adapters.exec.CommandLine;
import ai.bespokelabs.sandbox.adapters.ray.RaySimulator;
import io.vertx.core.json.JsonObject;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.WebSocket;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

/**
 * The Ray adapter's calls made directly to the simulator (a Ray dashboard): create submits the sandbox's
 * anchor job ({@code POST /api/jobs/}, entrypoint {@code true}, the sandbox's marks in its metadata); exec of
 * {@code true} is one job, {@code POST /api/jobs/} with the adapter's entrypoint (into the sandbox's working
 * area), its log tail WebSocket read until Ray closes it, then {@code GET /api/jobs/{id}} for its status;
 * destroy lists the jobs ({@code GET /api/jobs/}) and deletes the sandbox's, the anchor among them.
 */
final class RayDirect implements ProviderBenchmark.Direct {
  static final String TOKEN = "ray_benchmark_token";
  private static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

  private final RaySimulator sim;
  private final Map<String, List<String>> jobs = new HashMap<>();

  RayDirect(RaySimulator sim) {
    this.sim = sim;
  }

  /** The gateway's settings for the simulator. */
  static Map<String, String> env(RaySimulator sim) {
    return Map.of("RAY_ADDRESS", sim.url(), "RAY_JOB_TOKEN", TOKEN);
  }

  private HttpRequest.Builder request(String path) {
    return HttpRequest.newBuilder(URI.create(sim.url() + path)).header("Authorization", "Bearer " + TOKEN);
  }

  @Override
  public String create() {
    String id = "sbx_" + UUID.randomUUID().toString().replace("-", "");
    String anchor = "bsk-sandbox-" + id;
    JsonObject body = new JsonObject().put("entrypoint", "true").put("submission_id", anchor)
        .put("runtime_env", new JsonObject().put("env_vars", new JsonObject()))
        .put("metadata", new JsonObject().put("bespokelabs.ai/managed", "true").put("bespokelabs.ai/sandbox-id", id)
            .put("bespokelabs.ai/role", "sandbox").put("bespokelabs.ai/organization-id", "org_bench"));
    expect(send(request("/api/jobs/").header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(body.encode()))), 2, "ray anchor");
    jobs.put(id, new ArrayList<>(List.of(anchor)));
    return id;
  }

  @Override
  public void exec(String id) {
    String job = "bsk-" + id + "-exe_" + UUID.randomUUID().toString().replace("-", "");
    String area = "\"${TMPDIR:-/tmp}\"/bespoke-ray/" + id;
    String line = "mkdir -p " + area + " && cd " + area + " && " + CommandLine.of(null, null, "true", null).stream()
        .map(a -> a.matches("[A-Za-z0-9_@%+=:,./-]+") ? a : "'" + a.replace("'", "'\\''") + "'")
        .collect(Collectors.joining(" "));
    JsonObject body = new JsonObject().put("entrypoint", line).put("submission_id", job)
        .put("runtime_env", new JsonObject().put("env_vars", new JsonObject()))
        .put("metadata", new JsonObject().put("bespokelabs.ai/managed", "true").put("bespokelabs.ai/sandbox-id", id)
            .put("bespokelabs.ai/execution-id", job).put("bespokelabs.ai/organization-id", "org_bench"));
    expect(send(request("/api/jobs/").header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(body.encode()))), 2, "ray submit");
    jobs.get(id).add(job);
    tail(job);
    String status = new JsonObject(expect(send(request("/api/jobs/" + job).GET()), 200, "ray job").body())
        .getString("status");
    while (!"SUCCEEDED".equals(status)) { // the status may lag behind the log's end: polled as the adapter does
      if ("FAILED".equals(status) || "STOPPED".equals(status)) {
        throw new IllegalStateException("ray exec: true ended " + status);
      }
      ProviderBenchmark.sleep(100);
      status = new JsonObject(expect(send(request("/api/jobs/" + job).GET()), 200, "ray job").body())
          .getString("status");
    }
  }

  /** Reads the job's log tail until the dashboard closes it at the job's end. */
  private void tail(String job) {
    CompletableFuture<Integer> closed = new CompletableFuture<>();
    WebSocket ws = HTTP.newWebSocketBuilder().header("Authorization", "Bearer " + TOKEN)
        .buildAsync(URI.create(sim.url().replaceFirst("^http", "ws") + "/api/jobs/" + job + "/logs/tail"),
            new WebSocket.Listener() {
              @Override
              public CompletionStage<?> onClose(WebSocket webSocket, int statusCode, String reason) {
                closed.complete(statusCode);
                return null;
              }

              @Override
              public void onError(WebSocket webSocket, Throwable error) {
                closed.completeExceptionally(error);
              }
            }).orTimeout(30, TimeUnit.SECONDS).join();
    try {
      int status = closed.orTimeout(30, TimeUnit.SECONDS).join();
      if (status != 1000) {
        throw new IllegalStateException("ray log tail closed with " + status);
      }
    } finally {
      ws.abort();
    }
  }

  @Override
  public void destroy(String id) {
    expect(send(request("/api/jobs/").GET()), 200, "ray list");
    for (String job : jobs.remove(id)) {
      HttpResponse<String> deleted = send(request("/api/jobs/" + job).DELETE());
      for (int i = 0; deleted.statusCode() == 500 && i < 50; i++) { // an anchor still running: as the adapter waits
        ProviderBenchmark.sleep(100);
        deleted = send(request("/api/jobs/" + job).DELETE());
      }
      expect(deleted, 200, "ray delete");
    }
  }
}
