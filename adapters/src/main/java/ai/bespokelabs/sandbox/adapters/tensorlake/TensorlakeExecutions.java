package ai.bespokelabs.sandbox.adapters.tensorlake;

import ai.bespokelabs.sandbox.adapters.exec.CommandLine;
import ai.bespokelabs.sandbox.adapters.spi.Execution;
import ai.bespokelabs.sandbox.adapters.spi.Executions;
import ai.bespokelabs.sandbox.adapters.spi.OutputSink;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecSandbox;
import io.vertx.core.Future;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Executions: each is a background process of the in-sandbox daemon ({@code POST /api/v1/processes}, with
 * {@code stdin_mode: pipe} when stdin stays open), its output followed over SSE ({@link TensorlakeExecution}).
 * The process gets the sandbox's env vars ({@link TensorlakeEnv}) overlaid with the execution's.
 */
final class TensorlakeExecutions implements Executions {
  private final TensorlakeClient client;
  private final TensorlakeSandboxes sandboxes;
  private final TensorlakeEnv env;

  TensorlakeExecutions(TensorlakeClient client, TensorlakeSandboxes sandboxes, TensorlakeEnv env) {
    this.client = client;
    this.sandboxes = sandboxes;
    this.env = env;
  }

  @Override
  public Future<Execution> start(ExecSandbox request, OutputSink sink) {
    List<String> argv;
    try {
      argv = CommandLine.of(request.code(), request.language(), request.command(), request.args());
    } catch (RuntimeException e) {
      return Future.failedFuture(e);
    }
    return sandboxes.daemon(request.providerResourceId(), "execute").compose(d -> env.read(d, "execute")
        .compose(base -> {
          Map<String, String> vars = new HashMap<>(base);
          vars.putAll(request.env());
          JsonObject body = new JsonObject().put("command", argv.get(0))
              .put("args", new JsonArray(argv.subList(1, argv.size())))
              .put("env", new JsonObject(new HashMap<>(vars)));
          if (request.cwd() != null && !request.cwd().isBlank()) {
            body.put("working_dir", request.cwd());
          }
          if (request.keepStdin()) {
            body.put("stdin_mode", "pipe");
          }
          long t0 = System.nanoTime();
          return client.expect("execute", true, HttpMethod.POST, d.base() + "/api/v1/processes", d, body)
              .map(r -> {
                Object pid = client.json("execute", r, true).getValue("pid");
                if (!(pid instanceof Number n)) {
                  throw client.badResponse("execute", true);
                }
                TensorlakeExecution execution = new TensorlakeExecution(client, d, n.longValue(), sink, t0,
                    request.keepStdin());
                execution.follow(request.timeoutSecs());
                return execution;
              });
        }));
  }
}
