package ai.bespokelabs.sandbox.adapters.host;

import ai.bespokelabs.sandbox.adapters.files.ReadableFile;
import ai.bespokelabs.sandbox.adapters.files.WritableFile;
import ai.bespokelabs.sandbox.adapters.spi.Backend;
import ai.bespokelabs.sandbox.adapters.spi.Capability;
import ai.bespokelabs.sandbox.adapters.spi.Execution;
import ai.bespokelabs.sandbox.adapters.spi.Executions;
import ai.bespokelabs.sandbox.core.model.FileEntry;
import ai.bespokelabs.sandbox.adapters.spi.FileReader;
import ai.bespokelabs.sandbox.adapters.spi.FileSystem;
import ai.bespokelabs.sandbox.adapters.spi.FileWriter;
import ai.bespokelabs.sandbox.adapters.spi.Inventory;
import ai.bespokelabs.sandbox.adapters.spi.Lifecycle;
import ai.bespokelabs.sandbox.adapters.spi.Metrics;
import ai.bespokelabs.sandbox.adapters.spi.OutputSink;
import ai.bespokelabs.sandbox.core.bus.Messages.CreateSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.DestroySandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.FileOp;
import ai.bespokelabs.sandbox.core.bus.Messages.MetricsRequest;
import ai.bespokelabs.sandbox.core.bus.Messages.Resource;
import ai.bespokelabs.sandbox.core.bus.Messages.SandboxDestroyed;
import ai.bespokelabs.sandbox.core.bus.Messages.SandboxMetrics;
import ai.bespokelabs.sandbox.core.bus.Messages.SetTimeout;
import ai.bespokelabs.sandbox.core.bus.Messages.SnapshotSandbox;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.WorkerExecutor;
import io.vertx.core.buffer.Buffer;
import java.io.IOException;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

/**
 * Serves a {@link BlockingProvider} as an asynchronous {@link Backend}; results complete on the adapter's
 * context. File work runs on a named, bounded worker pool ({@code adapter-<backend>-files}, of which the
 * adapter admits a quarter per organization, so one tenant's stuck file system cannot take it). Lifecycle and
 * execution control run on named virtual threads ({@code adapter-<backend>-N}): a stdin write blocks while
 * the program does not read, so a bounded pool there would let a few programs hold up every tenant's calls.
 */
public final class BlockingBackend implements Backend, Lifecycle, Executions, Inventory, FileSystem, Metrics {
  private final Parts parts = new Parts(this, this, this, this, this);
  /** Threads for file work; the adapter admits a quarter of them per organization. */
  public static final int FILE_THREADS = 4 * FileSystem.PER_ORGANIZATION;

  private final BlockingProvider provider;
  private ExecutorService threads;
  private Context context;
  private WorkerExecutor filePool;

  public BlockingBackend(BlockingProvider provider) {
    this.provider = provider;
  }

  /** The provider it serves (for node start-up work done directly on it). */
  public BlockingProvider provider() {
    return provider;
  }

  @Override
  public Parts parts() {
    return parts;
  }

  @Override
  public String name() {
    return provider.backend();
  }

  @Override
  public boolean nodeBound() {
    return provider.nodeBound();
  }

  @Override
  public Set<Capability> capabilities() {
    return provider.capabilities();
  }

  @Override
  public ai.bespokelabs.sandbox.adapters.spi.PlacementFacts placement() {
    return provider.placement();
  }

  @Override
  public java.util.Optional<String> unavailable() {
    return provider.unavailable();
  }

  @Override
  public Future<Void> start(Context context) {
    this.context = context;
    threads = Executors.newThreadPerTaskExecutor(Thread.ofVirtual().name("adapter-" + name() + "-", 0).factory());
    // no limit on execution time: a slow file system is the tenant's; the adapter times calls out
    filePool = context.owner().createSharedWorkerExecutor("adapter-" + name() + "-files", FILE_THREADS, 365,
        TimeUnit.DAYS);
    return Future.succeededFuture();
  }

  @Override
  public Future<Void> close() {
    if (threads != null) {
      threads.shutdownNow();
    }
    provider.close();
    return filePool == null ? Future.succeededFuture() : filePool.close();
  }

  private <T> Future<T> run(Callable<T> work) {
    CompletableFuture<T> done = new CompletableFuture<>();
    try {
      threads.execute(() -> {
        try {
          done.complete(work.call());
        } catch (Throwable t) {
          done.completeExceptionally(t);
        }
      });
    } catch (RejectedExecutionException e) {
      return Future.failedFuture(e);
    }
    return Future.fromCompletionStage(done, context);
  }

  private <T> Future<T> file(Callable<T> work) {
    return filePool.executeBlocking(work, false);
  }

  // ---- lifecycle --------------------------------------------------------------------------------

  @Override
  public Future<String> create(CreateSandbox request) {
    return run(() -> provider.create(request));
  }

  @Override
  public Future<SandboxDestroyed> destroy(DestroySandbox request) {
    return run(() -> provider.destroy(request));
  }

  @Override
  public Future<String> adopt(CreateSandbox request, String providerResourceId) {
    return run(() -> provider.adopt(request, providerResourceId));
  }

  @Override
  public Future<String> snapshot(SnapshotSandbox request) {
    return run(() -> provider.snapshot(request));
  }

  @Override
  public Future<Void> extendTimeout(SetTimeout request) {
    return run(() -> {
      provider.setTimeout(request);
      return null;
    });
  }

  // ---- executions ------------------------------------------------------------------------------

  @Override
  public Future<Execution> start(ExecSandbox request, OutputSink sink) {
    ExecSink blocking = new ExecSink() {
      @Override
      public void output(OutputSink.Stream stream, byte[] data) throws InterruptedException {
        Future<Void> taken = sink.output(stream, data);
        if (!taken.isComplete()) {
          try {
            taken.toCompletionStage().toCompletableFuture().get();
          } catch (ExecutionException e) {
            // the sink is gone: the program runs on, its output is dropped
          }
        }
      }

      @Override
      public void exited(int exitCode, boolean timedOut, boolean cancelled, long durationMs) {
        sink.exited(exitCode, timedOut, cancelled, durationMs);
      }
    };
    return run(() -> provider.start(request, blocking)).map(this::control);
  }

  private Execution control(ExecHandle handle) {
    return new Execution() {
      @Override
      public Future<Void> write(Buffer data) {
        return run(() -> {
          handle.writeStdin(data.getBytes());
          return null;
        });
      }

      @Override
      public Future<Void> closeStdin() {
        return run(() -> {
          handle.closeStdin();
          return null;
        });
      }

      @Override
      public Future<Void> signal(String signal) {
        return run(() -> {
          handle.signal(signal);
          return null;
        });
      }
    };
  }

  // ---- inventory and metrics -------------------------------------------------------------------

  @Override
  public Future<List<Resource>> list() {
    return run(provider::list);
  }

  @Override
  public Future<Void> checkHealth() {
    return run(() -> {
      provider.checkHealth();
      return null;
    });
  }

  @Override
  public Future<SandboxMetrics> sample(MetricsRequest request) {
    return run(() -> provider.metrics(request));
  }

  // ---- files -----------------------------------------------------------------------------------

  @Override
  public Future<List<FileEntry>> list(FileOp op) {
    return file(() -> provider.listFiles(op));
  }

  @Override
  public Future<FileReader> openRead(FileOp op) {
    return file(() -> reader(provider.openRead(op)));
  }

  @Override
  public Future<FileWriter> openWrite(FileOp op) {
    return file(() -> writer(provider.openWrite(op)));
  }

  @Override
  public Future<FileReader> openArchiveRead(FileOp op) {
    return file(() -> reader(provider.openArchiveRead(op)));
  }

  @Override
  public Future<FileWriter> openArchiveWrite(FileOp op) {
    return file(() -> writer(provider.openArchiveWrite(op)));
  }

  @Override
  public Future<Void> delete(FileOp op) {
    return file(() -> {
      provider.deleteFile(op);
      return null;
    });
  }

  private FileReader reader(ReadableFile file) {
    return new FileReader() {
      @Override
      public long size() {
        return file.size();
      }

      @Override
      public Future<Buffer> read(int max) {
        return file(() -> {
          byte[] buf = new byte[max];
          int n = file.read(buf);
          return n < 0 ? null : Buffer.buffer(n == max ? buf : Arrays.copyOf(buf, n));
        });
      }

      @Override
      public Future<Void> close() {
        return file(() -> {
          try {
            file.close();
          } catch (IOException ignored) {
            // nothing more to release
          }
          return null;
        });
      }
    };
  }

  private FileWriter writer(WritableFile file) {
    return new FileWriter() {
      @Override
      public Future<Void> write(Buffer data) {
        return file(() -> {
          file.write(data.getBytes());
          return null;
        });
      }

      @Override
      public Future<FileEntry> commit() {
        return file(file::commit);
      }

      @Override
      public Future<Void> abort() {
        return file(() -> {
          file.abort();
          return null;
        });
      }
    };
  }
}
