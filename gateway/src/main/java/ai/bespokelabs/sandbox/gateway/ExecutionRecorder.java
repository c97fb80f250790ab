package ai.bespokelabs.sandbox.gateway;

import ai.bespokelabs.sandbox.core.Times;
import ai.bespokelabs.sandbox.core.bus.Addresses;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecFinished;
import ai.bespokelabs.sandbox.core.repo.ExecutionRepository;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.eventbus.Message;
import java.math.BigDecimal;
import java.time.Clock;

/**
 * Stores the final (capped) result of the asynchronous executions this node started, when their adapter
 * reports the end. The adapter sends the exit event to watchers only after this reply, so a client that
 * saw {@code exit} finds the stored result.
 */
public final class ExecutionRecorder extends VerticleBase {
  private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(ExecutionRecorder.class);
  private final String nodeId;
  private final ExecutionRepository executions;
  private final BigDecimal customerMarkup;
  private final Clock clock;

  public ExecutionRecorder(String nodeId, ExecutionRepository executions, BigDecimal customerMarkup, Clock clock) {
    this.nodeId = nodeId;
    this.executions = executions;
    this.customerMarkup = customerMarkup;
    this.clock = clock;
  }

  @Override
  public Future<?> start() {
    return vertx.eventBus().<ExecFinished>consumer(Addresses.recorder(nodeId), this::record)
        .completion();
  }

  private void record(Message<ExecFinished> msg) {
    ExecFinished f = msg.body();
    executions.pending(f.executionId())
        .compose(p -> p.isEmpty() ? Future.succeededFuture()
            : executions.complete(f.executionId(), f.result().status(),
                ExecResponses.of(p.get().requestId(), f.executionId(), f.result(), p.get().hourlyRateUsd(),
                    customerMarkup),
                f.result().exitCode(), f.result().durationMs(), Times.now(clock)))
        .onSuccess(v -> msg.reply(null))
        .onFailure(e -> {
          LOG.warn("Storing the result of execution {} failed: {}", f.executionId(), e.toString());
          msg.fail(500, "\"the result could not be stored\"");
        });
  }
}
