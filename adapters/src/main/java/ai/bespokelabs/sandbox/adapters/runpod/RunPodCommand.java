package ai.bespokelabs.sandbox.adapters.runpod;

import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.sshd.client.channel.ChannelExec;
import org.apache.sshd.client.session.ClientSession;
import org.apache.sshd.common.channel.StreamingChannel;
import org.apache.sshd.common.io.IoInputStream;
import org.apache.sshd.common.util.buffer.ByteArrayBuffer;

/**
 * One short command on a pod's SSH session, in MINA's asynchronous mode (no thread of its own): {@code input} is
 * written to its stdin and followed by an SSH EOF, its stdout is kept (up to {@link #MAX_OUTPUT} bytes), its
 * stderr dropped. Completes on {@code context} with the exit status, or fails when the channel ended without one
 * (the connection dropped) or did not end within {@code timeoutMs}.
 */
final class RunPodCommand {
  static final int MAX_OUTPUT = 64 * 1024;

  /** What the command printed and how it exited. */
  record Result(int status, String stdout) {}

  private RunPodCommand() {}

  static Future<Result> run(Context context, ClientSession session, String command, byte[] input, long timeoutMs) {
    ChannelExec channel;
    try {
      channel = session.createExecChannel(command);
      channel.setStreaming(StreamingChannel.Streaming.Async);
    } catch (IOException | RuntimeException e) {
      return Future.failedFuture(e);
    }
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    Future<Result> done = RunPodSsh.<Result>mina(context, p -> {
      try {
        channel.open().addListener(f -> {
          if (!f.isOpened()) {
            channel.close(true);
            p.tryFail(f.getException() == null ? new IOException("exec channel refused") : f.getException());
            return;
          }
          AtomicInteger left = new AtomicInteger(2); // the channel closed and its stdout was read to the end
          Runnable end = () -> {
            if (left.decrementAndGet() > 0) {
              return;
            }
            Integer status = channel.getExitStatus();
            if (status == null) {
              p.tryFail(new IOException("the SSH channel closed without an exit status"));
            } else {
              synchronized (out) {
                p.tryComplete(new Result(status, out.toString(StandardCharsets.UTF_8)));
              }
            }
          };
          channel.addCloseFutureListener(c -> end.run());
          drain(channel.getAsyncOut(), out, end);
          drain(channel.getAsyncErr(), null, () -> { });
          writeThenEof(channel, input, p);
        });
      } catch (IOException | RuntimeException e) {
        channel.close(true);
        p.tryFail(e);
      }
    });
    return done.timeout(timeoutMs, TimeUnit.MILLISECONDS).onFailure(t -> channel.close(true));
  }

  private static void writeThenEof(ChannelExec channel, byte[] input, Promise<Result> p) {
    try {
      if (input == null || input.length == 0) {
        channel.getAsyncIn().close(false);
        return;
      }
      channel.getAsyncIn().writeBuffer(new ByteArrayBuffer(input)).addListener(w -> {
        if (w.isWritten()) {
          channel.getAsyncIn().close(false); // a graceful close sends the SSH EOF after the data
        } else {
          channel.close(true);
          p.tryFail(w.getException() == null ? new IOException("stdin write failed") : w.getException());
        }
      });
    } catch (IOException | RuntimeException e) {
      channel.close(true);
      p.tryFail(e);
    }
  }

  /**
   * Reads {@code in} to its end on MINA's threads, keeping what fits in {@code into} (null: dropped), then runs
   * {@code ended}.
   */
  private static void drain(IoInputStream in, ByteArrayOutputStream into, Runnable ended) {
    ByteArrayBuffer buf = new ByteArrayBuffer(8192);
    in.read(buf).addListener(f -> {
      int n = f.getException() != null ? -1 : f.getRead();
      if (n < 0) {
        ended.run();
        return;
      }
      if (into != null) {
        synchronized (into) {
          into.write(buf.array(), buf.rpos(), Math.min(n, Math.max(0, MAX_OUTPUT - into.size())));
        }
      }
      drain(in, into, ended);
    });
  }
}
