package ai.bespokelabs.sandbox.adapters.e2b;

import ai.bespokelabs.sandbox.adapters.host.ExecHandle;
import ai.bespokelabs.sandbox.adapters.host.ExecSink;
import ai.bespokelabs.sandbox.adapters.e2b.ConnectEnvelope.Frame;
import ai.bespokelabs.sandbox.adapters.e2b.E2bProvider.Envd;
import ai.bespokelabs.sandbox.adapters.exec.Timeouts;
import ai.bespokelabs.sandbox.adapters.exec.Utf8;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecSandbox;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError.Outcome;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClientRequest;
import io.vertx.core.http.HttpClientResponse;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonObject;
import java.util.Arrays;
import java.util.Base64;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One program started through envd's server-streaming {@code process.Process/Start}.
 *
 * <p>Backpressure: the HTTP response stays paused and is read by demand. The event loop only moves raw
 * chunks into {@link #inbox}; this execution's own virtual thread decodes envelopes and hands output to
 * the sink, and asks for the next chunk only after the sink took the previous one, so at most
 * {@link #WINDOW} chunks wait in memory while a slow client blocks the sink (envd then stops reading the
 * program's pipes, as a local pipe would).
 *
 * <p>Timeout: our own timer sends {@code SIGKILL} at {@code timeoutSecs} and the run ends as exit 124, timed
 * out; {@code Connect-Timeout-Ms} (a little later) is a backstop should the kill not arrive. A stream that
 * breaks before its end event ends the run with exit code -1 after a best-effort kill, since its outcome
 * is unknown.
 */
final class E2bExecution implements ExecHandle {
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
  private static final Object END = new Object();

  private final E2bProvider provider;
  private final Envd envd;
  private final ExecSandbox request;
  private final ExecSink sink;
  private final Context context;
  private final LinkedBlockingQueue<Object> inbox = new LinkedBlockingQueue<>();
  private final CompletableFuture<Long> started = new CompletableFuture<>();
  /** true: start() returned the handle, deliver everything; false: start() gave up, deliver nothing. */
  private final CompletableFuture<Boolean> handedOver = new CompletableFuture<>();
  private final AtomicBoolean done = new AtomicBoolean();
  private Runnable onDone = () -> { };

  // written on the event loop, read anywhere
  private volatile HttpClientRequest httpRequest;
  private volatile HttpClientResponse response;
  private volatile long timer = -1;

  private volatile long pid = -1;
  private volatile boolean timedOut;
  private volatile boolean signalled;
  private volatile boolean abandoned;
  private boolean stdinClosed;
  private long t0;

  E2bExecution(E2bProvider provider, Envd envd, ExecSandbox request, ExecSink sink) {
    this.provider = provider;
    this.envd = envd;
    this.request = request;
    this.sink = sink;
    this.context = provider.vertx().getOrCreateContext();
  }

  void onDone(Runnable r) {
    this.onDone = r;
  }

  /** Sends the Start call and waits for the start event; the rest is read by a virtual thread. */
  ExecHandle start(JsonObject startRequest) {
    Future<ExecHandle> f = ai.bespokelabs.sandbox.adapters.http.ClientContext.run(context, () -> startAsync(startRequest));
    try {
      return f.toCompletionStage().toCompletableFuture()
          .get(provider.settings().requestTimeout().toMillis() + 5_000, TimeUnit.MILLISECONDS);
    } catch (ExecutionException e) {
      throw e.getCause() instanceof RuntimeException re ? re : E2bErrors.transport(e.getCause(), "execute");
    } catch (TimeoutException e) {
      giveUp();
      throw E2bErrors.transport(e, "execute");
    } catch (InterruptedException e) {
      giveUp();
      Thread.currentThread().interrupt();
      throw E2bErrors.transport(new TimeoutException("interrupted"), "execute");
    }
  }

  /**
   * Sends the Start call; completes on this execution's context (call it there) once envd reported the
   * program's pid. The rest of the stream is read by a virtual thread.
   */
  Future<ExecHandle> startAsync(JsonObject startRequest) {
    t0 = System.nanoTime();
    long deadlineMs = request.timeoutSecs() * 1000L + KILL_GRACE_MS;
    RequestOptions options = provider.envdOptions(envd, HttpMethod.POST, "/process.Process/Start")
        .putHeader("Content-Type", "application/connect+json")
        .putHeader("Connect-Protocol-Version", "1")
        .putHeader("Connect-Timeout-Ms", String.valueOf(deadlineMs))
        .putHeader("Keepalive-Ping-Interval", String.valueOf(KEEPALIVE_SECS));
    Buffer body = ConnectEnvelope.encode(0, startRequest.toBuffer());
    provider.http().request(options)
        .compose(req -> {
          httpRequest = req;
          req.exceptionHandler(t -> inbox.add(t));
          return req.send(body);
        })
        .onComplete(ar -> {
          if (ar.failed()) {
            inbox.add(ar.cause());
            return;
          }
          HttpClientResponse resp = ar.result();
          resp.pause();
          response = resp;
          String type = resp.getHeader("Content-Type");
          if (resp.statusCode() != 200 || type == null || !type.startsWith("application/connect+json")) {
            int status = resp.statusCode();
            String retryAfter = resp.getHeader("Retry-After");
            resp.resume();
            resp.body().onComplete(b -> inbox.add(
                E2bProvider.connectFailure(status == 200 ? 502 : status, b.succeeded() ? b.result() : null,
                    retryAfter, "execute")));
            return;
          }
          resp.handler(inbox::add);
          resp.exceptionHandler(inbox::add);
          resp.endHandler(e -> inbox.add(END));
          resp.fetch(WINDOW);
        });
    Thread.ofVirtual().name("e2b-exec-" + request.executionId()).start(this::read);
    Promise<ExecHandle> handle = Promise.promise();
    long wait = provider.vertx().setTimer(provider.settings().requestTimeout().toMillis(), id -> {
      if (handle.tryFail(E2bErrors.transport(new TimeoutException("no start event"), "execute"))) {
        giveUp();
      }
    });
    started.whenComplete((startedPid, err) -> context.runOnContext(v -> {
      provider.vertx().cancelTimer(wait);
      if (err != null) {
        Throwable cause = err instanceof java.util.concurrent.CompletionException && err.getCause() != null
            ? err.getCause() : err;
        if (handle.tryFail(cause instanceof RuntimeException re ? re : E2bErrors.transport(cause, "execute"))) {
          giveUp();
        }
        return;
      }
      if (handle.future().isComplete()) {
        return; // gave up waiting: the reader kills the program
      }
      pid = startedPid;
      handedOver.complete(true);
      if (!done.get()) {
        timer = provider.vertx().setTimer(Math.max(1, request.timeoutSecs() * 1000L), id -> onTimeout());
      }
      handle.complete(this);
    }));
    return handle.future();
  }

  private void giveUp() {
    handedOver.complete(false);
    abandon();
  }

  /** Stops reading and cuts the stream; the sink gets nothing more. */
  void abandon() {
    abandoned = true;
    handedOver.complete(false);
    cut();
  }

  private void cut() {
    context.runOnContext(v -> {
      HttpClientRequest req = httpRequest;
      if (req != null) {
        req.reset();
      }
      inbox.add(new java.io.IOException("stream cut"));
    });
  }

  private void onTimeout() {
    if (done.get()) {
      return;
    }
    timedOut = true;
    provider.sendSignalAsync(envd, pid, "SIGNAL_SIGKILL");
    provider.vertx().setTimer(KILL_GRACE_MS, id -> {
      if (!done.get()) {
        cut();
      }
    });
  }

  // ---- the reader (virtual thread) -------------------------------------------------------------------

  private void read() {
    ConnectEnvelope.Decoder decoder = new ConnectEnvelope.Decoder();
    byte[][] carry = {new byte[0], new byte[0]};
    JsonObject end = null;
    String endError = null;
    boolean ended = false;
    Throwable failure = null;
    try {
      loop:
      while (true) {
        Object item = inbox.take();
        if (item == END) {
          break;
        }
        if (item instanceof Throwable t) {
          failure = t;
          break;
        }
        decoder.feed((Buffer) item);
        Frame f;
        while ((f = decoder.next()) != null) {
          if (f.compressed()) {
            throw new ConnectEnvelope.FramingException("compressed envelope was not asked for");
          }
          JsonObject msg = new JsonObject(f.message());
          if (f.endStream()) {
            ended = true;
            JsonObject err = msg.getJsonObject("error");
            endError = err == null ? null : err.getString("code", "unknown");
            break loop;
          }
          JsonObject event = msg.getJsonObject("event", new JsonObject());
          if (event.containsKey("start")) {
            long started = event.getJsonObject("start").getLong("pid", 0L);
            this.started.complete(started);
            if (!handedOver.get()) {
              // start() gave up waiting: the program runs but nobody owns it
              provider.sendSignalAsync(envd, started, "SIGNAL_SIGKILL");
              return;
            }
          } else if (event.containsKey("data")) {
            if (!started.isDone()) {
              throw new ConnectEnvelope.FramingException("output before the start event");
            }
            JsonObject data = event.getJsonObject("data");
            deliver(data, "stdout", ai.bespokelabs.sandbox.adapters.spi.OutputSink.Stream.STDOUT, carry, 0);
            deliver(data, "stderr", ai.bespokelabs.sandbox.adapters.spi.OutputSink.Stream.STDERR, carry, 1);
          } else if (event.containsKey("end")) {
            end = event.getJsonObject("end");
          }
          // keepalive and events this version does not know are skipped
        }
        if (abandoned) {
          return;
        }
        HttpClientResponse resp = response;
        context.runOnContext(v -> resp.fetch(1));
      }
      flush(carry);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      failure = e;
    } catch (ConnectEnvelope.FramingException | DecodeException | ClassCastException | IllegalArgumentException e) {
      failure = e;
    } catch (ExecutionException e) {
      failure = e;
    } finally {
      finish(end, endError, ended, failure);
    }
  }

  private void deliver(JsonObject data, String key, ai.bespokelabs.sandbox.adapters.spi.OutputSink.Stream stream, byte[][] carry, int i)
      throws InterruptedException {
    String b64 = data.getString(key);
    if (b64 == null) {
      return;
    }
    byte[] bytes = Base64.getDecoder().decode(b64);
    byte[] all = concat(carry[i], bytes);
    int cut = Utf8.completePrefix(all, all.length);
    carry[i] = Arrays.copyOfRange(all, cut, all.length);
    if (cut > 0 && !abandoned) {
      sink.output(stream, Arrays.copyOf(all, cut));
    }
  }

  private void flush(byte[][] carry) throws InterruptedException {
    if (carry[0].length > 0 && !abandoned) {
      sink.output(ai.bespokelabs.sandbox.adapters.spi.OutputSink.Stream.STDOUT, carry[0]);
    }
    if (carry[1].length > 0 && !abandoned) {
      sink.output(ai.bespokelabs.sandbox.adapters.spi.OutputSink.Stream.STDERR, carry[1]);
    }
  }

  private static byte[] concat(byte[] a, byte[] b) {
    if (a.length == 0) {
      return b;
    }
    byte[] out = Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, out, a.length, b.length);
    return out;
  }

  /** Reports the end exactly once, unless start() failed or the execution was abandoned. */
  private void finish(JsonObject end, String endError, boolean ended, Throwable failure) {
    if (!done.compareAndSet(false, true)) {
      return;
    }
    context.runOnContext(v -> {
      if (timer >= 0) {
        provider.vertx().cancelTimer(timer);
      }
      HttpClientResponse resp = response;
      if (ended && resp != null) {
        // let the rest of the finished HTTP response (its last chunk) drain so the connection is reused
        try {
          resp.resume();
        } catch (IllegalStateException alreadyEnded) {
          // nothing left to drain
        }
      } else {
        HttpClientRequest req = httpRequest;
        if (req != null) {
          req.reset();
        }
      }
    });
    try {
      if (!started.isDone()) {
        started.completeExceptionally(beforeStart(endError, failure));
        return;
      }
      if (abandoned || !handedOver.getNow(false)) {
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
        provider.sendSignalAsync(envd, pid, "SIGNAL_SIGKILL");
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
  private RuntimeException beforeStart(String endError, Throwable failure) {
    if (failure instanceof ProviderException pe) {
      return pe;
    }
    if (endError != null) {
      // envd answered without starting anything: nothing ran
      ProviderException e = E2bErrors.connect(endError, "execute");
      return new ProviderException(new ai.bespokelabs.sandbox.core.error.ProviderError(e.error().code(),
          e.error().backend(), "execute", e.error().retryable(), Outcome.FAILED, e.error().context()));
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
  public synchronized void writeStdin(byte[] data) {
    if (!request.keepStdin() || stdinClosed || done.get()) {
      throw ApiException.conflict("stdin is closed");
    }
    try {
      provider.sendInput(envd, pid, data);
    } catch (ProviderException e) {
      if (e.error().code() == ErrorCode.NOT_FOUND || done.get()) {
        stdinClosed = true;
        throw ApiException.conflict("stdin is closed");
      }
      throw e;
    }
  }

  @Override
  public synchronized void closeStdin() {
    if (!request.keepStdin() || stdinClosed || done.get()) {
      stdinClosed = true;
      return;
    }
    stdinClosed = true;
    try {
      provider.closeStdin(envd, pid);
    } catch (ProviderException e) {
      if (e.error().code() != ErrorCode.NOT_FOUND && !done.get()) {
        throw e;
      }
    }
  }

  /**
   * TERM and KILL go to the process through {@code SendSignal}. envd's signal enum has no SIGINT, so INT is
   * refused rather than silently turned into something else.
   */
  @Override
  public void signal(String signal) {
    String e2b = switch (signal) {
      case "TERM" -> "SIGNAL_SIGTERM";
      case "KILL" -> "SIGNAL_SIGKILL";
      default -> throw ApiException.invalid("signal " + signal + " is not supported by the e2b backend");
    };
    if (done.get()) {
      throw ApiException.conflict("execution has finished");
    }
    signalled = true;
    try {
      provider.sendSignal(envd, pid, e2b);
    } catch (ProviderException e) {
      if (e.error().code() == ErrorCode.NOT_FOUND || done.get()) {
        throw ApiException.conflict("execution has finished");
      }
      throw e;
    }
  }
}
