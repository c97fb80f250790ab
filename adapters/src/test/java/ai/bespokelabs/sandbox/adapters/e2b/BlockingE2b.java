package ai.bespokelabs.sandbox.adapters.e2b;

import ai.bespokelabs.sandbox.adapters.http.WindowedDownload;
import ai.bespokelabs.sandbox.adapters.files.ReadableFile;
import ai.bespokelabs.sandbox.adapters.files.SpooledWriter;
import ai.bespokelabs.sandbox.adapters.files.WritableFile;
import ai.bespokelabs.sandbox.adapters.host.ExecHandle;
import ai.bespokelabs.sandbox.adapters.sim.OnContext;
import ai.bespokelabs.sandbox.adapters.spi.Execution;
import ai.bespokelabs.sandbox.core.model.FileEntry;
import ai.bespokelabs.sandbox.adapters.spi.FileReader;
import ai.bespokelabs.sandbox.adapters.spi.FileWriter;
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
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import java.nio.file.Path;
import java.util.List;
import java.util.function.Supplier;

/**
 * The e2b backend driven from a test thread: each call runs on the backend's own context, as the adapter
 * verticle makes it, and the test thread waits for its outcome (a failure is thrown as it was failed).
 */
final class BlockingE2b implements AutoCloseable {
  final E2bProvider backend;
  final Context context;

  BlockingE2b(Vertx vertx, E2bProvider backend) {
    this.backend = backend;
    this.context = vertx.getOrCreateContext();
    await(() -> backend.start(context));
  }

  <T> T await(Supplier<Future<T>> work) {
    return OnContext.await(context, work);
  }

  String create(CreateSandbox request) {
    return await(() -> backend.lifecycle().create(request));
  }

  SandboxDestroyed destroy(DestroySandbox request) {
    return await(() -> backend.lifecycle().destroy(request));
  }

  String adopt(CreateSandbox request, String resourceId) {
    return await(() -> backend.lifecycle().adopt(request, resourceId));
  }

  void setTimeout(SetTimeout request) {
    await(() -> backend.lifecycle().extendTimeout(request));
  }

  List<Resource> list() {
    return await(() -> backend.inventory().list());
  }

  void checkHealth() {
    await(() -> backend.inventory().checkHealth());
  }

  SandboxMetrics metrics(MetricsRequest request) {
    return await(() -> backend.metrics().sample(request));
  }

  /** Starts the program; its control waits for each call. */
  ExecHandle start(ExecSandbox request, OutputSink sink) {
    Execution execution = await(() -> backend.executions().start(request, sink));
    return new ExecHandle() {
      @Override
      public void writeStdin(byte[] data) {
        await(() -> execution.write(Buffer.buffer(data)));
      }

      @Override
      public void closeStdin() {
        await(execution::closeStdin);
      }

      @Override
      public void signal(String signal) {
        await(() -> execution.signal(signal));
      }
    };
  }

  List<FileEntry> listFiles(FileOp op) {
    return await(() -> backend.files().list(op));
  }

  void deleteFile(FileOp op) {
    await(() -> backend.files().delete(op));
  }

  Download openRead(FileOp op) {
    return new Download(await(() -> backend.files().openRead(op)));
  }

  Upload openWrite(FileOp op) {
    return new Upload(await(() -> backend.files().openWrite(op)));
  }

  /** A download read as the gateway's file sessions read it, each read filling the buffer as far as the file goes. */
  final class Download implements ReadableFile {
    final FileReader reader;

    Download(FileReader reader) {
      this.reader = reader;
    }

    @Override
    public long size() {
      return reader.size();
    }

    @Override
    public int read(byte[] buf) {
      int n = 0;
      while (n < buf.length) {
        int want = buf.length - n;
        Buffer chunk = await(() -> reader.read(want));
        if (chunk == null) {
          break;
        }
        chunk.getBytes(0, chunk.length(), buf, n);
        n += chunk.length();
      }
      return n == 0 && buf.length > 0 ? -1 : n;
    }

    /** Chunks read ahead and not yet taken. */
    int queued() {
      return await(() -> Future.succeededFuture(((WindowedDownload) reader).queued()));
    }

    @Override
    public void close() {
      await(reader::close);
    }
  }

  /** An upload pushed chunk by chunk. */
  final class Upload implements WritableFile {
    final FileWriter writer;

    Upload(FileWriter writer) {
      this.writer = writer;
    }

    Path spool() {
      return ((SpooledWriter) writer).spool();
    }

    @Override
    public void write(byte[] data) {
      await(() -> writer.write(Buffer.buffer(data)));
    }

    @Override
    public FileEntry commit() {
      return await(writer::commit);
    }

    @Override
    public void abort() {
      await(writer::abort);
    }
  }

  @Override
  public void close() {
    await(backend::close);
  }
}
