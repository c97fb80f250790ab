package ai.bespokelabs.sandbox.adapters.tensorlake;

import ai.bespokelabs.sandbox.adapters.exec.Timeouts;
import ai.bespokelabs.sandbox.adapters.spi.Execution;
import ai.bespokelabs.sandbox.adapters.spi.OutputSink;
import ai.bespokelabs.sandbox.core.error.ApiException;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClientResponse;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.core.parsetools.RecordParser;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/**
 * One daemon process: its output followed over SSE ({@code GET /api/v1/processes/{pid}/output/follow},
 * events {@code {line, timestamp, stream}}), stdin and signals through the process routes, and its end from
 * {@code GET /api/v1/processes/{pid}}. Everything runs on the client's context; nothing blocks.
 *
 * <p>Flow control: the SSE response is parsed through a {@link RecordParser} that is paused while the sink
 * has not taken the last line ({@link OutputSink#output}'s future), so a slow client slows the stream.
 *
 * <p>The daemon reports output in lines, each a JSON string ({@code line}); it has no byte-exact output. Each
 * line is delivered with a {@code \n}: a last line without one gains it, and bytes that are not UTF-8 arrive
 * as the daemon replaced them. When the stream ends or breaks, the lines the daemon kept
 * ({@code GET .../stdout}, {@code .../stderr}) are polled and those not yet delivered are, until the process
 * ended: nothing is lost or repeated.
 *
 * <p>A timeout sends {@code KILL} and ends the run with exit code 124 and {@code timedOut}; a process ended
 * by a signal exits 128 + the signal.
 */
final class TensorlakeExecution implements Execution {
  private static final Set<String> ENDED = Set.of("exited", "signaled", "killed", "failed", "completed", "finished");
  private static final long POLL_MS = 200;
  private static final int MAX_POLL_FAILURES = 25;
  private static final long FOLLOW_IDLE_MS = 600_000;

  private final TensorlakeClient client;
  private final TensorlakeClient.Daemon daemon;
  private final long pid;
  private final OutputSink sink;
  private final long t0;
  /** Lines delivered so far, per stream (0 stdout, 1 stderr). */
  private final int[] delivered = new int[2];
  private final StringBuilder data = new StringBuilder();
  private boolean stdinClosed;
  private boolean timedOut;
  private boolean signalled;
  private boolean ended;
  private boolean polling;
  private int pollFailures;
  private int timeoutSecs;
  private long timer = -1;

  TensorlakeExecution(TensorlakeClient client, TensorlakeClient.Daemon daemon, long pid, OutputSink sink, long t0,
      boolean keepStdin) {
    this.client = client;
    this.daemon = daemon;
    this.pid = pid;
    this.sink = sink;
    this.t0 = t0;
    this.stdinClosed = !keepStdin;
  }

  private String url(String suffix) {
    return daemon.base() + "/api/v1/processes/" + pid + suffix;
  }

  /** Starts following the output; kills the process after {@code timeoutSecs} (none when 0 or less). */
  void follow(int timeoutSecs) {
    this.timeoutSecs = timeoutSecs;
    client.onContext(() -> {
      if (timeoutSecs > 0) {
        timer = client.vertx().setTimer(TimeUnit.SECONDS.toMillis(timeoutSecs), t -> {
          timer = -1;
          if (!ended) {
            timedOut = true;
            sendSignal(9);
          }
        });
      }
      return client.stream("execute", HttpMethod.GET, url("/output/follow"), daemon, "text/event-stream",
          FOLLOW_IDLE_MS).onComplete(ar -> {
            if (ar.succeeded() && ar.result().response() != null) {
              read(ar.result().response());
            } else {
              poll();
            }
          });
    });
  }

  private void read(HttpClientResponse response) {
    RecordParser parser = RecordParser.newDelimited("\n", response);
    parser.exceptionHandler(t -> poll());
    parser.endHandler(v -> poll());
    parser.handler(line -> {
      String s = line.toString(StandardCharsets.UTF_8);
      if (s.endsWith("\r")) {
        s = s.substring(0, s.length() - 1);
      }
      if (s.isEmpty()) {
        dispatch(parser);
      } else if (s.startsWith("data:")) {
        if (!data.isEmpty()) {
          data.append('\n');
        }
        data.append(s.startsWith("data: ") ? s.substring(6) : s.substring(5));
      }
    });
    parser.resume();
  }

  /** One complete SSE event: an output line goes to the sink, and the parser waits for the sink. */
  private void dispatch(RecordParser parser) {
    String payload = data.toString();
    data.setLength(0);
    JsonObject event;
    try {
      event = new JsonObject(payload);
    } catch (RuntimeException e) {
      return; // not an event of ours
    }
    if (!(event.getValue("line") instanceof String text)) {
      return; // started or exited: the end is read from the process itself
    }
    int stream = "stderr".equals(event.getValue("stream")) ? 1 : 0;
    Future<Void> taken = deliver(stream, text);
    if (!taken.isComplete()) {
      parser.pause();
      taken.onComplete(v -> client.onContext(() -> {
        parser.resume();
        return Future.succeededFuture();
      }));
    }
  }

  private Future<Void> deliver(int stream, String text) {
    delivered[stream]++;
    return sink.output(stream == 0 ? OutputSink.Stream.STDOUT : OutputSink.Stream.STDERR,
        (text + "\n").getBytes(StandardCharsets.UTF_8));
  }

  /**
   * The stream ended or broke: the process's state and its kept lines are read; the lines not delivered yet
   * are, and the run ends once the process did; until then this repeats.
   */
  private void poll() {
    if (polling) {
      return;
    }
    polling = true;
    pollOnce();
  }

  private void pollOnce() {
    if (ended) {
      return;
    }
    client.expect("execute", false, HttpMethod.GET, url(""), daemon, null)
        .compose(r -> {
          JsonObject info = client.json("execute", r, false);
          return lines("/stdout", 0).compose(v -> lines("/stderr", 1)).map(info);
        })
        .onComplete(ar -> {
          if (ar.succeeded()) {
            pollFailures = 0;
            JsonObject info = ar.result();
            if (finished(info)) {
              end(info);
              return;
            }
          } else if (++pollFailures >= MAX_POLL_FAILURES) {
            end(null);
            return;
          }
          client.delay(POLL_MS).onComplete(v -> pollOnce());
        });
  }

  /** Delivers the kept lines of one stream beyond those delivered, one after the other. */
  private Future<Void> lines(String suffix, int stream) {
    return client.expect("execute", false, HttpMethod.GET, url(suffix), daemon, null).compose(r -> {
      JsonArray lines = client.json("execute", r, false).getJsonArray("lines", new JsonArray());
      List<Object> rest = lines.getList().subList(Math.min(delivered[stream], lines.size()), lines.size());
      Future<Void> f = Future.succeededFuture();
      for (Object o : List.copyOf(rest)) {
        String text = String.valueOf(o);
        f = f.compose(v -> deliver(stream, text));
      }
      return f;
    });
  }

  static boolean finished(JsonObject info) {
    return info.getValue("exit_code") instanceof Number || info.getValue("signal") instanceof Number
        || ENDED.contains(info.getString("status", ""));
  }

  private void end(JsonObject info) {
    if (ended) {
      return;
    }
    ended = true;
    if (timer != -1) {
      client.vertx().cancelTimer(timer);
    }
    long durationMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
    if (timedOut) {
      sink.output(OutputSink.Stream.STDERR, Timeouts.message(timeoutSecs))
          .onComplete(v -> sink.exited(Timeouts.EXIT_CODE, true, false, durationMs));
      return;
    }
    int code = -1;
    if (info != null && info.getValue("exit_code") instanceof Number n) {
      code = n.intValue();
    } else if (info != null && info.getValue("signal") instanceof Number n) {
      code = 128 + n.intValue();
    }
    sink.exited(code, false, signalled && code != 0, durationMs);
  }

  @Override
  public Future<Void> write(Buffer bytes) {
    return client.onContext(() -> {
      if (stdinClosed) {
        return Future.failedFuture(new ApiException(409, "stdin is closed"));
      }
      return client.call("stdin", true, HttpMethod.POST, url("/stdin"), daemon, bytes, "application/octet-stream")
          .map(r -> {
            if (!r.ok()) {
              throw client.httpError("stdin", r.status(), r.headers());
            }
            return null;
          });
    });
  }

  @Override
  public Future<Void> closeStdin() {
    return client.onContext(() -> {
      if (stdinClosed) {
        return Future.succeededFuture();
      }
      stdinClosed = true;
      return client.expect("stdin", true, HttpMethod.POST, url("/stdin/close"), daemon, null).mapEmpty();
    });
  }

  @Override
  public Future<Void> signal(String signal) {
    int number = switch (signal) {
      case "KILL" -> 9;
      case "INT" -> 2;
      default -> 15;
    };
    return client.onContext(() -> {
      signalled = true;
      return sendSignal(number);
    });
  }

  private Future<Void> sendSignal(int number) {
    return client.expect("signal", true, HttpMethod.POST, url("/signal"), daemon,
        new JsonObject().put("signal", number)).mapEmpty();
  }
}
