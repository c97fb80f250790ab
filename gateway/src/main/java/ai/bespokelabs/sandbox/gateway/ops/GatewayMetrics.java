package ai.bespokelabs.sandbox.gateway.ops;

import ai.bespokelabs.sandbox.gateway.exec.StreamMeter;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.binder.jvm.ClassLoaderMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmGcMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmThreadMetrics;
import io.micrometer.core.instrument.binder.system.FileDescriptorMetrics;
import io.micrometer.core.instrument.binder.system.ProcessorMetrics;
import io.micrometer.core.instrument.binder.system.UptimeMetrics;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.vertx.core.spi.VertxMetricsFactory;
import io.vertx.micrometer.Label;
import io.vertx.micrometer.MicrometerMetricsFactory;
import io.vertx.micrometer.MicrometerMetricsOptions;
import java.time.Duration;
import java.util.EnumSet;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * One gateway node's metrics: a Prometheus registry fed by Vert.x's own Micrometer integration (HTTP server
 * requests by route template, method and status; HTTP clients to providers; the event bus; the PostgreSQL
 * pool), the JVM and process, and the gateway's own series below. No label ever names a sandbox, key,
 * organization or execution (cardinality), and none names an event-bus address (they carry node ids).
 */
public final class GatewayMetrics implements StreamMeter, AutoCloseable {
  private static final Duration[] EXECUTION_BUCKETS = seconds(0.01, 0.05, 0.1, 0.5, 1, 5, 10, 60, 300, 1800);
  private static final Duration[] LAG_BUCKETS = seconds(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30);
  private static final Duration[] LATENESS_BUCKETS = seconds(0.1, 0.5, 1, 2, 5, 10, 30, 60);

  private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
  private final JvmGcMetrics gc = new JvmGcMetrics();
  private final AtomicInteger sseWatchers = new AtomicInteger();
  private final AtomicInteger socketWatchers = new AtomicInteger();
  private final AtomicInteger creditsHeld = new AtomicInteger();

  public GatewayMetrics() {
    new JvmMemoryMetrics().bindTo(registry);
    gc.bindTo(registry);
    new JvmThreadMetrics().bindTo(registry);
    new ClassLoaderMetrics().bindTo(registry);
    new ProcessorMetrics().bindTo(registry);
    new UptimeMetrics().bindTo(registry);
    new FileDescriptorMetrics().bindTo(registry);
    registry.gauge("sandbox_stream_watchers", io.micrometer.core.instrument.Tags.of("transport", "sse"), sseWatchers);
    registry.gauge("sandbox_stream_watchers", io.micrometer.core.instrument.Tags.of("transport", "websocket"),
        socketWatchers);
    registry.gauge("sandbox_stream_credits_held", creditsHeld);
  }

  public MeterRegistry registry() {
    return registry;
  }

  /** The factory a Vert.x instance reports to this registry through. */
  public VertxMetricsFactory vertxFactory() {
    return new MicrometerMetricsFactory(registry);
  }

  /** What Vert.x reports: route templates rather than paths, and no per-address or per-peer labels. */
  public static MicrometerMetricsOptions vertxOptions() {
    return new MicrometerMetricsOptions().setEnabled(true)
        .setLabels(EnumSet.of(Label.HTTP_ROUTE, Label.HTTP_METHOD, Label.HTTP_CODE, Label.POOL_TYPE, Label.POOL_NAME,
            Label.CLIENT_NAME, Label.EB_SIDE, Label.EB_FAILURE));
  }

  /** The text exposition of every series. */
  public String scrape() {
    return registry.scrape();
  }

  /** An execution's end, from its lifecycle event: its status and how long it ran, by backend. */
  public void executionEnded(String backend, String status, long durationMs) {
    Counter.builder("sandbox_executions_ended").description("Executions ended, by backend and status")
        .tags("backend", backend, "status", status).register(registry).increment();
    if (durationMs >= 0) {
      Timer.builder("sandbox_execution_duration").description("How long executions ran, by backend")
          .tags("backend", backend).serviceLevelObjectives(EXECUTION_BUCKETS).register(registry)
          .record(Duration.ofMillis(durationMs));
    }
  }

  public void executionStarted(String backend) {
    Counter.builder("sandbox_executions_started").description("Executions started, by backend")
        .tags("backend", backend).register(registry).increment();
  }

  /**
   * A provider failure an adapter of this node answered (any operation: create, execute, files, destroy, signal,
   * health, ...), by backend and contract code; counted once, where the adapter answers it.
   */
  public void providerError(String backend, String code) {
    Counter.builder("sandbox_provider_errors").description("Provider failures, by backend and error code")
        .tags("backend", backend, "code", code).register(registry).increment();
  }

  /** A sandbox ended, by backend and reason ({@code operator}, {@code ttl_expired}, {@code failed}, ...). */
  public void sandboxEnded(String backend, String reason) {
    Counter.builder("sandbox_sandboxes_ended").description("Sandboxes ended, by backend and reason")
        .tags("backend", backend, "reason", reason).register(registry).increment();
  }

  public void sandboxStarted(String backend) {
    Counter.builder("sandbox_sandboxes_started").description("Sandboxes that started running, by backend")
        .tags("backend", backend).register(registry).increment();
  }

  /** One lifecycle event priced by the ledger, {@code lag} after its commit. */
  public void priced(String type, Duration lag) {
    Counter.builder("sandbox_ledger_events_priced").description("Lifecycle events the ledger priced")
        .register(registry).increment();
    Timer.builder("sandbox_ledger_lag").description("From a lifecycle event's commit to its pricing")
        .serviceLevelObjectives(LAG_BUCKETS).register(registry).record(lag.isNegative() ? Duration.ZERO : lag);
  }

  /** Terminations a supervisor sweep claimed (deadlines due, interrupted terminations taken over). */
  public void claimed(int n) {
    Counter.builder("sandbox_supervisor_claims").description("Terminations claimed by this node's supervisor")
        .register(registry).increment(n);
  }

  /** How late a deadline was enforced (the supervisor's termination after the sandbox's expiry). */
  public void deadlineLateness(Duration lateness) {
    Timer.builder("sandbox_supervisor_deadline_lateness").description("Deadline enforcement after expiry")
        .serviceLevelObjectives(LATENESS_BUCKETS).register(registry)
        .record(lateness.isNegative() ? Duration.ZERO : lateness);
  }

  @Override
  public void watcher(String transport, int delta) {
    ("sse".equals(transport) ? sseWatchers : socketWatchers).addAndGet(delta);
  }

  @Override
  public void streamed(String transport, long bytes) {
    Counter.builder("sandbox_stream_bytes").description("Execution output bytes sent to watchers")
        .baseUnit("bytes").tags("transport", transport).register(registry).increment(bytes);
  }

  @Override
  public void creditsHeld(int delta) {
    creditsHeld.addAndGet(delta);
  }

  @Override
  public void close() {
    gc.close();
    registry.close();
  }

  private static Duration[] seconds(double... bounds) {
    Duration[] out = new Duration[bounds.length];
    for (int i = 0; i < bounds.length; i++) {
      out[i] = Duration.ofNanos((long) (bounds[i] * 1e9));
    }
    return out;
  }
}
