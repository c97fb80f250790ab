package ai.bespokelabs.sandbox.adapters.daytona;

import ai.bespokelabs.sandbox.adapters.sim.DrivenBackend;
import io.vertx.core.Context;

/** The Daytona backend driven from a test thread, with its listing page size settable. */
final class BlockingDaytona extends DrivenBackend {
  private final DaytonaProvider daytona;

  BlockingDaytona(DaytonaProvider backend, Context context) {
    super(backend, context);
    this.daytona = backend;
  }

  BlockingDaytona pageSize(int size) {
    daytona.pageSize(size);
    return this;
  }
}
