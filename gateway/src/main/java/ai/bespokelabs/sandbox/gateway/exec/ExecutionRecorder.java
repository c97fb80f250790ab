package ai.bespokelabs.sandbox.gateway.exec;

import ai.bespokelabs.sandbox.core.bus.Addresses;
import ai.bespokelabs.sandbox.core.bus.BusFailures;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecFinished;
import ai.bespokelabs.sandbox.core.error.ApiException;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.eventbus.Message;

/**
 * Receives the final (capped) result of the asynchronous executions this node started, when their adapter
 * reports the end, and has the {@link ExecutionService} store it. The adapter sends the exit event to
 * watchers only after this reply, so a client that saw {@code exit} finds the stored result.
 */
public final class ExecutionRecorder extends VerticleBase {
  private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(ExecutionRecorder.class);
  private final ExecutionService executions;

  public ExecutionRecorder(ExecutionService executions) {
    this.executions = executions;
  }

  @Override
  public Future<?> start() {
    return vertx.eventBus().<ExecFinished>consumer(Addresses.recorder(executions.nodeId()), this::record)
        .completion();
  }

  private void record(Message<ExecFinished> msg) {
    ExecFinished f = msg.body();
    executions.recordFinished(f)
        .onSuccess(v -> msg.reply(null))
        .onFailure(e -> {
          LOG.warn("Storing the result of execution {} failed: {}", f.executionId(), e.toString());
          BusFailures.fail(msg, new ApiException(500, "the result could not be stored"));
        });
  }
}
