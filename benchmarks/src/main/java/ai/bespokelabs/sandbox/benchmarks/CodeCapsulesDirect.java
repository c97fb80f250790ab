package ai.bespokelabs.sandbox.benchmarks;

import static ai.bespokelabs.sandbox.benchmarks.ProviderBenchmark.expect;
import static ai.bespokelabs.sandbox.benchmarks.ProviderBenchmark.send;

import ai.bespokelabs.sandbox.adapters.codecapsules.CodeCapsulesSimulator;
import ai.bespokelabs.sandbox.adapters.exec.CommandLine;
import io.vertx.core.json.JsonObject;
import java.net.URI;
import java.net.http.HttpRequest;
import java.util.UUID;
import java.util.stream.Collectors;

/**
 * The CodeCapsules adapter's calls made directly to the simulator: create is {@code POST /sandboxes} (with the
 * adapter's flavor, ttl and marks; it answers once running, else {@code GET /sandboxes/{id}} until it runs);
 * exec of {@code true} is {@code POST /sandboxes/{id}/exec/stream}, its NDJSON read to the exit frame; destroy
 * is {@code DELETE /sandboxes/{id}}.
 */
final class CodeCapsulesDirect implements ProviderBenchmark.Direct {
  private final CodeCapsulesSimulator sim;

  CodeCapsulesDirect(CodeCapsulesSimulator sim) {
    this.sim = sim;
  }

  private HttpRequest.Builder request(String path) {
    return HttpRequest.newBuilder(URI.create(sim.apiUrl() + path))
        .header("Authorization", "Bearer " + CodeCapsulesSimulator.API_KEY);
  }

  private static HttpRequest.BodyPublisher json(JsonObject body) {
    return HttpRequest.BodyPublishers.ofString(body.encode());
  }

  @Override
  public String create() {
    JsonObject body = new JsonObject().put("flavor", "python-3.12").put("ttl", 60).put("metadata", new JsonObject()
        .put("bespoke_sandbox_id", "sbx_" + UUID.randomUUID().toString().replace("-", ""))
        .put("bespoke_organization_id", "org_bench").put("bespoke_create_token", UUID.randomUUID().toString()));
    JsonObject sandbox = new JsonObject(expect(send(request("/sandboxes").header("Content-Type", "application/json")
        .POST(json(body))), 2, "codecapsules create").body());
    String id = sandbox.getString("id");
    while (!"running".equals(sandbox.getString("status"))) {
      ProviderBenchmark.sleep(250); // as the adapter polls
      sandbox = new JsonObject(expect(send(request("/sandboxes/" + id).GET()), 200, "codecapsules get").body());
    }
    return id;
  }

  @Override
  public void exec(String id) {
    String command = CommandLine.of(null, null, "true", null).stream()
        .map(a -> "'" + a.replace("'", "'\\''") + "'").collect(Collectors.joining(" "));
    String out = expect(send(request("/sandboxes/" + id + "/exec/stream").header("Content-Type", "application/json")
        .header("Accept", "application/x-ndjson").POST(json(new JsonObject().put("command", command)
            .put("timeout", 300)))), 200, "codecapsules exec").body().strip();
    JsonObject end = new JsonObject(out.substring(out.lastIndexOf('\n') + 1));
    if (!"exit".equals(end.getString("type")) || end.getInteger("exitCode", -1) != 0) {
      throw new IllegalStateException("codecapsules exec: true ended with " + end);
    }
  }

  @Override
  public void destroy(String id) {
    expect(send(request("/sandboxes/" + id).DELETE()), 2, "codecapsules destroy");
  }
}
