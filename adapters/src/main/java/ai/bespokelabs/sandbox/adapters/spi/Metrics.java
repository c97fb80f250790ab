package ai.bespokelabs.sandbox.adapters.spi;

import ai.bespokelabs.sandbox.core.bus.Messages.MetricsRequest;
import ai.bespokelabs.sandbox.core.bus.Messages.SandboxMetrics;
import io.vertx.core.Future;

/** {@link Capability#METRICS}: live resource use of a running sandbox. */
public interface Metrics {

  /** A sample of cpu, memory, disk and processes; fields the backend cannot tell are null. */
  Future<SandboxMetrics> sample(MetricsRequest request);
}
