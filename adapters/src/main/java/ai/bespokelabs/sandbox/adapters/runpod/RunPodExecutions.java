package ai.bespokelabs.sandbox.adapters.runpod;

import ai.bespokelabs.sandbox.adapters.exec.CommandLine;
import ai.bespokelabs.sandbox.adapters.spi.Execution;
import ai.bespokelabs.sandbox.adapters.spi.Executions;
import ai.bespokelabs.sandbox.adapters.spi.OutputSink;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecSandbox;
import io.vertx.core.Future;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Executions over SSH ({@link RunPodExecution}): the program runs detached on the pod ({@link RunPodScripts}),
 * as {@code env} carrying the sandbox's env vars (those given at create, read back from the pod) and the
 * request's, then the program, in {@code cwd}.
 */
final class RunPodExecutions implements Executions {
  private final RunPodClient client;
  private final RunPodSsh ssh;

  RunPodExecutions(RunPodClient client, RunPodSsh ssh) {
    this.client = client;
    this.ssh = ssh;
  }

  @Override
  public Future<Execution> start(ExecSandbox request, OutputSink sink) {
    String podId = request.providerResourceId();
    if (podId == null || podId.isBlank()) {
      return Future.failedFuture(RunPodErrors.notFound("execute"));
    }
    List<String> argv;
    String dir;
    try {
      argv = CommandLine.of(request.code(), request.language(), request.command(), request.args());
      dir = RunPodScripts.dir(request.executionId());
    } catch (RuntimeException e) {
      return Future.failedFuture(e);
    }
    // the session first: it reads the pod's env vars back
    return ssh.session(podId, "execute").compose(session -> {
      Map<String, String> env = new TreeMap<>(ssh.sandboxEnv(podId));
      env.putAll(request.env());
      String launch = RunPodScripts.launch(dir, request.cwd(), env, argv, request.keepStdin());
      return RunPodExecution.start(client.context(), op -> ssh.session(podId, op), dir, launch, sink,
          request.keepStdin(), request.timeoutSecs(), client.requestTimeoutMs() + 10_000)
          .recover(t -> Future.failedFuture(ssh.sshError(podId, "execute", t)));
    });
  }
}
