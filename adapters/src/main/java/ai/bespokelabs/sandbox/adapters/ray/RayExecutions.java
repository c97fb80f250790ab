package ai.bespokelabs.sandbox.adapters.ray;

import ai.bespokelabs.sandbox.adapters.exec.CommandLine;
import ai.bespokelabs.sandbox.adapters.ray.RaySandboxes.Sandbox;
import ai.bespokelabs.sandbox.adapters.spi.Execution;
import ai.bespokelabs.sandbox.adapters.spi.Executions;
import ai.bespokelabs.sandbox.adapters.spi.OutputSink;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecSandbox;
import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import io.vertx.core.Future;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import java.util.stream.Collectors;

/**
 * Executions: one Ray job each ({@code POST /api/jobs/}), its entrypoint the command line, its runtime env's
 * {@code env_vars} the sandbox's env (from its anchor, {@link RaySandboxes}) and the execution's, its
 * metadata our marks; then followed by
 * {@link RayExecution}. Ray gives a job no stdin: an execution asking to keep stdin open is refused.
 */
final class RayExecutions implements Executions {
  private final RayClient client;
  private final RayJobs jobs;
  private final RaySandboxes sandboxes;

  RayExecutions(RayClient client, RayJobs jobs, RaySandboxes sandboxes) {
    this.client = client;
    this.jobs = jobs;
    this.sandboxes = sandboxes;
  }

  @Override
  public Future<Execution> start(ExecSandbox request, OutputSink sink) {
    if (request.keepStdin()) {
      return Future.failedFuture(new ProviderException(ProviderError.of(ErrorCode.FEATURE_NOT_SUPPORTED,
          RayProvider.BACKEND, "stdin", false, ProviderError.Outcome.FAILED)));
    }
    return sandboxes.get(request.sandboxId(), "execute").compose(sandbox -> submit(request, sandbox, sink));
  }

  private Future<Execution> submit(ExecSandbox request, Sandbox sandbox, OutputSink sink) {
    JsonObject body = submission(request, sandbox);
    String submissionId = body.getString("submission_id");
    long t0 = System.nanoTime();
    return client.expect("execute", true, HttpMethod.POST, RayJobs.JOBS, body)
        .recover(t -> t instanceof ProviderException p && p.error().outcome() == ProviderError.Outcome.UNKNOWN
            ? stopAfterLostSubmit(submissionId, p) : Future.failedFuture(t))
        .map(r -> {
          RayExecution execution = new RayExecution(client, jobs, submissionId, sink, t0);
          execution.follow(request.timeoutSecs());
          return execution;
        });
  }

  /**
   * A submit whose answer was lost may have started the job: it is stopped once by its submission id (ours,
   * so nothing else is touched) and the failure's {@code cleanup_status} says how that went: {@code deleted}
   * (the job was there and is stopped; its record goes with the sandbox), {@code not_found} or
   * {@code unknown}.
   */
  private Future<RayClient.Resp> stopAfterLostSubmit(String submissionId, ProviderException lost) {
    return jobs.stop(submissionId, "execute").transform(ar -> Future.failedFuture(new ProviderException(
        lost.error().withContext("cleanup_status", ar.failed() ? "unknown" : ar.result() ? "deleted" : "not_found"))));
  }

  /** The job request: entrypoint, submission id, env, resources and metadata. */
  static JsonObject submission(ExecSandbox request, Sandbox sandbox) {
    List<String> argv = CommandLine.of(request.code(), request.language(), request.command(), request.args());
    String line = argv.stream().map(RayExecutions::quote).collect(Collectors.joining(" "));
    String area = workingArea(request.sandboxId());
    String cd = "mkdir -p " + area + " && cd " + area;
    if (request.cwd() != null && !request.cwd().isBlank()) {
      cd += " && cd " + quote(request.cwd());
    }
    line = cd + " && " + line;
    Map<String, String> env = new TreeMap<>(sandbox.env());
    env.putAll(request.env());
    JsonObject metadata = new JsonObject().put(RaySandboxes.META_MANAGED, "true")
        .put(RaySandboxes.META_SANDBOX, request.sandboxId())
        .put(RaySandboxes.META_EXECUTION, String.valueOf(request.executionId()));
    if (sandbox.organizationId() != null) {
      metadata.put(RaySandboxes.META_ORGANIZATION, sandbox.organizationId());
    }
    if (sandbox.createToken() != null) {
      metadata.put(RaySandboxes.META_CREATE_TOKEN, sandbox.createToken());
    }
    JsonObject body = new JsonObject().put("entrypoint", line).put("submission_id", submissionId(request))
        .put("runtime_env", new JsonObject().put("env_vars", new JsonObject(new TreeMap<String, Object>(env))))
        .put("metadata", metadata);
    if (sandbox.cpus() != null) {
      body.put("entrypoint_num_cpus", sandbox.cpus());
    }
    if (sandbox.memoryBytes() != null) {
      body.put("entrypoint_memory", sandbox.memoryBytes());
    }
    if (sandbox.gpus() != null && sandbox.gpus() > 0) {
      body.put("entrypoint_num_gpus", sandbox.gpus());
    }
    return body;
  }

  /**
   * The sandbox's working area: a directory of its own in the temporary directory of the node running the
   * entrypoint (the head node unless entrypoint resources place it elsewhere), every job's working directory.
   */
  static String workingArea(String sandboxId) {
    return "\"${TMPDIR:-/tmp}\"/bespoke-ray/" + quote(sandboxId);
  }

  /** The job's submission id, from the execution id: a retried submit of one execution names the same job. */
  static String submissionId(ExecSandbox request) {
    String id = request.executionId();
    if (id == null || !id.matches("[A-Za-z0-9_-]{1,100}")) {
      id = UUID.nameUUIDFromBytes(String.valueOf(id).getBytes(StandardCharsets.UTF_8)).toString();
    }
    return "bsk-" + request.sandboxId().replaceAll("[^A-Za-z0-9_-]", "_") + "-" + id;
  }

  /** {@code s} as one shell word, quoted only when it needs to be. */
  static String quote(String s) {
    if (!s.isEmpty() && s.matches("[A-Za-z0-9_@%+=:,./-]+")) {
      return s;
    }
    return "'" + s.replace("'", "'\\''") + "'";
  }
}
