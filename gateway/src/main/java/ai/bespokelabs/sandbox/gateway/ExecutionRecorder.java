package ai.bespokelabs.sandbox.gateway;

import ai.bespokelabs.sandbox.core.bus.Addresses;
import ai.bespokelabs.sandbox.core.bus.BusFailures;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecFinished;
import ai.bespokelabs.sandbox.core.error.ApiException;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.eventbus.Message;

/**
 * Stores the final (capped) result of the asynchronous executions this node started, when their adapter
 * reports the end. The adapter sends the exit event to watchers only after this reply, so a client that
 * saw {@code exit} finds the stored result.
 */
public final class ExecutionRecorder extends VerticleBase {
  private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(ExecutionRecorder.class);
  private final Services services;

  public ExecutionRecorder(Services services) {
    this.services = services;
  }

  @Override
  public Future<?> start() {
    return vertx.eventBus().<ExecFinished>consumer(Addresses.recorder(services.backends().nodeId()), this::record)
        .completion();
  }

  private void record(Message<ExecFinished> msg) {
    ExecFinished f = msg.body();
    services.executions().pending(f.executionId())
        .compose(p -> p.isEmpty() ? Future.succeededFuture()
            : services.executions().complete(f.executionId(), f.result().status(),
                ExecResponses.of(p.get().requestId(), f.executionId(), f.result(), p.get().hourlyRateUsd(),
                    services.config().customerMarkup()),
                f.result().exitCode(), f.result().durationMs(), services.now()))
        .onSuccess(v -> {
          vertx.eventBus().publish(Addresses.LEDGER_WAKEUP, null);
          msg.reply(null);
        })
        .onFailure(e -> {
          LOG.warn("Storing the result of execution {} failed: {}", f.executionId(), e.toString());
          BusFailures.fail(msg, new ApiException(500, "the result could not be stored"));
        });
  }
}
