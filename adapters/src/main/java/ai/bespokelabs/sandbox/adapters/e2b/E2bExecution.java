package ai.bespokelabs.sandbox.adapters.e2b;

import ai.bespokelabs.sandbox.adapters.e2b.ConnectEnvelope.Frame;
import ai.bespokelabs.sandbox.adapters.e2b.E2bClient.Envd;
import ai.bespokelabs.sandbox.adapters.exec.Timeouts;
import ai.bespokelabs.sandbox.adapters.exec.Utf8;
import ai.bespokelabs.sandbox.adapters.spi.Execution;
import ai.bespokelabs.sandbox.adapters.spi.OutputSink;
import ai.bespokelabs.sandbox.adapters.spi.OutputSink.Stream;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecSandbox;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError;
import ai.bespokelabs.sandbox.core.error.ProviderError.Outcome;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClientRequest;
import io.vertx.core.http.HttpClientResponse;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.util.Arrays;
import java.util.Base64;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One program started through envd's server-streaming {@code process.Process/Start}; everything happens on
 * the context that started it (the adapter's), without blocking.
 *
 * <p>Backpressure: the HTTP response stays paused and is read by demand: at most {@link #WINDOW} chunks are
 * asked for, and more only once those were decoded and their output taken by the sink (the future
 * {@link OutputSink#output} returns), so a slow client leaves envd unread and it stops reading the program's
 * pipes, as a local pipe would.
 *
 * <p>Timeout: our own timer sends {@code SIGKILL} at {@code timeoutSecs} and the run ends as exit 124, timed
 * out; {@code Connect-Timeout-Ms} (a little later) is a backstop should the kill not arrive. A stream that
 * breaks before its end event ends the run with exit code -1 after a best-effort kill, since its outcome
 * is unknown.
 */
final class E2bExecution implements Execution {
  static final int WINDOW = 8;
  /** How long after the kill of a timed-out program its stream may take to end before it is cut. */
  static final long KILL_GRACE_MS = 5_000;
  /** envd's keepalive interval, in seconds, that we ask for (the SDKs' value). */
  static final int KEEPALIVE_SECS = 50;
  /** Exit code reported when the stream broke and the program's fate is unknown. */
  static final int LOST = -1;
  /** Exit statuses of processes ended by a signal, by Go's {@code ProcessState.String()} text. */
  private static final Map<String, Integer> SIGNALS = Map.of("signal: hangup", 1, "signal: interrupt", 2,
      "signal: quit", 3, "signal: aborted", 6, "signal: killed", 9, "signal: terminated", 15);
  private static final Logger LOG = LoggerFactory.getLogger(E2bExecution.class);

  private final E2bClient client;
  private final Vertx vertx;
  private final Envd envd;
  private final ExecSandbox request;
  private final OutputSink sink;
  /** Completes with this execution once envd reported the program's pid; fails when it did not start. */
  private final Promise<Execution> handle = Promise.promise();
  private final ConnectEnvelope.Decoder decoder = new ConnectEnvelope.Decoder();
  /** The unfinished UTF-8 sequence at the end of each stream's output so far. */
  private final byte[][] carry = {new byte[0], new byte[0]};
  private Runnable onDone = () -> { };

  private HttpClientRequest httpRequest;
  private HttpClientResponse response;
  private long startTimer = -1;
  private long timer = -1;
  private long t0;
  private long pid = -1;
  /** Chunks received since more were asked for. */
  private int fed;
  private boolean started;
  private boolean busy;
  private boolean httpEnded;
  private boolean ended;
  private boolean done;
  private boolean timedOut;
  private boolean signalled;
  private boolean abandoned;
  private boolean stdinClosed;
  private JsonObject end;
  private String endError;
  private Throwable failure;

  E2bExecution(E2bClient client, Envd envd, ExecSandbox request, OutputSink sink) {
    this.client = client;
    this.vertx = client.vertx();
    this.envd = envd;
    this.request = request;
    this.sink = sink;
  }

  void onDone(Runnable r) {
    this.onDone = r;
  }

  /** Sends the Start call; completes once envd reported the program's pid. */
  Future<Execution> start(JsonObject startRequest) {
    t0 = System.nanoTime();
    long deadlineMs = request.timeoutSecs() * 1000L + KILL_GRACE_MS;
    RequestOptions options = client.envdOptions(envd, HttpMethod.POST, "/process.Process/Start")
        .putHeader("Content-Type", "application/connect+json")
        .putHeader("Connect-Protocol-Version", "1")
        .putHeader("Connect-Timeout-Ms", String.valueOf(deadlineMs))
        .putHeader("Keepalive-Ping-Interval", String.valueOf(KEEPALIVE_SECS));
    Buffer body = ConnectEnvelope.encode(0, startRequest.toBuffer());
    client.http().request(options)
        .compose(req -> {
          httpRequest = req;
          req.exceptionHandler(this::fail);
          return req.send(body);
        })
        .onComplete(ar -> {
          if (ar.failed()) {
            fail(ar.cause());
          } else {
            answered(ar.result());
          }
        });
    startTimer = vertx.setTimer(client.settings().requestTimeout().toMillis(), id -> {
      if (handle.tryFail(E2bErrors.transport(new TimeoutException("no start event"), "execute"))) {
        abandon();
      }
    });
    return handle.future();
  }

  private void answered(HttpClientResponse resp) {
    resp.pause();
    response = resp;
    String type = resp.getHeader("Content-Type");
    if (resp.statusCode() != 200 || type == null || !type.startsWith("application/connect+json")) {
      int status = resp.statusCode();
      String retryAfter = resp.getHeader("Retry-After");
      resp.resume();
      resp.body().onComplete(b -> fail(E2bClient.connectFailure(status == 200 ? 502 : status,
          b.succeeded() ? b.result() : null, retryAfter, "execute")));
      return;
    }
    resp.handler(chunk -> {
      if (!done) {
        decoder.feed(chunk);
        fed++;
        drain();
      }
    });
    resp.exceptionHandler(this::fail);
    resp.endHandler(v -> {
      httpEnded = true;
      drain();
    });
    resp.fetch(WINDOW);
  }

  /** Stops reading and cuts the stream; the sink gets nothing more. */
  void abandon() {
    abandoned = true;
    cut();
  }

  private void cut() {
    if (httpRequest != null) {
      httpRequest.reset();
    }
    fail(new IOException("stream cut"));
  }

  /** Ends the run with {@code t}; while the sink has not taken the last output, once it has (ends come last). */
  private void fail(Throwable t) {
    if (done || failure != null) {
      return;
    }
    failure = t;
    if (!busy || abandoned) {
      finish();
    }
  }

  private void onTimeout() {
    if (done) {
      return;
    }
    timedOut = true;
    kill(pid);
    vertx.setTimer(KILL_GRACE_MS, id -> {
      if (!done) {
        cut();
      }
    });
  }

  private void kill(long process) {
    client.sendUnary(envd, "/process.Process/SendSignal", new JsonObject()
        .put("process", new JsonObject().put("pid", process)).put("signal", "SIGNAL_SIGKILL"));
  }

  // ---- reading ---------------------------------------------------------------------------------------------

  /** Decodes what arrived and hands it on; asks for more once it was taken. */
  private void drain() {
    if (busy || done) {
      return;
    }
    try {
      while (true) {
        Frame f = decoder.next();
        if (f == null) {
          if (httpEnded) {
            flushAndFinish(); // the stream ended without its end envelope
          } else if (fed > 0) {
            int n = fed;
            fed = 0;
            response.fetch(n);
          }
          return;
        }
        if (f.compressed()) {
          throw new ConnectEnvelope.FramingException("compressed envelope was not asked for");
        }
        JsonObject msg = new JsonObject(f.message());
        if (f.endStream()) {
          ended = true;
          JsonObject err = msg.getJsonObject("error");
          endError = err == null ? null : err.getString("code", "unknown");
          flushAndFinish();
          return;
        }
        JsonObject event = msg.getJsonObject("event", new JsonObject());
        if (event.containsKey("start")) {
          onStart(event.getJsonObject("start").getLong("pid", 0L));
          if (done) {
            return;
          }
        } else if (event.containsKey("data")) {
          if (!started) {
            throw new ConnectEnvelope.FramingException("output before the start event");
          }
          JsonObject data = event.getJsonObject("data");
          byte[] out = decode(data, "stdout");
          byte[] err = decode(data, "stderr");
          Future<Void> taken = deliver(Stream.STDOUT, out, 0).compose(v -> deliver(Stream.STDERR, err, 1));
          if (!taken.isComplete()) {
            busy = true;
            taken.onComplete(v -> {
              busy = false;
              if (failure != null) {
                finish();
              } else {
                drain();
              }
            });
            return;
          }
        } else if (event.containsKey("end")) {
          end = event.getJsonObject("end");
        }
        // keepalive and events this version does not know are skipped
      }
    } catch (RuntimeException e) {
      // a malformed envelope or message (framing, JSON, base64), or a sink that threw
      fail(e);
    }
  }

  private void onStart(long startedPid) {
    started = true;
    vertx.cancelTimer(startTimer);
    if (handle.future().isComplete()) {
      // gave up waiting: the program runs but nobody owns it
      kill(startedPid);
      abandon();
      return;
    }
    pid = startedPid;
    timer = vertx.setTimer(Math.max(1, request.timeoutSecs() * 1000L), id -> onTimeout());
    handle.complete(this);
  }

  private static byte[] decode(JsonObject data, String key) {
    String b64 = data.getString(key);
    return b64 == null ? null : Base64.getDecoder().decode(b64);
  }

  /** Hands on the complete UTF-8 characters of {@code bytes}; a sink that is gone drops them. */
  private Future<Void> deliver(Stream stream, byte[] bytes, int i) {
    if (bytes == null) {
      return Future.succeededFuture();
    }
    byte[] all = concat(carry[i], bytes);
    int cut = Utf8.completePrefix(all, all.length);
    carry[i] = Arrays.copyOfRange(all, cut, all.length);
    if (cut == 0 || abandoned) {
      return Future.succeededFuture();
    }
    return sink.output(stream, Arrays.copyOf(all, cut)).otherwiseEmpty();
  }

  private static byte[] concat(byte[] a, byte[] b) {
    if (a.length == 0) {
      return b;
    }
    byte[] out = Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, out, a.length, b.length);
    return out;
  }

  /** Hands on what is left of an unfinished character, then reports the end. */
  private void flushAndFinish() {
    busy = true;
    Future<Void> flushed = abandoned ? Future.succeededFuture() : flush(Stream.STDOUT, 0)
        .compose(v -> flush(Stream.STDERR, 1));
    flushed.onComplete(v -> finish());
  }

  private Future<Void> flush(Stream stream, int i) {
    byte[] rest = carry[i];
    carry[i] = new byte[0];
    return rest.length == 0 ? Future.succeededFuture() : sink.output(stream, rest).otherwiseEmpty();
  }

  /** Reports the end exactly once, unless the start failed or the execution was abandoned. */
  private void finish() {
    if (done) {
      return;
    }
    done = true;
    vertx.cancelTimer(startTimer);
    if (timer >= 0) {
      vertx.cancelTimer(timer);
    }
    if (ended && response != null) {
      // let the rest of the finished HTTP response (its last chunk) drain so the connection is reused
      try {
        response.resume();
      } catch (IllegalStateException alreadyEnded) {
        // nothing left to drain
      }
    } else if (httpRequest != null) {
      httpRequest.reset();
    }
    try {
      if (!started) {
        handle.tryFail(beforeStart());
        return;
      }
      if (abandoned || !handle.future().succeeded()) {
        return;
      }
      long durationMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
      if (timedOut || "deadline_exceeded".equals(endError)) {
        sink.exited(Timeouts.EXIT_CODE, true, false, durationMs);
        return;
      }
      if (end == null) {
        // the stream broke (or the sandbox went away): stop the program rather than leave it unowned
        LOG.warn("e2b execution {} lost its stream ({})", request.executionId(),
            failure == null ? "end-of-stream " + endError : failure.getClass().getSimpleName());
        kill(pid);
        sink.exited(LOST, false, false, durationMs);
        return;
      }
      int code = exitCode(end);
      sink.exited(code, false, signalled && code != 0, durationMs);
    } finally {
      onDone.run();
    }
  }

  /** Why a Start call produced no process. */
  private RuntimeException beforeStart() {
    if (failure instanceof ProviderException pe) {
      return pe;
    }
    if (endError != null) {
      // envd answered without starting anything: nothing ran
      ProviderException e = E2bErrors.connect(endError, "execute");
      return new ProviderException(new ProviderError(e.error().code(), e.error().backend(), "execute",
          e.error().retryable(), Outcome.FAILED, e.error().context()));
    }
    if (failure != null) {
      return E2bErrors.transport(failure, "execute");
    }
    return E2bErrors.of(ErrorCode.EXECUTION_FAILED, "execute", false, Outcome.UNKNOWN);
  }

  /**
   * {@code exitCode} (omitted when 0, as proto3 JSON omits defaults); a process ended by a signal reports
   * {@code exited: false} and a status such as {@code signal: killed}, reported as 128 + the signal number
   * like a shell (and the local backend) would.
   */
  static int exitCode(JsonObject end) {
    int code = end.getInteger("exitCode", 0);
    if (!end.getBoolean("exited", false)) {
      Integer sig = SIGNALS.get(end.getString("status", ""));
      if (sig != null) {
        return 128 + sig;
      }
    }
    return code;
  }

  // ---- control -----------------------------------------------------------------------------------------

  @Override
  public Future<Void> write(Buffer data) {
    if (!request.keepStdin() || stdinClosed || done) {
      return Future.failedFuture(ApiException.conflict("stdin is closed"));
    }
    return control("/process.Process/SendInput", new JsonObject()
        .put("process", new JsonObject().put("pid", pid))
        .put("input", new JsonObject().put("stdin", Base64.getEncoder().encodeToString(data.getBytes()))), "stdin")
        .recover(t -> {
          if (gone(t)) {
            stdinClosed = true;
            return Future.failedFuture(ApiException.conflict("stdin is closed"));
          }
          return Future.failedFuture(t);
        });
  }

  @Override
  public Future<Void> closeStdin() {
    if (!request.keepStdin() || stdinClosed || done) {
      stdinClosed = true;
      return Future.succeededFuture();
    }
    stdinClosed = true;
    return control("/process.Process/CloseStdin", new JsonObject()
        .put("process", new JsonObject().put("pid", pid)), "stdin")
        .recover(t -> gone(t) ? Future.succeededFuture() : Future.failedFuture(t));
  }

  /**
   * TERM and KILL go to the process through {@code SendSignal}. envd's signal enum has no SIGINT, so INT is
   * refused rather than silently turned into something else.
   */
  @Override
  public Future<Void> signal(String signal) {
    String e2b = switch (signal) {
      case "TERM" -> "SIGNAL_SIGTERM";
      case "KILL" -> "SIGNAL_SIGKILL";
      default -> null;
    };
    if (e2b == null) {
      return Future.failedFuture(ApiException.invalid("signal " + signal + " is not supported by the e2b backend"));
    }
    if (done) {
      return Future.failedFuture(ApiException.conflict("execution has finished"));
    }
    signalled = true;
    return control("/process.Process/SendSignal", new JsonObject()
        .put("process", new JsonObject().put("pid", pid)).put("signal", e2b), "signal")
        .recover(t -> gone(t) ? Future.failedFuture(ApiException.conflict("execution has finished"))
            : Future.failedFuture(t));
  }

  private Future<Void> control(String path, JsonObject message, String op) {
    return client.unary(envd, path, message, op).mapEmpty();
  }

  /** envd no longer knows the process, or it ended meanwhile. */
  private boolean gone(Throwable t) {
    return t instanceof ProviderException e && (e.error().code() == ErrorCode.NOT_FOUND || done);
  }
}
