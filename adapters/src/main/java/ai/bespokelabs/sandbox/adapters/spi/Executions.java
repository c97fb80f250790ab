package ai.bespokelabs.sandbox.adapters.spi;

import ai.bespokelabs.sandbox.core.bus.Messages.ExecSandbox;
import io.vertx.core.Future;

/** Running programs inside a sandbox. */
public interface Executions {

  /**
   * Starts one program and completes once it runs; its output and its end go to {@code sink}, which also
   * paces the reading of its output. Stdin stays open only when {@code request.keepStdin()}.
   */
  Future<Execution> start(ExecSandbox request, OutputSink sink);
}
