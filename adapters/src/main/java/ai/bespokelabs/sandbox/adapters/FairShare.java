package ai.bespokelabs.sandbox.adapters;

import io.vertx.core.Future;
import io.vertx.core.Promise;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.HashMap;
import java.util.Map;
import java.util.function.Supplier;

/**
 * Admits an adapter's file operations so that one organization has at most {@code perOrganization} running at
 * a time; its further operations wait in its own queue, so one tenant's stuck or slow transfers never starve
 * another's (host backends run file work on a bounded pool, of which this keeps a share for everyone else).
 */
final class FairShare {
  private final int perOrganization;
  private final Map<String, Queue> queues = new HashMap<>();

  private static final class Queue {
    int running;
    final Deque<Runnable> waiting = new ArrayDeque<>();
  }

  FairShare(int perOrganization) {
    this.perOrganization = perOrganization;
  }

  /** Runs {@code work} for {@code organization} once it has a free slot; the slot frees when its future ends. */
  <T> Future<T> run(String organization, Supplier<Future<T>> work) {
    Promise<T> done = Promise.promise();
    Runnable task = () -> {
      Future<T> f;
      try {
        f = work.get();
      } catch (RuntimeException e) {
        f = Future.failedFuture(e);
      }
      f.onComplete(ar -> {
        finished(organization);
        done.handle(ar);
      });
    };
    synchronized (queues) {
      Queue q = queues.computeIfAbsent(organization, k -> new Queue());
      if (q.running >= perOrganization) {
        q.waiting.addLast(task);
        return done.future();
      }
      q.running++;
    }
    task.run();
    return done.future();
  }

  private void finished(String organization) {
    Runnable next;
    synchronized (queues) {
      Queue q = queues.get(organization);
      next = q.waiting.pollFirst();
      if (next == null && --q.running == 0) {
        queues.remove(organization);
      }
    }
    if (next != null) {
      next.run();
    }
  }

  /** How many operations of {@code organization} run now (for tests). */
  int running(String organization) {
    synchronized (queues) {
      Queue q = queues.get(organization);
      return q == null ? 0 : q.running;
    }
  }
}
