package ai.bespokelabs.sandbox.adapters.daytona;

import ai.bespokelabs.sandbox.adapters.exec.Timeouts;
import ai.bespokelabs.sandbox.adapters.spi.Execution;
import ai.bespokelabs.sandbox.adapters.spi.OutputSink;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.WebSocket;
import io.vertx.core.json.JsonObject;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One running Daytona session command: follows its log over the toolbox WebSocket
 * ({@code .../logs?follow=true}), demultiplexes it into the sink, and ends it with the exit code from the
 * command's status. Everything runs on the client's context; nothing blocks.
 *
 * <p>Backpressure: the WebSocket is paused and read {@link #WINDOW} frames ahead; a frame goes to the sink
 * only once the sink took the previous one (the futures {@link OutputSink#output} returns completed), and
 * one more frame is fetched per frame taken, so while the sink is full no more than the window is read and
 * the socket's TCP window closes on the daemon.
 *
 * <p>Dropped connections: Daytona replays a command's log from its start to every follower, so the log is
 * followed again (a few times) and the bytes already delivered are skipped; nothing is lost or repeated.
 *
 * <p>Signals and timeouts: Daytona has no per-command signal API, so both run {@code kill} on the
 * command's process group through {@code process/execute} ({@link SessionCommand#signal}). A timeout kills
 * the group with {@code KILL} and ends the run with exit code 124 and {@code timedOut}.
 */
final class DaytonaExecution implements Execution {
  private static final Logger LOG = LoggerFactory.getLogger(DaytonaExecution.class);
  static final int WINDOW = 16;
  static final int MAX_RECONNECTS = 5;
  /** After a timeout's kill, how long the log may take to end before the run is ended regardless. */
  static final long KILL_GRACE_MS = 2_000;

  private record Frame(int gen, Buffer data) {}

  private record End(int gen) {}

  private record Gone(int gen, boolean graceful) {}

  private final DaytonaClient client;
  private final String toolbox;
  private final String sessionId;
  private final String commandId;
  private final String tag;
  private final OutputSink sink;
  private final long t0;
  private final Runnable onEnd;
  private final LogDemux demux;
  /** What the log stream delivered and was not handled yet, in order. */
  private final ArrayDeque<Object> inbox = new ArrayDeque<>();
  private final List<Future<Void>> taking = new ArrayList<>();
  /** Waiting for the sink, the command's status, or a reconnect's pause: the inbox waits. */
  private boolean busy;
  private boolean draining;
  private WebSocket socket;
  private boolean timedOut;
  private boolean signalled;
  private boolean ended;
  private boolean stdinClosed;
  private int gen;
  private int reconnects;
  private long delivered;
  private long offset;
  private long timeoutTimer = -1;

  DaytonaExecution(DaytonaClient client, String toolbox, String sessionId, String commandId, String tag,
      boolean keepStdin, OutputSink sink, long t0, Runnable onEnd) {
    this.client = client;
    this.toolbox = toolbox;
    this.sessionId = sessionId;
    this.commandId = commandId;
    this.tag = tag;
    this.stdinClosed = !keepStdin;
    this.sink = sink;
    this.t0 = t0;
    this.onEnd = onEnd;
    this.demux = new LogDemux((stream, data) -> taking.add(sink.output(stream, data)));
  }

  /** Starts following the log (and the timeout clock); on the client's context. */
  void follow(int timeoutSecs) {
    if (timeoutSecs > 0) {
      timeoutTimer = client.context().owner().setTimer(TimeUnit.SECONDS.toMillis(timeoutSecs), t -> timeOut());
    }
    connect(gen);
  }

  private String command() {
    return toolbox + "/process/session/" + sessionId + "/command/" + commandId;
  }

  private void connect(int gen) {
    client.websocket(command() + "/logs?follow=true", ar -> {
      if (ar.failed()) {
        LOG.debug("Daytona log stream of {} could not be opened: {}", tag, ar.cause().getClass().getName());
        arrived(new Gone(gen, false));
        return;
      }
      WebSocket ws = ar.result();
      ws.pause();
      ws.handler(b -> arrived(new Frame(gen, b)));
      // a close frame comes through the (paused) stream after the data, the connection's end may not;
      // the daemon closes with 1000 once the command ended and its whole log was sent
      ws.endHandler(v -> arrived(Short.valueOf((short) 1000).equals(ws.closeStatusCode()) ? new End(gen)
          : new Gone(gen, false)));
      // Vert.x reports 1006 for a connection lost without a closing handshake
      ws.closeHandler(v -> arrived(new Gone(gen, Short.valueOf((short) 1000).equals(ws.closeStatusCode()))));
      ws.exceptionHandler(t -> LOG.debug("Daytona log stream of {}: {}", tag, t.getClass().getName()));
      if (ended) {
        ws.close();
      } else {
        socket = ws;
        ws.fetch(WINDOW);
      }
    });
  }

  private void arrived(Object item) {
    inbox.add(item);
    drain();
  }

  /**
   * Handles what arrived, in order, while nothing is awaited. Not re-entered: a frame that {@code fetch}
   * delivers at once is handled by the same loop.
   */
  private void drain() {
    if (draining) {
      return;
    }
    draining = true;
    try {
      while (!busy && !ended && !inbox.isEmpty()) {
        try {
          handle(inbox.poll());
        } catch (RuntimeException e) {
          LOG.warn("Daytona execution {} lost its output: {}", tag, e.getClass().getName());
          finish(null);
        }
      }
    } finally {
      draining = false;
    }
  }

  private void handle(Object item) {
    if (item instanceof Frame f) {
      if (f.gen() == gen) {
        deliver(f.data().getBytes());
      }
      return;
    }
    boolean normalEnd = item instanceof End e && e.gen() == gen;
    boolean dropped = item instanceof Gone g && g.gen() == gen && !g.graceful();
    if (!normalEnd && !dropped) {
      return;
    }
    if (timedOut) {
      finish(null);
      return;
    }
    busy = true;
    exitCode(normalEnd ? 20 : 1).onComplete(ar -> {
      Integer exit = ar.result();
      if (normalEnd && exit != null || reconnects++ >= MAX_RECONNECTS) {
        finish(exit);
        return;
      }
      client.delay(Math.min(1_000, 50L << reconnects)).onComplete(v -> {
        closeSocket();
        gen++;
        offset = 0;
        busy = false;
        connect(gen);
        drain();
      });
    });
  }

  /** One frame of the log, less what an earlier connection already delivered; the next once it was taken. */
  private void deliver(byte[] b) {
    long start = offset;
    offset += b.length;
    if (offset > delivered) {
      int from = (int) Math.max(0, delivered - start);
      demux.feed(from == 0 ? b : Arrays.copyOfRange(b, from, b.length));
      delivered = offset;
    }
    afterTaken(() -> {
      WebSocket ws = socket;
      if (ws != null) {
        ws.fetch(1);
      }
    });
  }

  /** Runs {@code next} once the sink took what was handed to it (at once when it already did). */
  private void afterTaken(Runnable next) {
    List<Future<Void>> pending = taking.stream().filter(f -> !f.isComplete()).toList();
    taking.clear();
    if (pending.isEmpty()) {
      next.run();
      return;
    }
    busy = true;
    // a failed output means the sink is gone: the program runs on, its output is dropped
    Future.join(pending).onComplete(ar -> client.onContext(() -> {
      busy = false;
      next.run();
      drain();
      return Future.succeededFuture();
    }));
  }

  /** The command's exit code, polled up to {@code attempts} times while it is not set yet; null if never. */
  private Future<Integer> exitCode(int attempts) {
    return client.call("execute", false, HttpMethod.GET, command(), null, null, client.requestTimeoutMs())
        .transform(ar -> {
          if (ar.succeeded()) {
            DaytonaClient.Resp r = ar.result();
            if (r.status() == 404) {
              return Future.succeededFuture(null);
            }
            try {
              if (r.ok() && client.json("execute", r, false).getValue("exitCode") instanceof Number n) {
                return Future.succeededFuture(n.intValue());
              }
            } catch (ProviderException e) {
              unavailable(e);
            }
          } else if (ar.cause() instanceof ProviderException e) {
            unavailable(e);
          }
          return attempts <= 1 ? Future.succeededFuture(null)
              : client.delay(50).compose(v -> exitCode(attempts - 1));
        })
        .recover(t -> Future.succeededFuture(null));
  }

  private void unavailable(ProviderException e) {
    LOG.debug("Daytona command status of {} unavailable: {}", tag, e.error().code().wire());
  }

  /** Ends the run exactly once: what the demultiplexer held back goes out first, then the end. */
  private void finish(Integer exit) {
    if (ended) {
      return;
    }
    ended = true;
    busy = true;
    if (timeoutTimer >= 0) {
      client.context().owner().cancelTimer(timeoutTimer);
    }
    closeSocket();
    stdinClosed = true;
    inbox.clear();
    demux.finish();
    afterTaken(() -> {
      int code = timedOut ? Timeouts.EXIT_CODE : exit == null ? -1 : exit;
      long durationMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
      try {
        onEnd.run();
      } finally {
        sink.exited(code, timedOut, signalled && !timedOut && code != 0, durationMs);
      }
    });
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
    kill("KILL").onComplete(ar -> {
      if (ar.failed() && ar.cause() instanceof ProviderException e) {
        LOG.debug("Daytona timeout kill of {} failed: {}", tag, e.error().code().wire());
      }
      client.context().owner().setTimer(KILL_GRACE_MS, t -> {
        if (!ended) {
          // the log did not end (provider unreachable or the program survived): stop waiting for it
          closeSocket();
          arrived(new End(gen));
        }
      });
    });
  }

  private Future<Void> kill(String signal) {
    JsonObject body = new JsonObject().put("command", SessionCommand.signal(tag, signal)).put("timeout", 10);
    return client.expect("signal", true, HttpMethod.POST, toolbox + "/process/execute", body).mapEmpty();
  }

  @Override
  public Future<Void> write(Buffer data) {
    if (stdinClosed) {
      return Future.failedFuture(ApiException.conflict("stdin is closed"));
    }
    if (data.length() == 0) {
      return Future.succeededFuture();
    }
    return input(Base64.getEncoder().encodeToString(data.getBytes()) + "\n");
  }

  @Override
  public Future<Void> closeStdin() {
    if (stdinClosed) {
      return Future.succeededFuture();
    }
    stdinClosed = true;
    return input(SessionCommand.EOF_LINE);
  }

  private Future<Void> input(String line) {
    return client.expect("stdin", true, HttpMethod.POST, command() + "/input", new JsonObject().put("data", line))
        .mapEmpty();
  }

  @Override
  public Future<Void> signal(String signal) {
    if (ended) {
      return Future.succeededFuture();
    }
    signalled = true;
    return kill(signal);
  }
}
