package ai.bespokelabs.sandbox.adapters.codecapsules;

import ai.bespokelabs.sandbox.adapters.exec.CommandLine;
import ai.bespokelabs.sandbox.adapters.spi.Execution;
import ai.bespokelabs.sandbox.adapters.spi.Executions;
import ai.bespokelabs.sandbox.adapters.spi.OutputSink;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecSandbox;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError.Outcome;
import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * Programs in a CodeCapsules sandbox. CodeCapsules runs a shell string, so the program's argv is quoted into
 * one (a cwd becomes a leading {@code cd}), its env the sandbox's ({@link CodeCapsulesEnv}) with its own on
 * top; its timeout is capped at CodeCapsules' maximum. A program without
 * stdin streams its output ({@link StreamedExecution}); one with stdin is run once its stdin ended, since
 * CodeCapsules takes stdin whole with the command ({@link StdinExecution}).
 */
final class CodeCapsulesExecutions implements Executions {
  private final CodeCapsulesClient client;
  private final CodeCapsulesEnv envs;
  private final Set<Runnable> running = new HashSet<>();

  CodeCapsulesExecutions(CodeCapsulesClient client, CodeCapsulesEnv envs) {
    this.client = client;
    this.envs = envs;
  }

  @Override
  public Future<Execution> start(ExecSandbox request, OutputSink sink) {
    String id = request.providerResourceId();
    if (id == null || id.isBlank()) {
      return Future.failedFuture(CodeCapsulesClient.of(ErrorCode.NOT_FOUND, "execute", false, Outcome.FAILED));
    }
    String command;
    try {
      command = command(request);
    } catch (ApiException e) {
      return Future.failedFuture(e);
    }
    int timeout = request.timeoutSecs() <= 0 ? CodeCapsulesWire.MAX_EXEC_TIMEOUT_SECS
        : Math.min(request.timeoutSecs(), CodeCapsulesWire.MAX_EXEC_TIMEOUT_SECS);
    return envs.with(id, request.env(), "execute").compose(env -> {
      JsonObject body = CodeCapsulesWire.execBody(command, timeout, env, null);
      if (request.keepStdin()) {
        StdinExecution execution = new StdinExecution(client, id, body, sink, request.outputLimitBytes());
        track(execution::abandon, execution.done());
        return Future.succeededFuture(execution);
      }
      StreamedExecution execution = new StreamedExecution(client, id, body, sink);
      track(execution::abandon, execution.done());
      return execution.start().map(started -> execution);
    });
  }

  private void track(Runnable abandon, Future<Void> done) {
    running.add(abandon);
    done.onComplete(ar -> running.remove(abandon));
  }

  /** The shell string running the request's argv, from its cwd when it names one. */
  static String command(ExecSandbox request) {
    List<String> argv = CommandLine.of(request.code(), request.language(), request.command(), request.args());
    String line = argv.stream().map(CodeCapsulesExecutions::quote).collect(Collectors.joining(" "));
    return request.cwd() == null || request.cwd().isBlank() ? line : "cd " + quote(request.cwd()) + " && " + line;
  }

  /** {@code s} as one single-quoted shell word. */
  static String quote(String s) {
    return "'" + s.replace("'", "'\\''") + "'";
  }

  /** The exit code reported for a program ended by {@code signal}, as a shell reports it. */
  static int signalExit(String signal) {
    return switch (signal) {
      case "KILL" -> 137;
      case "INT" -> 130;
      default -> 143;
    };
  }

  /** Abandons running executions: their sinks get no result. */
  void abandonAll() {
    new java.util.ArrayList<>(running).forEach(Runnable::run);
  }
}
