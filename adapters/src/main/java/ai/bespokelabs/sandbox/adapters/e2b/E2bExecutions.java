package ai.bespokelabs.sandbox.adapters.e2b;

import ai.bespokelabs.sandbox.adapters.exec.CommandLine;
import ai.bespokelabs.sandbox.adapters.spi.Execution;
import ai.bespokelabs.sandbox.adapters.spi.Executions;
import ai.bespokelabs.sandbox.adapters.spi.OutputSink;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecSandbox;
import io.vertx.core.Future;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Set;

/** Programs in an E2B sandbox, started through envd's {@code process.Process/Start} ({@link E2bExecution}). */
final class E2bExecutions implements Executions {
  private final E2bClient client;
  private final Set<E2bExecution> running = new HashSet<>();

  E2bExecutions(E2bClient client) {
    this.client = client;
  }

  /** Starts the program; completes once envd reported its pid. */
  @Override
  public Future<Execution> start(ExecSandbox request, OutputSink sink) {
    return client.envd(request.providerResourceId(), "execute").compose(envd -> {
      JsonObject start = startRequest(request);
      E2bExecution execution = new E2bExecution(client, envd, request, sink);
      running.add(execution);
      execution.onDone(() -> running.remove(execution));
      return execution.start(start);
    });
  }

  private static JsonObject startRequest(ExecSandbox request) {
    List<String> argv = CommandLine.of(request.code(), request.language(), request.command(), request.args());
    JsonObject process = new JsonObject().put("cmd", argv.get(0))
        .put("args", new JsonArray(argv.subList(1, argv.size())));
    if (!request.env().isEmpty()) {
      process.put("envs", new JsonObject(new LinkedHashMap<>(request.env())));
    }
    if (request.cwd() != null && !request.cwd().isBlank()) {
      process.put("cwd", request.cwd());
    }
    return new JsonObject().put("process", process).put("stdin", request.keepStdin());
  }

  /** Abandons running executions: their sinks get no result. */
  void abandonAll() {
    new ArrayList<>(running).forEach(E2bExecution::abandon);
  }
}
