package ai.bespokelabs.sandbox.adapters.daytona;

import ai.bespokelabs.sandbox.adapters.exec.CommandLine;
import ai.bespokelabs.sandbox.adapters.spi.Execution;
import ai.bespokelabs.sandbox.adapters.spi.Executions;
import ai.bespokelabs.sandbox.adapters.spi.OutputSink;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecSandbox;
import io.vertx.core.Future;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.UUID;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Executions: one toolbox session per execution ({@link SessionCommand}, {@link DaytonaExecution}). */
final class DaytonaExecutions implements Executions {
  private static final Logger LOG = LoggerFactory.getLogger(DaytonaExecutions.class);

  private final DaytonaClient client;
  private final DaytonaSandboxes sandboxes;

  DaytonaExecutions(DaytonaClient client, DaytonaSandboxes sandboxes) {
    this.client = client;
    this.sandboxes = sandboxes;
  }

  /**
   * Runs the request as an asynchronous command of a new toolbox session and follows its log. Failures
   * before the command runs fail the start (the session is removed); afterwards everything reaches the sink.
   */
  @Override
  public Future<Execution> start(ExecSandbox request, OutputSink sink) {
    List<String> argv;
    try {
      argv = CommandLine.of(request.code(), request.language(), request.command(), request.args());
    } catch (RuntimeException e) {
      return Future.failedFuture(e);
    }
    String tag = tag(request.executionId());
    String sessionId = "bsk-" + tag;
    return sandboxes.toolbox(request.providerResourceId(), "execute").compose(toolbox -> {
      long t0 = System.nanoTime();
      Runnable removeSession = () -> deleteSession(toolbox, sessionId);
      return client.expect("execute", true, HttpMethod.POST, toolbox + "/process/session",
          new JsonObject().put("sessionId", sessionId)).compose(created -> {
            JsonObject exec = new JsonObject().put("command", SessionCommand.of(argv, request.cwd(), request.env(),
                tag, request.keepStdin())).put("runAsync", true).put("suppressInputEcho", true);
            return client.expect("execute", true, HttpMethod.POST,
                toolbox + "/process/session/" + sessionId + "/exec", exec).<Execution>map(r -> {
                  String commandId = client.json("execute", r, true).getString("cmdId");
                  if (commandId == null) {
                    throw client.badResponse("execute", true);
                  }
                  DaytonaExecution execution = new DaytonaExecution(client, toolbox, sessionId, commandId, tag,
                      request.keepStdin(), sink, t0, removeSession);
                  execution.follow(request.timeoutSecs());
                  return execution;
                }).onFailure(t -> removeSession.run());
          });
    });
  }

  private void deleteSession(String toolbox, String sessionId) {
    client.send(HttpMethod.DELETE, toolbox + "/process/session/" + sessionId, null, null, client.requestTimeoutMs())
        .onComplete(ar -> {
          if (ar.failed() || !ar.result().ok() && ar.result().status() != 404) {
            LOG.debug("Daytona session {} was not deleted", sessionId);
          }
        });
  }

  /** A shell-safe tag for an execution id (ours are already safe; anything else is replaced). */
  static String tag(String executionId) {
    if (executionId != null && executionId.matches("[A-Za-z0-9_-]{1,100}")) {
      return executionId;
    }
    return UUID.nameUUIDFromBytes(String.valueOf(executionId).getBytes(StandardCharsets.UTF_8)).toString();
  }
}
