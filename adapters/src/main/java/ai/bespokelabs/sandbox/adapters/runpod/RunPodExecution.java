package ai.bespokelabs.sandbox.adapters.runpod;

import ai.bespokelabs.sandbox.adapters.exec.Timeouts;
import ai.bespokelabs.sandbox.adapters.spi.Execution;
import ai.bespokelabs.sandbox.adapters.spi.OutputSink;
import ai.bespokelabs.sandbox.adapters.spi.OutputSink.Stream;
import ai.bespokelabs.sandbox.core.error.ApiException;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.buffer.Buffer;
import java.io.IOException;
import java.io.OutputStream;
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.sshd.client.channel.ChannelExec;
import org.apache.sshd.client.session.ClientSession;
import org.apache.sshd.common.channel.StreamingChannel;
import org.apache.sshd.common.io.IoInputStream;
import org.apache.sshd.common.util.buffer.ByteArrayBuffer;

/**
 * One program on a pod, on an SSH exec channel in MINA's asynchronous mode: stdout and stderr are read with
 * {@link IoInputStream#read}, the next read issued only once the sink took the previous chunk (so the SSH window
 * stays closed and the remote program blocks while a client is slow); stdin is written with the channel's async
 * output stream and closed with an SSH EOF. The remote shell writes its pid (the process group sshd gave the
 * session) to {@code /tmp/.bsk-<execution id>.pid}; a signal is a second exec channel running {@code kill} on
 * that group. The exit code is the SSH {@code exit-status}, or 128 + the signal's number for an
 * {@code exit-signal}. Every MINA callback is handed back to the adapter's context.
 */
final class RunPodExecution implements Execution {
  private static final int CHUNK = 32 * 1024;
  private static final Map<String, Integer> SIGNALS = Map.of("HUP", 1, "INT", 2, "QUIT", 3, "KILL", 9, "TERM", 15,
      "PIPE", 13, "ALRM", 14, "USR1", 10, "USR2", 12);

  private final Context context;
  private final ClientSession session;
  private final ChannelExec channel;
  private final String pidFile;
  private final OutputSink sink;
  private final long startedNanos = System.nanoTime();
  private final AtomicInteger streamsLeft = new AtomicInteger(2);
  private final Promise<Void> closed = Promise.promise();
  private final boolean keepStdin;
  private final int timeoutSecs;
  private Future<Void> stdin = Future.succeededFuture();
  private boolean stdinOpen;
  private volatile boolean cancelled;
  private volatile boolean timedOut;
  private long timer = -1;

  private RunPodExecution(Context context, ClientSession session, ChannelExec channel, String pidFile,
      OutputSink sink, boolean keepStdin, int timeoutSecs) {
    this.context = context;
    this.session = session;
    this.channel = channel;
    this.pidFile = pidFile;
    this.sink = sink;
    this.keepStdin = keepStdin;
    this.stdinOpen = keepStdin;
    this.timeoutSecs = timeoutSecs;
  }

  /** Opens the channel running {@code commandLine} and starts reading its output; completes once it runs. */
  static Future<Execution> start(Context context, ClientSession session, String commandLine, String pidFile,
      OutputSink sink, boolean keepStdin, int timeoutSecs) {
    ChannelExec channel;
    try {
      channel = session.createExecChannel(commandLine);
      channel.setStreaming(StreamingChannel.Streaming.Async);
    } catch (IOException e) {
      return Future.failedFuture(e);
    }
    RunPodExecution run = new RunPodExecution(context, session, channel, pidFile, sink, keepStdin, timeoutSecs);
    return RunPodSsh.<Void>mina(context, p -> {
      try {
        channel.open().addListener(f -> {
          if (f.isOpened()) {
            p.tryComplete();
          } else {
            channel.close(true);
            p.tryFail(f.getException() == null ? new IOException("exec channel refused") : f.getException());
          }
        });
      } catch (IOException e) {
        p.tryFail(e);
      }
    }).map(v -> run.running());
  }

  private Execution running() {
    channel.addCloseFutureListener(f -> context.runOnContext(v -> closed.tryComplete()));
    if (!keepStdin) {
      sendEof();
    }
    if (timeoutSecs > 0) {
      timer = context.owner().setTimer(TimeUnit.SECONDS.toMillis(timeoutSecs), t -> {
        timedOut = true;
        kill("KILL");
      });
    }
    read(channel.getAsyncOut(), Stream.STDOUT);
    read(channel.getAsyncErr(), Stream.STDERR);
    return this;
  }

  private void read(IoInputStream in, Stream stream) {
    ByteArrayBuffer buf = new ByteArrayBuffer(CHUNK);
    in.read(buf).addListener(f -> context.runOnContext(v -> {
      int n = f.getException() != null ? -1 : f.getRead();
      if (n <= 0) {
        if (n == 0) {
          read(in, stream);
        } else {
          streamDone();
        }
        return;
      }
      byte[] data = Arrays.copyOfRange(buf.array(), buf.rpos(), buf.rpos() + n);
      sink.output(stream, data).onComplete(ar -> read(in, stream));
    }));
  }

  private void streamDone() {
    if (streamsLeft.decrementAndGet() > 0) {
      return;
    }
    closed.future().timeout(10, TimeUnit.SECONDS).onComplete(ar -> finish());
  }

  private void finish() {
    if (timer >= 0) {
      context.owner().cancelTimer(timer);
    }
    long durationMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startedNanos);
    if (timedOut) {
      sink.output(Stream.STDERR, Timeouts.message(timeoutSecs))
          .onComplete(ar -> sink.exited(Timeouts.EXIT_CODE, true, false, durationMs));
      return;
    }
    Integer status = channel.getExitStatus();
    String signal = channel.getExitSignal();
    int code = status != null ? status : signal != null ? 128 + SIGNALS.getOrDefault(signal, 15) : -1;
    channel.close(false);
    sink.exited(code, false, cancelled, durationMs);
  }

  @Override
  public Future<Void> write(Buffer data) {
    if (!stdinOpen) {
      return Future.failedFuture(new ApiException(409, "stdin is closed"));
    }
    byte[] bytes = data.getBytes();
    stdin = stdin.compose(v -> RunPodSsh.<Void>mina(context, p -> {
      try {
        channel.getAsyncIn().writeBuffer(new ByteArrayBuffer(bytes)).addListener(w -> {
          if (w.isWritten()) {
            p.tryComplete();
          } else {
            p.tryFail(w.getException() == null ? new IOException("stdin write failed") : w.getException());
          }
        });
      } catch (IOException | RuntimeException e) {
        p.tryFail(e);
      }
    }));
    return stdin.recover(t -> Future.failedFuture(RunPodClient.transportError("stdin", t, false)));
  }

  @Override
  public Future<Void> closeStdin() {
    if (!stdinOpen) {
      return Future.succeededFuture();
    }
    stdinOpen = false;
    stdin = stdin.transform(ar -> {
      sendEof();
      return Future.succeededFuture();
    });
    return stdin;
  }

  private void sendEof() {
    try {
      channel.getAsyncIn().close(false); // a graceful close sends the SSH EOF once written data went out
    } catch (RuntimeException ignored) {
      // the channel is closing anyway
    }
  }

  @Override
  public Future<Void> signal(String signal) {
    if (!SIGNALS.containsKey(signal)) {
      return Future.failedFuture(new ApiException(422, "unsupported signal: " + signal));
    }
    cancelled = true;
    return kill(signal);
  }

  /** {@code kill -s SIG} to the program's process group over a second exec channel. */
  private Future<Void> kill(String signal) {
    String command = "p=$(cat " + pidFile + " 2>/dev/null) && [ -n \"$p\" ] && { kill -s " + signal + " -- -\"$p\""
        + " 2>/dev/null || kill -s " + signal + " \"$p\"; }";
    return RunPodSsh.<Void>mina(context, p -> {
      try {
        ChannelExec k = session.createExecChannel(command);
        k.setOut(OutputStream.nullOutputStream());
        k.setErr(OutputStream.nullOutputStream());
        k.addCloseFutureListener(c -> p.tryComplete());
        k.open().addListener(f -> {
          if (!f.isOpened()) {
            k.close(true);
          }
        });
      } catch (IOException e) {
        p.tryFail(e);
      }
    }).timeout(30, TimeUnit.SECONDS).recover(t -> Future.failedFuture(RunPodClient.transportError("signal", t,
        false)));
  }
}
