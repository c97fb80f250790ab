package ai.bespokelabs.sandbox.adapters.runpod;

import ai.bespokelabs.sandbox.adapters.spi.OutputSink;
import ai.bespokelabs.sandbox.adapters.spi.OutputSink.Stream;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import java.io.IOException;
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
 */
final class RunPodFollow {
  private static final int CHUNK = 32 * 1024;

  private final Context context;
  private final ChannelExec channel;
  private final OutputSink sink;
  private final long[] offsets;
  private final Promise<Void> closed = Promise.promise();
  private final Promise<Integer> done = Promise.promise();
  private int streamsLeft = 2;

  private RunPodFollow(Context context, ChannelExec channel, OutputSink sink, long[] offsets) {
    this.context = context;
    this.channel = channel;
    this.sink = sink;
    this.offsets = offsets;
  }

  /** @param offsets bytes of stdout and stderr delivered so far, advanced as chunks are handed to the sink */
  static Future<Integer> run(Context context, ClientSession session, String script, OutputSink sink,
      long[] offsets) {
    ChannelExec channel;
    try {
      channel = session.createExecChannel(script);
      channel.setStreaming(StreamingChannel.Streaming.Async);
    } catch (IOException | RuntimeException e) {
      return Future.failedFuture(e);
    }
    RunPodFollow follow = new RunPodFollow(context, channel, sink, offsets);
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
    read(channel.getAsyncOut(), Stream.STDOUT);
    read(channel.getAsyncErr(), Stream.STDERR);
    return done.future();
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
