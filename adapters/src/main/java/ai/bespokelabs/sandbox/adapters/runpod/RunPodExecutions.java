package ai.bespokelabs.sandbox.adapters.runpod;

import ai.bespokelabs.sandbox.adapters.exec.CommandLine;
import ai.bespokelabs.sandbox.adapters.spi.Execution;
import ai.bespokelabs.sandbox.adapters.spi.Executions;
import ai.bespokelabs.sandbox.adapters.spi.OutputSink;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecSandbox;
import ai.bespokelabs.sandbox.core.error.ApiException;
import io.vertx.core.Future;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Pattern;

/**
 * Executions over SSH ({@link RunPodExecution}). The command line handed to the pod's sshd (run by the login
 * shell) records the shell's pid, changes to {@code cwd} and replaces itself with {@code env} carrying the
 * sandbox's env vars (those given at create, read back from the pod) and the request's, then the program.
 */
final class RunPodExecutions implements Executions {
  private static final Pattern NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*");
  private static final Pattern EXEC_ID = Pattern.compile("[A-Za-z0-9_-]{1,100}");

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
      return Future.failedFuture(RunPodClient.notFound("execute"));
    }
    List<String> argv;
    try {
      argv = CommandLine.of(request.code(), request.language(), request.command(), request.args());
      if (!EXEC_ID.matcher(request.executionId()).matches()) {
        throw new ApiException(422, "invalid execution id");
      }
    } catch (RuntimeException e) {
      return Future.failedFuture(e);
    }
    String pidFile = "/tmp/.bsk-" + request.executionId() + ".pid";
    return ssh.session(podId, "execute").compose(session -> {
      Map<String, String> env = new TreeMap<>(ssh.sandboxEnv(podId));
      env.putAll(request.env());
      String line = commandLine(pidFile, request.cwd(), env, argv);
      return RunPodExecution.start(client.context(), session, line, pidFile, sink, request.keepStdin(),
          request.timeoutSecs()).recover(t -> Future.failedFuture(ssh.sshError(podId, "execute", t)));
    });
  }

  static String commandLine(String pidFile, String cwd, Map<String, String> env, List<String> argv) {
    StringBuilder b = new StringBuilder("echo $$ > ").append(pidFile).append(" && ");
    if (cwd != null && !cwd.isBlank()) {
      b.append("cd ").append(quote(cwd)).append(" && ");
    }
    b.append("exec env");
    for (Map.Entry<String, String> e : env.entrySet()) {
      if (!NAME.matcher(e.getKey()).matches()) {
        throw new ApiException(422, "invalid env var name");
      }
      b.append(' ').append(quote(e.getKey() + "=" + e.getValue()));
    }
    for (String a : argv) {
      b.append(' ').append(quote(a));
    }
    return b.toString();
  }

  /** One POSIX shell word. */
  static String quote(String s) {
    return "'" + s.replace("'", "'\\''") + "'";
  }
}
