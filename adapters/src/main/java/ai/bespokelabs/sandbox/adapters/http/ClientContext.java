package ai.bespokelabs.sandbox.adapters.http;

import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import java.util.function.Supplier;

/**
 * Runs HTTP client work on one Vert.x context, so a client's connection pool is only used from one event
 * loop: requests issued straight from many virtual threads stalled now and then until their timeout.
 */
public final class ClientContext {
  private ClientContext() {}

  /** Starts {@code work} on {@code context} and hands back its outcome (a thrown exception fails it). */
  public static <T> Future<T> run(Context context, Supplier<Future<T>> work) {
    Promise<T> done = Promise.promise();
    context.runOnContext(v -> {
      try {
        work.get().onComplete(done);
      } catch (RuntimeException e) {
        done.fail(e);
      }
    });
    return done.future();
  }
}
