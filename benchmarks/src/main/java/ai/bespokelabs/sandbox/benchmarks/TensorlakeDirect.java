package ai.bespokelabs.sandbox.benchmarks;

import ai.bespokelabs.sandbox.adapters.tensorlake.TensorlakeSimulator;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;

/**
 * The Tensorlake adapter's calls made directly to the simulator: create is {@code POST /sandboxes}, then
 * {@code GET /sandboxes/{id}} until running, then the env file written through the daemon; exec of
 * {@code true} is {@code POST /api/v1/processes}, its SSE output followed to the end, then the process and its
 * kept stdout and stderr read (as the adapter ends every execution).
 */
final class TensorlakeDirect implements ProviderBenchmark.Direct {
  static final String KEY = "tl_benchmark_key";
  private static final Duration TIMEOUT = Duration.ofSeconds(30);
  private static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(10)).build();

  private final TensorlakeSimulator sim;

  TensorlakeDirect(TensorlakeSimulator sim) {
    this.sim = sim;
  }

  /** The gateway's settings for the simulator. */
  static Map<String, String> env(TensorlakeSimulator sim) {
    return Map.of("TENSORLAKE_API_KEY", KEY, "TENSORLAKE_API_URL", sim.url(), "TENSORLAKE_SANDBOX_URL",
        sim.daemonUrl());
  }

  private HttpRequest.Builder request(String url, String sandboxId) {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(url)).timeout(TIMEOUT)
        .header("Authorization", "Bearer " + KEY);
    return sandboxId == null ? b : b.header("X-Tensorlake-Sandbox-Id", sandboxId);
  }

  private static HttpResponse<String> send(HttpRequest.Builder b, String what) {
    try {
      HttpResponse<String> r = HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
      if (r.statusCode() / 100 != 2) {
        throw new IllegalStateException(what + " answered " + r.statusCode());
      }
      return r;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  private static HttpRequest.BodyPublisher json(JsonObject body) {
    return HttpRequest.BodyPublishers.ofString(body.encode());
  }

  @Override
  public String create() {
    String name = "bsk.sbx_" + UUID.randomUUID().toString().replace("-", "") + ".org_bench.ctk_"
        + UUID.randomUUID().toString().replace("-", "");
    JsonObject body = new JsonObject().put("name", name)
        .put("resources", new JsonObject().put("cpus", 1.0).put("memory_mb", 1024));
    String id = new JsonObject(send(request(sim.url() + "/sandboxes", null).header("Content-Type", "application/json")
        .POST(json(body)), "tensorlake create").body()).getString("sandbox_id");
    while (!"running".equals(new JsonObject(send(request(sim.url() + "/sandboxes/" + id, null).GET(),
        "tensorlake get").body()).getString("status"))) {
      Thread.onSpinWait();
    }
    send(request(sim.daemonUrl() + "/api/v1/files?path=%2Ftmp%2F.bespoke-sandbox-env.json", id)
        .header("Content-Type", "application/octet-stream").PUT(HttpRequest.BodyPublishers.ofString("{}")),
        "tensorlake env");
    return id;
  }

  @Override
  public void exec(String id) {
    JsonObject body = new JsonObject().put("command", "/bin/sh").put("args", new JsonArray().add("-c").add("true"))
        .put("env", new JsonObject());
    long pid = new JsonObject(send(request(sim.daemonUrl() + "/api/v1/processes", id)
        .header("Content-Type", "application/json").POST(json(body)), "tensorlake exec").body()).getLong("pid");
    String process = sim.daemonUrl() + "/api/v1/processes/" + pid;
    send(request(process + "/output/follow", id).header("Accept", "text/event-stream").GET(), "tensorlake follow");
    JsonObject info = new JsonObject(send(request(process, id).GET(), "tensorlake process").body());
    send(request(process + "/stdout", id).GET(), "tensorlake stdout");
    send(request(process + "/stderr", id).GET(), "tensorlake stderr");
    if (info.getInteger("exit_code", -1) != 0) {
      throw new IllegalStateException("tensorlake exec: true exited " + info);
    }
  }

  @Override
  public void destroy(String id) {
    send(request(sim.url() + "/sandboxes/" + id, null).DELETE(), "tensorlake destroy");
  }
}
