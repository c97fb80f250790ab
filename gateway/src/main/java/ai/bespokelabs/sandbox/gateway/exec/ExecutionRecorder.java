package ai.bespokelabs.sandbox.gateway.exec;

import ai.bespokelabs.sandbox.core.bus.Messages.ExecFinished;
import ai.bespokelabs.sandbox.core.bus.RuntimeClient;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;

/**
 * Receives the final (capped) result of the asynchronous executions this node started, when their adapter
 * reports the end ({@link RuntimeClient#receiveResults}), and has the {@link ExecutionService} store it. The
 * adapter sends the exit event to watchers only after this answer, so a client that saw {@code exit} finds the
 * stored result.
 */
public final class ExecutionRecorder extends VerticleBase {
  private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(ExecutionRecorder.class);
  private final RuntimeClient runtime;
  private final ExecutionService executions;

  public ExecutionRecorder(RuntimeClient runtime, ExecutionService executions) {
    this.runtime = runtime;
    this.executions = executions;
  }

  @Override
  public Future<?> start() {
    return runtime.receiveResults(this::record);
  }

  private Future<Void> record(ExecFinished f) {
    return executions.recordFinished(f)
        .onFailure(e -> LOG.warn("Storing the result of execution {} failed: {}", f.executionId(), e.toString()));
  }
}
