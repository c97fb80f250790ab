package ai.bespokelabs.sandbox.adapters.modal;

import ai.bespokelabs.sandbox.adapters.exec.CommandLine;
import ai.bespokelabs.sandbox.adapters.spi.Execution;
import ai.bespokelabs.sandbox.adapters.spi.Executions;
import ai.bespokelabs.sandbox.adapters.spi.OutputSink;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecSandbox;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import io.vertx.core.Future;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import modal.task_command_router.TaskCommandRouterOuterClass.TaskExecStartRequest;
import modal.task_command_router.TaskCommandRouterOuterClass.TaskExecStderrConfig;
import modal.task_command_router.TaskCommandRouterOuterClass.TaskExecStdoutConfig;

/** Programs in a Modal sandbox, run through its task's command router ({@link ModalExecution}). */
final class ModalExecutions implements Executions {
  private final ModalClient client;
  private final Set<ModalExecution> running = new HashSet<>();

  ModalExecutions(ModalClient client) {
    this.client = client;
  }

  /**
   * {@code TaskExecStart} on the sandbox's router; completes once the router accepted it. The router's address
   * and token are remembered per sandbox; when a remembered one fails, it is looked up again and the start is
   * sent once more with the same exec id (Modal makes a start idempotent by its exec id).
   */
  @Override
  public Future<Execution> start(ExecSandbox request, OutputSink sink) {
    List<String> argv;
    try {
      argv = CommandLine.of(request.code(), request.language(), request.command(), request.args());
    } catch (RuntimeException e) {
      return Future.failedFuture(e);
    }
    String execId = UUID.randomUUID().toString();
    String sandbox = request.providerResourceId();
    return startOn(request, sink, argv, execId).recover(t -> client.forgetRouter(sandbox) && stale(t)
        ? startOn(request, sink, argv, execId) : Future.failedFuture(t));
  }

  /** A failure a stale router address or token explains. */
  static boolean stale(Throwable t) {
    return t instanceof ProviderException p && switch (p.error().code()) {
      case AUTHENTICATION, CONNECTION, NOT_FOUND -> true;
      default -> false;
    };
  }

  private Future<Execution> startOn(ExecSandbox request, OutputSink sink, List<String> argv, String execId) {
    return client.router(request.providerResourceId(), "execute").compose(router -> {
      TaskExecStartRequest.Builder start = TaskExecStartRequest.newBuilder().setTaskId(router.taskId())
          .setExecId(execId).addAllCommandArgs(ProcessGroup.lead(execId, argv))
          .setStdoutConfig(TaskExecStdoutConfig.TASK_EXEC_STDOUT_CONFIG_PIPE)
          .setStderrConfig(TaskExecStderrConfig.TASK_EXEC_STDERR_CONFIG_PIPE)
          .setTimeoutSecs(request.timeoutSecs()).putAllEnv(request.env());
      if (request.cwd() != null && !request.cwd().isBlank()) {
        start.setWorkdir(request.cwd());
      }
      ModalExecution execution = new ModalExecution(client, router, request, sink);
      running.add(execution);
      execution.onDone(() -> running.remove(execution));
      return execution.start(start.build()).onFailure(t -> running.remove(execution));
    });
  }

  /** Abandons running executions: their sinks get no result. */
  void abandonAll() {
    new ArrayList<>(running).forEach(ModalExecution::abandon);
  }
}
