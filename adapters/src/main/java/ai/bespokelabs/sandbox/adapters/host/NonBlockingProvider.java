package ai.bespokelabs.sandbox.adapters.host;

import ai.bespokelabs.sandbox.core.bus.Messages.CreateSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.DestroySandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.SandboxDestroyed;
import io.vertx.core.Context;
import io.vertx.core.Future;

/**
 * A provider that can also create and destroy without blocking a thread (a remote API spoken with the Vert.x
 * HTTP client). The adapter then calls these on its own context instead of handing {@link BlockingProvider#create}
 * and {@link BlockingProvider#destroy} to a virtual thread, which takes two thread hand-offs off each call. They
 * must mean exactly what the blocking methods mean, errors included (a slow path, such as cleaning up after a
 * lost create, may still run blocking code off the event loop).
 */
public interface NonBlockingProvider extends BlockingProvider {
  /**
   * Runs blocking work (a slow path) on a virtual thread of its own and completes on the calling context: unlike
   * Vert.x's bounded worker pool, long polls cannot starve other work.
   */
  static <T> Future<T> offLoop(java.util.concurrent.Callable<T> work) {
    java.util.concurrent.CompletableFuture<T> done = new java.util.concurrent.CompletableFuture<>();
    Thread.ofVirtual().name("adapter-slow-path").start(() -> {
      try {
        done.complete(work.call());
      } catch (Throwable t) {
        done.completeExceptionally(t);
      }
    });
    Context context = io.vertx.core.Vertx.currentContext();
    return context == null ? Future.fromCompletionStage(done) : Future.fromCompletionStage(done, context);
  }

  /** Makes {@code context} (the adapter's) the one the provider's HTTP clients are used from; called once at start. */
  void useContext(Context context);

  /** As {@link #create}; completes on the calling context. */
  Future<String> createAsync(CreateSandbox request);

  /** As {@link #destroy}; completes on the calling context. */
  Future<SandboxDestroyed> destroyAsync(DestroySandbox request);

  /**
   * As {@link #start}, completing on the calling context once the program runs. By default {@link #start} runs
   * on a virtual thread, for providers that start programs only blocking.
   */
  default Future<ExecHandle> startAsync(ExecSandbox request, ExecSink sink) {
    return offLoop(() -> start(request, sink));
  }
}
