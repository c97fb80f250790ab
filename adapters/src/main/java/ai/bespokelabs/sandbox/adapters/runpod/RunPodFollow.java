package ai.bespokelabs.sandbox.adapters.runpod;

import ai.bespokelabs.sandbox.adapters.spi.OutputSink;
import ai.bespokelabs.sandbox.adapters.spi.OutputSink.Stream;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;
import org.apache.sshd.client.channel.ChannelExec;
import org.apache.sshd.client.session.ClientSession;
import org.apache.sshd.common.channel.StreamingChannel;
import org.apache.sshd.common.io.IoInputStream;
import org.apache.sshd.common.util.buffer.ByteArrayBuffer;

/**
 * One follow of a detached program's output ({@link RunPodScripts#follow}) on an SSH exec channel in MINA's
 * asynchronous mode: stdout and stderr are read with {@link IoInputStream#read}, the next read issued only once
 * the sink took the previous chunk (the SSH window stays closed meanwhile), and every chunk handed to the sink
 * advances its stream's offset. Completes on the context with the follow's exit status once it ended (the
 * program's, all its output read; see {@link RunPodScripts#follow}), with null when the channel or session
 * dropped (resume from the offsets).
 *
 * <p>Run with a {@code started} promise, it follows {@link RunPodScripts#start} instead: the first stdout bytes
 * must be {@link RunPodScripts#STARTED}, read before any output is accepted and stderr is read; the promise
 * completes then. When stdout ends without the marker the program did not start, and the follow completes
 * with the launch's status (null: the channel dropped, or the marker did not come within the timeout) with the
 * promise left pending; it fails, not to be retried, when stdout begins with anything else.
 */
final class RunPodFollow {
  private static final int CHUNK = 32 * 1024;

  private final Context context;
  private final ChannelExec channel;
  private final OutputSink sink;
  private final long[] offsets;
  private final Promise<Void> closed = Promise.promise();
  private final Promise<Integer> done = Promise.promise();
  private final Promise<Void> started;
  private final long startTimeoutMs;
  private int streamsLeft = 2;

  private RunPodFollow(Context context, ChannelExec channel, OutputSink sink, long[] offsets,
      Promise<Void> started, long startTimeoutMs) {
    this.context = context;
    this.channel = channel;
    this.sink = sink;
    this.offsets = offsets;
    this.started = started;
    this.startTimeoutMs = startTimeoutMs;
  }

  /** @param offsets bytes of stdout and stderr delivered so far, advanced as chunks are handed to the sink */
  static Future<Integer> run(Context context, ClientSession session, String script, OutputSink sink,
      long[] offsets) {
    return run(context, session, script, sink, offsets, null, 0);
  }

  /**
   * @param started completed once {@link RunPodScripts#STARTED} was read (null: a plain follow, no marker)
   * @param startTimeoutMs how long the marker may take before the channel is closed (a null status: retry)
   */
  static Future<Integer> run(Context context, ClientSession session, String script, OutputSink sink,
      long[] offsets, Promise<Void> started, long startTimeoutMs) {
    ChannelExec channel;
    try {
      channel = session.createExecChannel(script);
      channel.setStreaming(StreamingChannel.Streaming.Async);
    } catch (IOException | RuntimeException e) {
      return Future.failedFuture(e);
    }
    RunPodFollow follow = new RunPodFollow(context, channel, sink, offsets, started, startTimeoutMs);
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
      } catch (IOException | RuntimeException e) {
        p.tryFail(e);
      }
    }).compose(v -> follow.reading());
  }

  private Future<Integer> reading() {
    channel.addCloseFutureListener(f -> context.runOnContext(v -> closed.tryComplete()));
    try {
      channel.getAsyncIn().close(false); // the follow reads no stdin
    } catch (RuntimeException ignored) {
      // the channel is closing anyway
    }
    if (started == null) {
      read(channel.getAsyncOut(), Stream.STDOUT);
      read(channel.getAsyncErr(), Stream.STDERR);
    } else {
      long timer = context.owner().setTimer(startTimeoutMs, t -> {
        if (!started.future().isComplete()) {
          channel.close(true);
        }
      });
      started.future().onComplete(ar -> context.owner().cancelTimer(timer));
      done.future().onComplete(ar -> context.owner().cancelTimer(timer));
      marker(new byte[0]);
    }
    return done.future();
  }

  /** Reads stdout until it held {@link RunPodScripts#STARTED} ({@code seen}: its bytes so far), then follows. */
  private void marker(byte[] seen) {
    byte[] expected = RunPodScripts.STARTED.getBytes(StandardCharsets.US_ASCII);
    IoInputStream out = channel.getAsyncOut();
    ByteArrayBuffer buf = new ByteArrayBuffer(CHUNK);
    out.read(buf).addListener(f -> context.runOnContext(v -> {
      int n = f.getException() != null ? -1 : f.getRead();
      if (n < 0) {
        notStarted();
        return;
      }
      byte[] got = new byte[seen.length + n];
      System.arraycopy(seen, 0, got, 0, seen.length);
      System.arraycopy(buf.array(), buf.rpos(), got, seen.length, n);
      int m = Math.min(got.length, expected.length);
      if (!Arrays.equals(got, 0, m, expected, 0, m)) {
        channel.close(true); // something else printed first: the channel cannot be read as ours
        done.tryFail(RunPodErrors.badResponse("execute", false));
        return;
      }
      if (got.length < expected.length) {
        marker(got);
        return;
      }
      started.tryComplete();
      read(channel.getAsyncErr(), Stream.STDERR);
      if (got.length == expected.length) {
        read(out, Stream.STDOUT);
        return;
      }
      byte[] data = Arrays.copyOfRange(got, expected.length, got.length);
      offsets[Stream.STDOUT.ordinal()] += data.length;
      sink.output(Stream.STDOUT, data).onComplete(ar -> read(out, Stream.STDOUT));
    }));
  }

  /** Stdout ended without the marker: completes with the launch's exit status once the channel closed. */
  private void notStarted() {
    streamsLeft = 1;
    streamDone();
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
      offsets[stream.ordinal()] += n;
      sink.output(stream, data).onComplete(ar -> read(in, stream));
    }));
  }

  private void streamDone() {
    if (--streamsLeft > 0) {
      return;
    }
    closed.future().timeout(10, TimeUnit.SECONDS).onComplete(ar -> {
      Integer status = ar.succeeded() ? channel.getExitStatus() : null;
      channel.close(status == null);
      done.tryComplete(status);
    });
  }
}
