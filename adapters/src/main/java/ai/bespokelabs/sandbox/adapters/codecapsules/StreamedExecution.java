package ai.bespokelabs.sandbox.adapters.codecapsules;

import ai.bespokelabs.sandbox.adapters.exec.Timeouts;
import ai.bespokelabs.sandbox.adapters.spi.Execution;
import ai.bespokelabs.sandbox.adapters.spi.OutputSink;
import ai.bespokelabs.sandbox.adapters.spi.OutputSink.Stream;
import ai.bespokelabs.sandbox.core.error.ApiException;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClientRequest;
import io.vertx.core.http.HttpClientResponse;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import io.vertx.core.parsetools.RecordParser;
import java.nio.charset.StandardCharsets;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One program run through {@code POST /sandboxes/{id}/exec/stream}: its frames go to the sink in order, and
 * reading pauses while the sink is full (the provider then holds the rest). A signal closes the connection,
 * which ends the command; a stream that breaks before its exit frame ends the run with exit code -1.
 */
final class StreamedExecution implements Execution {
  private static final Logger LOG = LoggerFactory.getLogger(StreamedExecution.class);
  /** The exit code of a run whose stream broke before its end was reported. */
  static final int LOST = -1;

  private final CodeCapsulesClient client;
  private final String resourceId;
  private final JsonObject body;
  private final OutputSink sink;
  private final Promise<Void> done = Promise.promise();
  private final long startedNanos = System.nanoTime();
  private HttpClientRequest request;
  private Future<Void> last = Future.succeededFuture();
  private String signalled;
  private boolean abandoned;

  StreamedExecution(CodeCapsulesClient client, String resourceId, JsonObject body, OutputSink sink) {
    this.client = client;
    this.resourceId = resourceId;
    this.body = body;
    this.sink = sink;
  }

  Future<Void> done() {
    return done.future();
  }

  /** Sends the command; completes once the provider answered 200 (the program runs). */
  Future<Void> start() {
    long bound = client.settings().requestTimeout().toMillis();
    return client.http().request(client.options(HttpMethod.POST, CodeCapsulesWire.execStream(resourceId))
            .putHeader("Content-Type", "application/json").putHeader("Accept", "application/x-ndjson"))
        .compose(req -> {
          request = req;
          req.idleTimeout(bound + body.getInteger("timeout") * 1000L);
          return req.send(body.toBuffer());
        })
        .recover(t -> {
          done.tryComplete();
          return Future.failedFuture(CodeCapsulesClient.transport(t, "execute"));
        })
        .compose(resp -> {
          if (resp.statusCode() != 200) {
            done.tryComplete();
            return resp.body().transform(b -> Future.failedFuture(CodeCapsulesClient.status("execute",
                resp.statusCode(), resp.getHeader(CodeCapsulesWire.RETRY_AFTER_HEADER),
                b.succeeded() ? b.result() : null)));
          }
          read(resp);
          return Future.succeededFuture();
        });
  }

  private void read(HttpClientResponse resp) {
    RecordParser lines = RecordParser.newDelimited(CodeCapsulesWire.STREAM_DELIMITER, resp);
    boolean[] ended = {false};
    lines.handler(line -> {
      if (ended[0] || line.length() == 0) {
        return;
      }
      CodeCapsulesWire.Frame frame = frame(line);
      if (frame == null) {
        ended[0] = true;
        finish(LOST, false, "an unreadable frame");
        request.reset();
        return;
      }
      if (CodeCapsulesWire.Frame.EXIT.equals(frame.type())) {
        ended[0] = true;
        if (frame.timedOut()) {
          last = last.compose(v -> sink.output(Stream.STDERR, Timeouts.message(body.getInteger("timeout"))));
          finish(Timeouts.EXIT_CODE, true, null);
        } else {
          finish(frame.exitCode() == null ? LOST : frame.exitCode(), false, null);
        }
        return;
      }
      Stream stream = CodeCapsulesWire.Frame.STDOUT.equals(frame.type()) ? Stream.STDOUT : Stream.STDERR;
      Future<Void> taken = sink.output(stream, frame.data().getBytes(StandardCharsets.UTF_8));
      last = taken;
      if (!taken.isComplete()) {
        lines.pause();
        taken.onComplete(ar -> lines.resume());
      }
    });
    lines.exceptionHandler(t -> {
      if (!ended[0]) {
        ended[0] = true;
        finish(LOST, false, t.getClass().getSimpleName());
      }
    });
    lines.endHandler(v -> {
      if (!ended[0]) {
        ended[0] = true;
        finish(LOST, false, "the stream ended before its exit frame");
      }
    });
  }

  private static CodeCapsulesWire.Frame frame(Buffer line) {
    try {
      return CodeCapsulesWire.Frame.parse(new JsonObject(line));
    } catch (RuntimeException e) {
      return null;
    }
  }

  /** Reports the end once, after the output handed on, unless abandoned; a signalled run is cancelled. */
  private void finish(int code, boolean timedOut, String lostBecause) {
    if (done.future().isComplete()) {
      return;
    }
    long durationMs = (System.nanoTime() - startedNanos) / 1_000_000;
    Future<Void> flushed = last;
    done.tryComplete();
    flushed.onComplete(ar -> {
      if (abandoned) {
        return;
      }
      if (signalled != null) {
        sink.exited(CodeCapsulesExecutions.signalExit(signalled), false, true, durationMs);
      } else {
        if (lostBecause != null) {
          LOG.warn("codecapsules execution stream in {} broke: {}", resourceId, lostBecause);
        }
        sink.exited(code, timedOut, false, durationMs);
      }
    });
  }

  @Override
  public Future<Void> write(Buffer data) {
    return Future.failedFuture(ApiException.conflict("stdin is closed"));
  }

  @Override
  public Future<Void> closeStdin() {
    return Future.succeededFuture();
  }

  /** Closes the stream, which ends the command at CodeCapsules; the run reports itself cancelled. */
  @Override
  public Future<Void> signal(String signal) {
    if (done.future().isComplete()) {
      return Future.succeededFuture();
    }
    signalled = signal;
    if (request != null) {
      request.reset();
    }
    finish(CodeCapsulesExecutions.signalExit(signal), false, null);
    return Future.succeededFuture();
  }

  void abandon() {
    abandoned = true;
    if (request != null && !done.future().isComplete()) {
      request.reset();
    }
    done.tryComplete();
  }
}
