package ai.bespokelabs.sandbox.adapters;

import java.util.ArrayDeque;
import java.util.Deque;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.function.Supplier;

/**
 * Where an adapter's file operations run: a bounded pool of platform threads of their own (a call stuck in
 * the file system never holds a carrier of the virtual threads that run creates and executions), of which one
 * organization holds at most {@code perOrganization} at a time; its further operations wait in its own queue,
 * so one tenant's stuck or slow transfers never starve another's.
 */
final class FilePool {
  private final ExecutorService threads;
  private final int perOrganization;
  private final Map<String, Queue> queues = new HashMap<>();

  private static final class Queue {
    int running;
    final Deque<Runnable> waiting = new ArrayDeque<>();
  }

  FilePool(String name, int threads, int perOrganization) {
    this.threads = Executors.newFixedThreadPool(threads, Thread.ofPlatform().daemon().name(name, 0).factory());
    this.perOrganization = perOrganization;
  }

  /** The default size: four threads per core, at least sixteen; a quarter of them per organization. */
  static FilePool sized(String name) {
    int threads = Math.max(16, 4 * Runtime.getRuntime().availableProcessors());
    return new FilePool(name, threads, Math.max(2, threads / 4));
  }

  /** Runs {@code work} for {@code organization} once it has a free slot. */
  <T> CompletableFuture<T> submit(String organization, Supplier<T> work) {
    CompletableFuture<T> f = new CompletableFuture<>();
    Runnable task = () -> {
      try {
        f.complete(work.get());
      } catch (Throwable t) {
        f.completeExceptionally(t);
      } finally {
        done(organization);
      }
    };
    synchronized (queues) {
      Queue q = queues.computeIfAbsent(organization, k -> new Queue());
      if (q.running >= perOrganization) {
        q.waiting.addLast(task);
        return f;
      }
      q.running++;
    }
    run(task, f);
    return f;
  }

  private void done(String organization) {
    Runnable next;
    synchronized (queues) {
      Queue q = queues.get(organization);
      next = q.waiting.pollFirst();
      if (next == null && --q.running == 0) {
        queues.remove(organization);
      }
    }
    if (next != null) {
      run(next, null);
    }
  }

  private void run(Runnable task, CompletableFuture<?> f) {
    try {
      threads.execute(task);
    } catch (RejectedExecutionException e) {
      if (f != null) {
        f.completeExceptionally(e);
      }
    }
  }

  /** How many operations of {@code organization} run now (for tests). */
  int running(String organization) {
    synchronized (queues) {
      Queue q = queues.get(organization);
      return q == null ? 0 : q.running;
    }
  }

  void shutdownNow() {
    threads.shutdownNow();
  }
}
