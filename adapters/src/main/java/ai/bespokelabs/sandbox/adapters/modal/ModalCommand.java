package ai.bespokelabs.sandbox.adapters.modal;

import ai.bespokelabs.sandbox.adapters.modal.ModalClient.Router;
import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError.Outcome;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.buffer.Buffer;
import io.vertx.grpc.common.GrpcStatus;
import java.util.List;
import java.util.UUID;
import modal.task_command_router.TaskCommandRouterOuterClass.TaskExecStartRequest;
import modal.task_command_router.TaskCommandRouterOuterClass.TaskExecStartResponse;
import modal.task_command_router.TaskCommandRouterOuterClass.TaskExecStderrConfig;
import modal.task_command_router.TaskCommandRouterOuterClass.TaskExecStdioFileDescriptor;
import modal.task_command_router.TaskCommandRouterOuterClass.TaskExecStdioReadRequest;
import modal.task_command_router.TaskCommandRouterOuterClass.TaskExecStdoutConfig;
import modal.task_command_router.TaskCommandRouterOuterClass.TaskExecWaitRequest;
import modal.task_command_router.TaskCommandRouterOuterClass.TaskExecWaitResponse;

/**
 * A short helper program of the adapter's own (never a user's), run to its end through a sandbox's command router
 * with its stdout collected: what the published calls cannot do otherwise (signalling a process group, file
 * metadata, a file's mode and atomic rename) is done this way. Arguments go as argv, never through a shell line.
 */
final class ModalCommand {
  /** A helper's exit status (or {@code 128 + signal}) and its stdout. */
  record Result(int exitCode, Buffer stdout) {}

  static final int TIMEOUT_SECS = 30;
  /** A helper's stdout beyond this is an error (listings of a huge directory included). */
  static final int MAX_STDOUT = 8 << 20;

  private ModalCommand() {}

  /**
   * Runs {@code argv} on the sandbox's router; once more on a router looked up afresh when the remembered one's
   * address or token went stale.
   */
  static Future<Result> run(ModalClient client, String sandboxId, List<String> argv, String workdir, String op) {
    return client.router(sandboxId, op).compose(r -> run(client, r, argv, workdir, op))
        .recover(t -> ModalExecutions.stale(t) && client.forgetRouter(sandboxId)
            ? client.router(sandboxId, op).compose(r -> run(client, r, argv, workdir, op))
            : Future.failedFuture(t));
  }

  /** Runs {@code argv} in {@code workdir} (null: the image's) on the router and waits for its end. */
  static Future<Result> run(ModalClient client, Router router, List<String> argv, String workdir, String op) {
    String execId = UUID.randomUUID().toString();
    TaskExecStartRequest.Builder start = TaskExecStartRequest.newBuilder().setTaskId(router.taskId())
        .setExecId(execId).addAllCommandArgs(argv).setTimeoutSecs(TIMEOUT_SECS)
        .setStdoutConfig(TaskExecStdoutConfig.TASK_EXEC_STDOUT_CONFIG_PIPE)
        .setStderrConfig(TaskExecStderrConfig.TASK_EXEC_STDERR_CONFIG_DEVNULL);
    if (workdir != null) {
      start.setWorkdir(workdir);
    }
    long bound = TIMEOUT_SECS * 1000L + ModalExecution.WAIT_GRACE_MS;
    return client.route(router, "TaskExecStart", start.build(), TaskExecStartResponse.getDefaultInstance(),
        client.settings().requestTimeout().toMillis(), op).compose(started -> {
          Future<Buffer> out = stdout(client, router, execId, op);
          Future<TaskExecWaitResponse> end = client.route(router, "TaskExecWait", TaskExecWaitRequest.newBuilder()
              .setTaskId(router.taskId()).setExecId(execId).build(), TaskExecWaitResponse.getDefaultInstance(),
              bound, op);
          return Future.all(out, end).map(both -> new Result(end.result().hasSignal()
              ? 128 + end.result().getSignal() : end.result().getCode(), out.result()));
        });
  }

  /** The whole stdout, read by demand. */
  private static Future<Buffer> stdout(ModalClient client, Router router, String execId, String op) {
    TaskExecStdioReadRequest req = TaskExecStdioReadRequest.newBuilder().setTaskId(router.taskId())
        .setExecId(execId).setOffset(0)
        .setFileDescriptor(TaskExecStdioFileDescriptor.TASK_EXEC_STDIO_FILE_DESCRIPTOR_STDOUT).build();
    return client.read(router, req).recover(t -> Future.failedFuture(ModalErrors.map(t, op))).compose(stdio -> {
      Buffer out = Buffer.buffer();
      Promise<Buffer> done = Promise.promise();
      stdio.response().handler(msg -> {
        out.appendBytes(msg.getData().toByteArray());
        if (out.length() > MAX_STDOUT) {
          stdio.request().cancel();
          done.tryFail(ModalErrors.of(ErrorCode.COMMAND_FAILED, op, false, Outcome.FAILED));
          return;
        }
        stdio.response().fetch(1);
      });
      stdio.response().end().onComplete(ar -> {
        if (ar.succeeded() && stdio.response().status() == GrpcStatus.OK) {
          done.tryComplete(out);
        } else {
          done.tryFail(ar.failed() ? ModalErrors.map(ar.cause(), op)
              : ModalErrors.status(stdio.response().status(), op));
        }
      });
      stdio.response().fetch(1);
      return done.future();
    });
  }
}
