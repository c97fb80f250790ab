package ai.bespokelabs.sandbox.adapters.ray;

import ai.bespokelabs.sandbox.adapters.exec.Timeouts;
import ai.bespokelabs.sandbox.adapters.spi.Execution;
import ai.bespokelabs.sandbox.adapters.spi.OutputSink;
import ai.bespokelabs.sandbox.adapters.spi.OutputSink.Stream;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.WebSocket;
import io.vertx.core.json.JsonObject;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One Ray job followed to its end: its log comes from the log-tail WebSocket
 * ({@code /api/jobs/{id}/logs/tail}, text frames, closed by Ray once the job is terminal), its end from the
 * job's status. Everything runs on the client's context; nothing blocks.
 *
 * <p>Flow control: the WebSocket is paused and one frame is fetched at a time, only once the sink took the
 * previous one (the future {@link OutputSink#output} returned completed); while the sink is full the socket's
 * TCP window closes on the dashboard.
 *
 * <p>Ray merges a job's stdout and stderr into one log, so all output goes to stdout. A dropped tail is
 * opened again (Ray replays the log from its start; the bytes already delivered are skipped). Exit status:
 * {@code SUCCEEDED} is 0; {@code FAILED} is the exit code Ray's message names ("... failed with exit code
 * N"), else 1, with the message's first line on stderr; {@code STOPPED} after a signal is 128 + the signal's
 * number with {@code cancelled}; after the timeout 124 with the seed's stderr line and {@code timedOut}.
 */
final class RayExecution implements Execution {
  private static final Logger LOG = LoggerFactory.getLogger(RayExecution.class);
  static final int MAX_RECONNECTS = 5;
  /** After a stop, how long the tail may take to end before the run is ended regardless. */
  static final long STOP_GRACE_MS = 10_000;
  /** How long a job's status may lag behind the end of its log. */
  static final long STATUS_WAIT_MS = 5_000;
  private static final Pattern EXIT_CODE = Pattern.compile("failed with exit code (-?\\d+)");

  private final RayClient client;
  private final RayJobs jobs;
  private final String submissionId;
  private final OutputSink sink;
  private final long t0;
  private int timeoutSecs;
  /** The connection of the tail now read; older ones' events are ignored. */
  private int gen;
  private int reconnects;
  private WebSocket socket;
  /** The last output handed to the sink: the next frame is fetched, and the end handled, once it completes. */
  private Future<Void> last = Future.succeededFuture();
  private long delivered;
  private long offset;
  private boolean timedOut;
  private String signalled;
  private boolean ended;
  private long timer = -1;

  RayExecution(RayClient client, RayJobs jobs, String submissionId, OutputSink sink, long t0) {
    this.client = client;
    this.jobs = jobs;
    this.submissionId = submissionId;
    this.sink = sink;
    this.t0 = t0;
  }

  /** Starts following the job (and its timeout clock); on the client's context. */
  void follow(int timeoutSecs) {
    this.timeoutSecs = timeoutSecs;
    if (timeoutSecs > 0) {
      timer = client.vertx().setTimer(TimeUnit.SECONDS.toMillis(timeoutSecs), t -> timeOut());
    }
    connect();
  }

  private void connect() {
    int g = gen;
    offset = 0;
    client.websocket(RayJobs.job(submissionId) + "/logs/tail").onComplete(ar -> {
      if (ar.failed()) {
        LOG.debug("Ray log tail of {} could not be opened: {}", submissionId, ar.cause().getClass().getName());
        closed(g, false);
        return;
      }
      WebSocket ws = ar.result();
      ws.pause();
      ws.handler(b -> frame(g, b));
      ws.endHandler(v -> closed(g, Short.valueOf((short) 1000).equals(ws.closeStatusCode())));
      ws.closeHandler(v -> closed(g, false));
      ws.exceptionHandler(t -> LOG.debug("Ray log tail of {}: {}", submissionId, t.getClass().getName()));
      if (ended || g != gen) {
        ws.close();
        return;
      }
      socket = ws;
      ws.fetch(1);
    });
  }

  /** One frame: what an earlier connection did not deliver goes to the sink; the next is fetched once taken. */
  private void frame(int g, Buffer data) {
    if (g != gen || ended) {
      return;
    }
    byte[] b = data.getBytes();
    long start = offset;
    offset += b.length;
    if (offset > delivered) {
      reconnects = 0; // new output: the tail works again
      int from = (int) Math.max(0, delivered - start);
      delivered = offset;
      last = sink.output(Stream.STDOUT, from == 0 ? b : Arrays.copyOfRange(b, from, b.length))
          .recover(t -> Future.succeededFuture()); // a failed sink is gone: the job runs on, its output dropped
    }
    WebSocket ws = socket;
    last.onComplete(v -> client.onContext(() -> {
      if (ws != null && g == gen && !ended) {
        ws.fetch(1);
      }
      return Future.succeededFuture();
    }));
  }

  /** The tail of connection {@code g} ended (once per connection): the job's status decides what follows. */
  private void closed(int g, boolean normal) {
    if (g != gen || ended) {
      return;
    }
    gen++;
    closeSocket();
    last.onComplete(v -> client.onContext(() -> status(normal ? STATUS_WAIT_MS : 0).onComplete(ar -> {
      JsonObject job = ar.succeeded() ? ar.result() : null;
      boolean terminal = job != null && RaySandboxes.terminal(job.getString("status"));
      if (terminal && normal) {
        finish(job);
      } else if (reconnects++ < MAX_RECONNECTS && !ended && (job != null || ar.failed())) {
        client.vertx().timer(Math.min(1_000, 50L << reconnects)).onComplete(t -> {
          if (!ended) {
            connect();
          }
        });
      } else {
        finish(job);
      }
    })));
  }

  /** The job's details, polled for up to {@code waitMs} while it is not terminal yet; null when gone. */
  private Future<JsonObject> status(long waitMs) {
    return jobs.details(submissionId, "execute").compose(job -> {
      if (job == null || RaySandboxes.terminal(job.getString("status")) || waitMs <= 0) {
        return Future.succeededFuture(job);
      }
      return client.vertx().timer(100).compose(t -> status(waitMs - 100));
    });
  }

  /** Ends the run exactly once from the job's final details (null: unknown, exit -1). */
  private void finish(JsonObject job) {
    if (ended) {
      return;
    }
    ended = true;
    gen++;
    if (timer >= 0) {
      client.vertx().cancelTimer(timer);
    }
    closeSocket();
    String status = job == null ? null : job.getString("status");
    int code;
    byte[] note = null;
    if (timedOut) {
      code = Timeouts.EXIT_CODE;
      note = Timeouts.message(timeoutSecs);
    } else if ("SUCCEEDED".equals(status)) {
      code = 0;
    } else if ("FAILED".equals(status)) {
      String message = job.getValue("message") instanceof String m ? m : "";
      Matcher m = EXIT_CODE.matcher(message);
      code = m.find() ? parse(m.group(1)) : 1;
      note = firstLine(message);
    } else if ("STOPPED".equals(status)) {
      code = 128 + signalNumber(signalled == null ? "TERM" : signalled);
    } else {
      code = -1;
      if (job != null) {
        // the job's end could not be followed: it is not left running unwatched
        stopJob("execute");
      }
    }
    boolean cancelled = signalled != null && !timedOut && code != 0;
    byte[] line = note;
    Future<Void> noted = line == null || line.length == 0 ? last
        : last.compose(v -> sink.output(Stream.STDERR, line)).recover(t -> Future.succeededFuture());
    noted.onComplete(v -> sink.exited(code, timedOut, cancelled,
        TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0)));
  }

  private static int parse(String n) {
    try {
      return Integer.parseInt(n);
    } catch (NumberFormatException e) {
      return 1;
    }
  }

  /** The first line of Ray's failure message (the rest repeats the log), capped. */
  static byte[] firstLine(String message) {
    String s = message.strip();
    int nl = s.indexOf('\n');
    s = nl >= 0 ? s.substring(0, nl) : s;
    int logs = s.indexOf(", last available logs");
    s = logs >= 0 ? s.substring(0, logs) : s;
    s = s.length() > 500 ? s.substring(0, 500) : s;
    return s.isEmpty() ? new byte[0] : (s + "\n").getBytes(StandardCharsets.UTF_8);
  }

  static int signalNumber(String signal) {
    return switch (signal) {
      case "KILL" -> 9;
      case "INT" -> 2;
      default -> 15;
    };
  }

  private void closeSocket() {
    WebSocket ws = socket;
    socket = null;
    if (ws != null && !ws.isClosed()) {
      ws.close();
    }
  }

  /** The timeout elapsed: the job is stopped; its tail then ends, or the run is ended after a grace period. */
  private void timeOut() {
    if (ended) {
      return;
    }
    timedOut = true;
    stopJob("execute");
  }

  private Future<Void> stopJob(String op) {
    Future<Void> f = jobs.stop(submissionId, op).mapEmpty();
    f.onFailure(t -> LOG.debug("Ray stop of {} failed: {}", submissionId,
        t instanceof ProviderException e ? e.error().code().wire() : t.getClass().getName()));
    client.vertx().setTimer(STOP_GRACE_MS, t -> {
      if (!ended) {
        // the tail did not end (dashboard unreachable or the job survived): stop waiting for it
        status(0).onComplete(ar -> finish(ar.succeeded() ? ar.result() : null));
      }
    });
    return f;
  }

  @Override
  public Future<Void> write(Buffer data) {
    return Future.failedFuture(ApiException.conflict("stdin is closed"));
  }

  @Override
  public Future<Void> closeStdin() {
    return Future.succeededFuture();
  }

  /**
   * Ray stops a job with {@code SIGTERM}, then {@code SIGKILL} after its grace period, whatever the signal
   * asked; the run reports 128 + the asked signal's number.
   */
  @Override
  public Future<Void> signal(String signal) {
    return client.onContext(() -> {
      if (ended) {
        return Future.succeededFuture();
      }
      signalled = signal;
      return stopJob("signal");
    });
  }
}
