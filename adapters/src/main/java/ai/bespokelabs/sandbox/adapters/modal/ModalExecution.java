package ai.bespokelabs.sandbox.adapters.modal;

import ai.bespokelabs.sandbox.adapters.exec.Utf8;
import ai.bespokelabs.sandbox.adapters.modal.ModalClient.Router;
import ai.bespokelabs.sandbox.adapters.spi.Execution;
import ai.bespokelabs.sandbox.adapters.spi.OutputSink;
import ai.bespokelabs.sandbox.adapters.spi.OutputSink.Stream;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecSandbox;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError.Outcome;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import com.google.protobuf.ByteString;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.grpc.client.GrpcClientRequest;
import io.vertx.grpc.client.GrpcClientResponse;
import io.vertx.grpc.common.GrpcStatus;
import java.util.Arrays;
import java.util.List;
import modal.task_command_router.TaskCommandRouterOuterClass.TaskExecStartRequest;
import modal.task_command_router.TaskCommandRouterOuterClass.TaskExecStartResponse;
import modal.task_command_router.TaskCommandRouterOuterClass.TaskExecStdinWriteRequest;
import modal.task_command_router.TaskCommandRouterOuterClass.TaskExecStdinWriteResponse;
import modal.task_command_router.TaskCommandRouterOuterClass.TaskExecStdioFileDescriptor;
import modal.task_command_router.TaskCommandRouterOuterClass.TaskExecStdioReadRequest;
import modal.task_command_router.TaskCommandRouterOuterClass.TaskExecStdioReadResponse;
import modal.task_command_router.TaskCommandRouterOuterClass.TaskExecWaitRequest;
import modal.task_command_router.TaskCommandRouterOuterClass.TaskExecWaitResponse;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One program started through the command router; everything happens on the adapter's context, without blocking.
 *
 * <p>Output: one {@code TaskExecStdioRead} stream per file descriptor, read one message at a time and the next
 * asked for only once the sink took the last ({@link OutputSink#output}), so a slow client leaves the router
 * unread. Each stream counts the bytes it delivered; when one breaks before its end it is opened again at that
 * offset, so output is neither lost nor repeated ({@link #MAX_RESUMES} times in a row at most, with a pause).
 * Chunks end on UTF-8 character boundaries: an unfinished character waits for the rest.
 *
 * <p>Stdin: {@code TaskExecStdinWrite} at the running offset, one write at a time; {@code eof} closes it.
 * The end: {@code TaskExecWait} answers the exit code or the signal (reported as {@code 128 + signal}); the
 * router enforces {@code timeout_secs} itself, and a run that outlived it is reported as timed out (124).
 * Signals go to the program's process group through a helper exec ({@link ProcessGroup}); a signalled run that
 * did not exit 0 is reported as cancelled.
 */
final class ModalExecution implements Execution {
  static final int MAX_RESUMES = 5;
  static final long RESUME_PAUSE_MS = 100;
  /** How long after its timeout the router may take to report the end before the run is cut. */
  static final long WAIT_GRACE_MS = 10_000;
  static final int TIMED_OUT = 124;
  /** A kill this close to the timeout is the router's timeout. */
  static final long TIMEOUT_SLACK_MS = 250;
  static final int LOST = -1;
  private static final Logger LOG = LoggerFactory.getLogger(ModalExecution.class);

  private final ModalClient client;
  private final Vertx vertx;
  private final Router router;
  private final ExecSandbox request;
  private final OutputSink sink;
  private final Reader[] readers = new Reader[2];
  private Runnable onDone = () -> { };
  private String execId;
  private long t0;
  private long timer = -1;
  private Future<Void> stdinTail = Future.succeededFuture();
  private long stdinOffset;
  private boolean stdinClosed;
  private Integer exitCode;
  private boolean timedOut;
  private boolean signalled;
  private boolean done;
  private boolean abandoned;

  ModalExecution(ModalClient client, Router router, ExecSandbox request, OutputSink sink) {
    this.client = client;
    this.vertx = client.vertx();
    this.router = router;
    this.request = request;
    this.sink = sink;
  }

  void onDone(Runnable r) {
    this.onDone = r;
  }

  /** {@code TaskExecStart}; then the readers, the wait and (without kept stdin) the end of stdin. */
  Future<Execution> start(TaskExecStartRequest start) {
    execId = start.getExecId();
    t0 = System.nanoTime();
    return client.route(router, "TaskExecStart", start, TaskExecStartResponse.getDefaultInstance(),
        client.settings().requestTimeout().toMillis(), "execute").map(ok -> {
          readers[0] = new Reader(Stream.STDOUT);
          readers[1] = new Reader(Stream.STDERR);
          readers[0].open();
          readers[1].open();
          timer = vertx.setTimer(request.timeoutSecs() * 1000L, id -> timedOut = true);
          waitForEnd(0);
          if (!request.keepStdin()) {
            closeStdin();
          }
          return this;
        });
  }

  /** {@code TaskExecWait} (a long poll); asked again when the router was briefly unavailable. */
  private void waitForEnd(int attempt) {
    TaskExecWaitRequest wait = TaskExecWaitRequest.newBuilder().setTaskId(router.taskId()).setExecId(execId).build();
    long bound = request.timeoutSecs() * 1000L + WAIT_GRACE_MS;
    client.route(router, "TaskExecWait", wait, TaskExecWaitResponse.getDefaultInstance(), bound, "execute")
        .onComplete(ar -> {
          if (ar.succeeded()) {
            TaskExecWaitResponse r = ar.result();
            exitCode = r.hasSignal() ? 128 + r.getSignal() : r.getCode();
            // the router kills a command at its timeout (counted from its start there, a little before ours)
            long ms = (System.nanoTime() - t0) / 1_000_000;
            timedOut |= r.hasSignal() && ms >= request.timeoutSecs() * 1000L - TIMEOUT_SLACK_MS;
          } else if (!done && attempt < MAX_RESUMES && ar.cause() instanceof ProviderException p
              && p.error().retryable() && p.error().code() != ErrorCode.TIMEOUT) {
            vertx.setTimer(RESUME_PAUSE_MS * (attempt + 1), id -> waitForEnd(attempt + 1));
            return;
          } else {
            LOG.warn("modal exec {} ended without an exit status ({})", execId, ar.cause().getClass().getSimpleName());
            exitCode = LOST;
            timedOut |= ai.bespokelabs.sandbox.adapters.http.HttpFailures.timedOut(ar.cause());
          }
          finishIfEnded();
        });
  }

  @Override
  public Future<Void> write(Buffer data) {
    if (stdinClosed) {
      return Future.failedFuture(ApiException.conflict("stdin is closed"));
    }
    return stdin(data.getBytes(), false);
  }

  @Override
  public Future<Void> closeStdin() {
    if (stdinClosed) {
      return Future.succeededFuture();
    }
    return stdin(new byte[0], true);
  }

  /** One {@code TaskExecStdinWrite} after the ones before it, at the offset they reached. */
  private Future<Void> stdin(byte[] data, boolean eof) {
    stdinClosed |= eof;
    Future<Void> next = stdinTail.transform(any -> {
      TaskExecStdinWriteRequest req = TaskExecStdinWriteRequest.newBuilder().setTaskId(router.taskId())
          .setExecId(execId).setOffset(stdinOffset).setData(ByteString.copyFrom(data)).setEof(eof).build();
      return client.route(router, "TaskExecStdinWrite", req, TaskExecStdinWriteResponse.getDefaultInstance(),
          client.settings().requestTimeout().toMillis(), "stdin").map(ok -> {
            stdinOffset += data.length;
            return (Void) null;
          });
    });
    stdinTail = next;
    return next;
  }

  /**
   * The router offers no signal call: a helper exec sends the signal to the program's process group
   * ({@link ProcessGroup}). A program that already ended needs none.
   */
  @Override
  public Future<Void> signal(String signal) {
    if (done || exitCode != null) {
      return Future.succeededFuture();
    }
    List<String> argv;
    try {
      argv = ProcessGroup.signal(execId, signal);
    } catch (IllegalArgumentException e) {
      return Future.failedFuture(ApiException.invalid("unsupported signal"));
    }
    signalled = true;
    return ModalCommand.run(client, request.providerResourceId(), argv, null, "signal").compose(r -> r.exitCode() == 0
        || done || exitCode != null ? Future.succeededFuture()
        : Future.failedFuture(ModalErrors.of(ErrorCode.EXECUTION_FAILED, "signal", true, Outcome.FAILED)));
  }

  /** Stops reading; the sink gets nothing more. */
  void abandon() {
    abandoned = true;
    for (Reader r : readers) {
      if (r != null) {
        r.close();
      }
    }
    end();
  }

  private void finishIfEnded() {
    if (done || exitCode == null || readers[0] == null || !readers[0].ended || !readers[1].ended) {
      return;
    }
    end();
    if (!abandoned) {
      long ms = (System.nanoTime() - t0) / 1_000_000;
      boolean late = timedOut && exitCode != 0;
      sink.exited(late ? TIMED_OUT : exitCode, late, signalled && !late && exitCode != 0, ms);
    }
  }

  private void end() {
    if (done) {
      return;
    }
    done = true;
    if (timer >= 0) {
      vertx.cancelTimer(timer);
    }
    onDone.run();
  }

  private static byte[] concat(byte[] a, byte[] b) {
    if (a.length == 0) {
      return b;
    }
    byte[] out = Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, out, a.length, b.length);
    return out;
  }

  /** One output stream, read by demand and resumed at its offset when it breaks. */
  private final class Reader {
    final Stream stream;
    long offset;
    /** The unfinished UTF-8 sequence at the end of the output delivered so far. */
    byte[] carry = new byte[0];
    int resumes;
    boolean ended;
    GrpcClientRequest<TaskExecStdioReadRequest, TaskExecStdioReadResponse> call;
    GrpcClientResponse<TaskExecStdioReadRequest, TaskExecStdioReadResponse> response;

    Reader(Stream stream) {
      this.stream = stream;
    }

    void open() {
      if (done) {
        return;
      }
      TaskExecStdioReadRequest req = TaskExecStdioReadRequest.newBuilder().setTaskId(router.taskId())
          .setExecId(execId).setOffset(offset).setFileDescriptor(stream == Stream.STDOUT
              ? TaskExecStdioFileDescriptor.TASK_EXEC_STDIO_FILE_DESCRIPTOR_STDOUT
              : TaskExecStdioFileDescriptor.TASK_EXEC_STDIO_FILE_DESCRIPTOR_STDERR).build();
      client.read(router, req).onComplete(ar -> {
        if (ar.failed()) {
          broke(ar.cause());
          return;
        }
        call = ar.result().request();
        response = ar.result().response();
        Promise<Void> over = Promise.promise();
        response.handler(msg -> {
          byte[] data = msg.getData().toByteArray();
          offset += data.length;
          resumes = 0;
          byte[] all = concat(carry, data);
          int cut = Utf8.completePrefix(all, all.length);
          carry = Arrays.copyOfRange(all, cut, all.length);
          if (cut == 0 || abandoned) {
            response.fetch(1);
            return;
          }
          sink.output(stream, cut == all.length ? all : Arrays.copyOf(all, cut)).onComplete(v -> {
            if (!done) {
              response.fetch(1);
            }
          });
        });
        response.exceptionHandler(over::tryFail);
        response.endHandler(v -> over.tryComplete());
        response.end().onComplete(e -> {
          if (e.failed()) {
            over.tryFail(e.cause());
          }
        });
        over.future().onComplete(end -> {
          if (end.succeeded() && response.status() == GrpcStatus.OK) {
            finish();
          } else {
            broke(end.failed() ? end.cause() : new IllegalStateException(String.valueOf(response.status())));
          }
        });
        response.fetch(1);
      });
    }

    /** The stream broke before its end: opened again at the offset reached, after a pause. */
    void broke(Throwable cause) {
      if (done || ended) {
        return;
      }
      if (++resumes > MAX_RESUMES) {
        LOG.warn("modal exec {} {} stream lost after {} resumes ({})", execId, stream.wire(), MAX_RESUMES,
            cause.getClass().getSimpleName());
        if (exitCode == null) {
          exitCode = LOST;
        }
        finish();
        return;
      }
      vertx.setTimer(RESUME_PAUSE_MS * resumes, id -> open());
    }

    /** Hands on what is left of an unfinished character, then this stream has ended. */
    void finish() {
      Future<Void> flushed = carry.length == 0 || abandoned ? Future.succeededFuture() : sink.output(stream, carry);
      carry = new byte[0];
      flushed.onComplete(v -> {
        ended = true;
        finishIfEnded();
      });
    }

    /** Stops reading and cancels the stream (an HTTP/2 reset) when it is still open. */
    void close() {
      ended = true;
      if (response != null) {
        response.handler(null);
      }
      if (call != null) {
        call.cancel();
      }
    }
  }
}
