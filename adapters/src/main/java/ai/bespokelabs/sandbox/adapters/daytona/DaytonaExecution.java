package ai.bespokelabs.sandbox.adapters.daytona;

import ai.bespokelabs.sandbox.adapters.host.ExecHandle;
import ai.bespokelabs.sandbox.adapters.host.ExecSink;
import ai.bespokelabs.sandbox.adapters.exec.Timeouts;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.WebSocket;
import io.vertx.core.json.JsonObject;
import java.util.Arrays;
import java.util.Base64;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One running Daytona session command: follows its log over the toolbox WebSocket
 * ({@code .../logs?follow=true}), demultiplexes it into the sink, and ends it with the exit code from the
 * command's status.
 *
 * <p>Backpressure: the WebSocket is paused and read {@link #WINDOW} frames ahead; a pump thread (virtual)
 * hands frames to the sink and fetches one more frame per frame consumed, so while the sink blocks no more
 * than the window is read and the socket's TCP window closes on the daemon.
 *
 * <p>Dropped connections: Daytona replays a command's log from its start to every follower, so the pump
 * reconnects (a few times) and skips the bytes it already delivered; nothing is lost or repeated.
 *
 * <p>Signals and timeouts: Daytona has no per-command signal API, so both run {@code kill} on the
 * command's process group through the blocking {@code process/execute} ({@link SessionCommand#signal}).
 * A timeout kills the group with {@code KILL} and ends the run with exit code 124 and {@code timedOut}.
 */
final class DaytonaExecution implements ExecHandle {
  private static final Logger LOG = LoggerFactory.getLogger(DaytonaExecution.class);
  static final int WINDOW = 16;
  static final int MAX_RECONNECTS = 5;
  /** After a timeout's kill, how long the log may take to end before the run is ended regardless. */
  static final long KILL_GRACE_MS = 2_000;

  private record Frame(int gen, Buffer data) {}

  private record End(int gen) {}

  private record Gone(int gen, boolean graceful) {}

  private final Vertx vertx;
  private final DaytonaClient client;
  private final String toolbox;
  private final String sessionId;
  private final String commandId;
  private final String tag;
  private final ExecSink sink;
  private final long t0;
  private final LinkedBlockingQueue<Object> inbox = new LinkedBlockingQueue<>();
  private final Runnable onEnd;
  private volatile WebSocket socket;
  private volatile boolean timedOut;
  private volatile boolean signalled;
  private volatile boolean ended;
  private volatile int currentGen;
  private boolean stdinClosed; // guarded by this
  private long timeoutTimer = -1;

  DaytonaExecution(Vertx vertx, DaytonaClient client, String toolbox, String sessionId, String commandId, String tag,
      boolean keepStdin, ExecSink sink, long t0, Runnable onEnd) {
    this.vertx = vertx;
    this.client = client;
    this.toolbox = toolbox;
    this.sessionId = sessionId;
    this.commandId = commandId;
    this.tag = tag;
    this.stdinClosed = !keepStdin;
    this.sink = sink;
    this.t0 = t0;
    this.onEnd = onEnd;
  }

  /** Starts following the log (and the timeout clock); returns at once. */
  void follow(int timeoutSecs) {
    if (timeoutSecs > 0) {
      timeoutTimer = vertx.setTimer(TimeUnit.SECONDS.toMillis(timeoutSecs), t -> Thread.ofVirtual()
          .name("daytona-timeout-" + tag).start(this::timeOut));
    }
    Thread.ofVirtual().name("daytona-exec-" + tag).start(this::pump);
  }

  private String command() {
    return toolbox + "/process/session/" + sessionId + "/command/" + commandId;
  }

  private void connect(int gen) {
    client.websocket(command() + "/logs?follow=true", ar -> {
      if (ar.failed()) {
        LOG.debug("Daytona log stream of {} could not be opened: {}", tag, ar.cause().getClass().getName());
        inbox.add(new Gone(gen, false));
        return;
      }
      WebSocket ws = ar.result();
      ws.pause();
      ws.handler(b -> inbox.add(new Frame(gen, b)));
      // a close frame comes through the (paused) stream after the data, the connection's end may not;
      // the daemon closes with 1000 once the command ended and its whole log was sent
      ws.endHandler(v -> inbox.add(Short.valueOf((short) 1000).equals(ws.closeStatusCode()) ? new End(gen)
          : new Gone(gen, false)));
      // Vert.x reports 1006 for a connection lost without a closing handshake
      ws.closeHandler(v -> inbox.add(new Gone(gen, Short.valueOf((short) 1000).equals(ws.closeStatusCode()))));
      ws.exceptionHandler(t -> LOG.debug("Daytona log stream of {}: {}", tag, t.getClass().getName()));
      socket = ws;
      if (ended) {
        ws.close();
      } else {
        ws.fetch(WINDOW);
      }
    });
  }

  /** Delivers the log to the sink until the command ended, then reports the end exactly once. */
  private void pump() {
    LogDemux demux = new LogDemux(sink::output);
    Integer exit = null;
    int gen = 0;
    int reconnects = 0;
    long delivered = 0;
    long offset = 0;
    try {
      connect(gen);
      while (true) {
        Object item = inbox.take();
        if (item instanceof Frame f) {
          if (f.gen() != gen) {
            continue;
          }
          byte[] b = f.data().getBytes();
          long start = offset;
          offset += b.length;
          if (offset > delivered) {
            // an earlier connection may already have delivered the start of this frame
            int from = (int) Math.max(0, delivered - start);
            demux.feed(from == 0 ? b : Arrays.copyOfRange(b, from, b.length));
            delivered = offset;
          }
          WebSocket ws = socket;
          if (ws != null) {
            ws.fetch(1);
          }
          continue;
        }
        boolean normalEnd = item instanceof End e && e.gen() == gen;
        boolean dropped = item instanceof Gone g && g.gen() == gen && !g.graceful();
        if (!normalEnd && !dropped) {
          continue;
        }
        if (timedOut) {
          break;
        }
        exit = exitCode(normalEnd ? 20 : 1);
        if (normalEnd && exit != null) {
          break;
        }
        if (reconnects++ >= MAX_RECONNECTS) {
          break;
        }
        Thread.sleep(Math.min(1_000, 50L << reconnects));
        closeSocket();
        gen++;
        currentGen = gen;
        offset = 0;
        connect(gen);
      }
      demux.finish();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (RuntimeException e) {
      LOG.warn("Daytona execution {} lost its output: {}", tag, e.getClass().getName());
    }
    finish(exit);
  }

  /** The command's exit code, polled up to {@code attempts} times while it is not set yet; null if never. */
  private Integer exitCode(int attempts) throws InterruptedException {
    for (int i = 0; i < attempts; i++) {
      try {
        DaytonaClient.Resp r = client.call("execute", false, HttpMethod.GET, command(), null, null,
            client.requestTimeoutMs());
        if (r.ok()) {
          JsonObject cmd = client.json("execute", r, false);
          if (cmd.getValue("exitCode") instanceof Number n) {
            return n.intValue();
          }
        } else if (r.status() == 404) {
          return null;
        }
      } catch (ProviderException e) {
        LOG.debug("Daytona command status of {} unavailable: {}", tag, e.error().code().wire());
      }
      if (i + 1 < attempts) {
        Thread.sleep(50);
      }
    }
    return null;
  }

  private void finish(Integer exit) {
    ended = true;
    if (timeoutTimer >= 0) {
      vertx.cancelTimer(timeoutTimer);
    }
    closeSocket();
    synchronized (this) {
      stdinClosed = true;
    }
    int code = timedOut ? Timeouts.EXIT_CODE : exit == null ? -1 : exit;
    long durationMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
    try {
      onEnd.run();
    } finally {
      sink.exited(code, timedOut, signalled && !timedOut && code != 0, durationMs);
    }
  }

  private void closeSocket() {
    WebSocket ws = socket;
    socket = null;
    if (ws != null && !ws.isClosed()) {
      ws.close();
    }
  }

  /** The timeout elapsed: kill the group; the log then ends, or is ended after a grace period. */
  private void timeOut() {
    if (ended) {
      return;
    }
    timedOut = true;
    try {
      kill("KILL");
    } catch (ProviderException e) {
      LOG.debug("Daytona timeout kill of {} failed: {}", tag, e.error().code().wire());
    }
    vertx.setTimer(KILL_GRACE_MS, t -> {
      if (!ended) {
        // the log did not end (provider unreachable or the program survived): stop waiting for it
        inbox.add(new End(currentGen));
        closeSocket();
      }
    });
  }

  private void kill(String signal) {
    JsonObject body = new JsonObject().put("command", SessionCommand.signal(tag, signal)).put("timeout", 10);
    client.expect("signal", true, HttpMethod.POST, toolbox + "/process/execute", body);
  }

  @Override
  public void writeStdin(byte[] data) {
    synchronized (this) {
      if (stdinClosed) {
        throw ApiException.conflict("stdin is closed");
      }
    }
    if (data.length > 0) {
      input(Base64.getEncoder().encodeToString(data) + "\n");
    }
  }

  @Override
  public void closeStdin() {
    synchronized (this) {
      if (stdinClosed) {
        return;
      }
      stdinClosed = true;
    }
    input(SessionCommand.EOF_LINE);
  }

  private void input(String line) {
    client.expect("stdin", true, HttpMethod.POST, command() + "/input", new JsonObject().put("data", line));
  }

  @Override
  public void signal(String signal) {
    if (ended) {
      return;
    }
    signalled = true;
    kill(signal);
  }
}
