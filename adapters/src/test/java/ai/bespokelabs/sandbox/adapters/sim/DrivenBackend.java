package ai.bespokelabs.sandbox.adapters.sim;

import ai.bespokelabs.sandbox.adapters.host.CapturingSink;
import ai.bespokelabs.sandbox.adapters.spi.Backend;
import ai.bespokelabs.sandbox.adapters.spi.Execution;
import ai.bespokelabs.sandbox.core.model.FileEntry;
import ai.bespokelabs.sandbox.adapters.spi.FileReader;
import ai.bespokelabs.sandbox.adapters.spi.FileWriter;
import ai.bespokelabs.sandbox.adapters.spi.OutputSink;
import ai.bespokelabs.sandbox.core.bus.Messages.CreateSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.DestroySandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.SnapshotSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecResult;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.FileOp;
import ai.bespokelabs.sandbox.core.bus.Messages.MetricsRequest;
import ai.bespokelabs.sandbox.core.bus.Messages.SandboxMetrics;
import ai.bespokelabs.sandbox.core.bus.Messages.Resource;
import ai.bespokelabs.sandbox.core.bus.Messages.SandboxDestroyed;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import java.util.List;
import java.util.function.Supplier;

/**
 * A backend driven from a test thread through its parts: every call is made on the backend's context, as the
 * adapter makes it, and waited for; a failed call throws its cause.
 */
public class DrivenBackend implements AutoCloseable {
  private final Backend backend;
  private final Context context;

  public DrivenBackend(Backend backend, Context context) {
    this.backend = backend;
    this.context = context;
    on(() -> backend.start(context));
  }

  /** Runs {@code call} on the backend's context and waits for its outcome. */
  public <T> T on(Supplier<Future<T>> call) {
    return OnContext.await(context, call);
  }

  public String create(CreateSandbox request) {
    return on(() -> backend.lifecycle().create(request));
  }

  public SandboxDestroyed destroy(DestroySandbox request) {
    return on(() -> backend.lifecycle().destroy(request));
  }

  public String adopt(CreateSandbox request, String resourceId) {
    return on(() -> backend.lifecycle().adopt(request, resourceId));
  }

  public SandboxMetrics metrics(MetricsRequest request) {
    return on(() -> backend.metrics().sample(request));
  }

  public String snapshot(SnapshotSandbox request) {
    return on(() -> backend.lifecycle().snapshot(request));
  }

  public Handle start(ExecSandbox request, OutputSink sink) {
    return new Handle(on(() -> backend.executions().start(request, sink)));
  }

  public ExecResult exec(ExecSandbox request) {
    Capture sink = new Capture(request.outputLimitBytes());
    start(request, sink);
    return sink.await();
  }

  public void checkHealth() {
    on(() -> backend.inventory().checkHealth());
  }

  public List<Resource> list() {
    return on(() -> backend.inventory().list());
  }

  public List<FileEntry> listFiles(FileOp op) {
    return on(() -> backend.files().list(op));
  }

  public Download openRead(FileOp op) {
    return new Download(on(() -> backend.files().openRead(op)));
  }

  public Upload openWrite(FileOp op) {
    return new Upload(on(() -> backend.files().openWrite(op)));
  }

  public Download openArchiveRead(FileOp op) {
    return new Download(on(() -> backend.files().openArchiveRead(op)));
  }

  public Upload openArchiveWrite(FileOp op) {
    return new Upload(on(() -> backend.files().openArchiveWrite(op)));
  }

  public void deleteFile(FileOp op) {
    on(() -> backend.files().delete(op));
  }

  @Override
  public void close() {
    on(backend::close);
  }

  /** A started program. */
  public final class Handle {
    private final Execution execution;

    Handle(Execution execution) {
      this.execution = execution;
    }

    public void writeStdin(byte[] data) {
      on(() -> execution.write(Buffer.buffer(data)));
    }

    public void closeStdin() {
      on(execution::closeStdin);
    }

    public void signal(String signal) {
      on(() -> execution.signal(signal));
    }
  }

  /** A download. */
  public final class Download implements AutoCloseable {
    private final FileReader reader;

    Download(FileReader reader) {
      this.reader = reader;
    }

    public long size() {
      return reader.size();
    }

    /** Fills {@code buf} but at the end; -1 at the end. */
    public int read(byte[] buf) {
      Buffer b = on(() -> reader.read(buf.length));
      if (b == null) {
        return -1;
      }
      b.getBytes(0, b.length(), buf, 0);
      return b.length();
    }

    @Override
    public void close() {
      on(reader::close);
    }
  }

  /** An upload. */
  public final class Upload {
    private final FileWriter writer;

    Upload(FileWriter writer) {
      this.writer = writer;
    }

    public void write(byte[] data) {
      on(() -> writer.write(Buffer.buffer(data)));
    }

    public FileEntry commit() {
      return on(writer::commit);
    }

    public void abort() {
      on(writer::abort);
    }
  }

  /** Collects an execution's capped output, taking every chunk at once. */
  public static class Capture implements OutputSink {
    private final CapturingSink capture;

    public Capture(int limitBytes) {
      capture = new CapturingSink(limitBytes);
    }

    @Override
    public Future<Void> output(Stream stream, byte[] data) {
      capture.output(stream, data);
      return Future.succeededFuture();
    }

    @Override
    public void exited(int exitCode, boolean timedOut, boolean cancelled, long durationMs) {
      capture.exited(exitCode, timedOut, cancelled, durationMs);
    }

    public ExecResult await() {
      return capture.await();
    }
  }
}
