package ai.bespokelabs.sandbox.adapters.sim;

import ai.bespokelabs.sandbox.adapters.http.ClientContext;
import io.vertx.core.Context;
import io.vertx.core.Future;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;

/** Drives asynchronous calls from a test thread: each runs on a context, as an adapter makes it, and is waited for. */
public final class OnContext {
  private OnContext() {}

  /** Runs {@code call} on {@code context} and waits for its outcome; a failed call throws its cause. */
  public static <T> T await(Context context, Supplier<Future<T>> call) {
    try {
      return ClientContext.run(context, call).toCompletionStage().toCompletableFuture().get(60, TimeUnit.SECONDS);
    } catch (ExecutionException e) {
      if (e.getCause() instanceof RuntimeException r) {
        throw r;
      }
      throw new IllegalStateException(e.getCause());
    } catch (InterruptedException | TimeoutException e) {
      throw new IllegalStateException(e);
    }
  }
}
