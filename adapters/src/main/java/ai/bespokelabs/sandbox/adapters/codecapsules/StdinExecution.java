package ai.bespokelabs.sandbox.adapters.codecapsules;

import ai.bespokelabs.sandbox.adapters.exec.Timeouts;
import ai.bespokelabs.sandbox.adapters.spi.Execution;
import ai.bespokelabs.sandbox.adapters.spi.OutputSink;
import ai.bespokelabs.sandbox.adapters.spi.OutputSink.Stream;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import java.nio.charset.StandardCharsets;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A program with stdin. CodeCapsules takes stdin as one string with the command ({@code POST .../exec}), so
 * what is written is kept (up to {@link #MAX_STDIN_BYTES}) and the command runs when stdin is closed; its
 * output arrives whole at its end. Stdin is text: bytes that are not UTF-8 are replaced. A signal before the
 * end of stdin cancels the run without starting it; after, the request is abandoned (CodeCapsules has no
 * signal) and the run reports itself cancelled.
 */
final class StdinExecution implements Execution {
  private static final Logger LOG = LoggerFactory.getLogger(StdinExecution.class);
  /** The most stdin kept for one program. */
  static final int MAX_STDIN_BYTES = 8 << 20;

  private final CodeCapsulesClient client;
  private final String resourceId;
  private final JsonObject body;
  private final OutputSink sink;
  private final int outputLimit;
  private final Buffer stdin = Buffer.buffer();
  private final Promise<Void> done = Promise.promise();
  private final long startedNanos = System.nanoTime();
  private boolean closed;
  private boolean abandoned;

  StdinExecution(CodeCapsulesClient client, String resourceId, JsonObject body, OutputSink sink, int outputLimit) {
    this.client = client;
    this.resourceId = resourceId;
    this.body = body;
    this.sink = sink;
    this.outputLimit = outputLimit;
  }

  Future<Void> done() {
    return done.future();
  }

  @Override
  public Future<Void> write(Buffer data) {
    if (closed) {
      return Future.failedFuture(ApiException.conflict("stdin is closed"));
    }
    if (stdin.length() + data.length() > MAX_STDIN_BYTES) {
      return Future.failedFuture(ApiException.invalid("stdin exceeds " + MAX_STDIN_BYTES
          + " bytes on the codecapsules backend"));
    }
    stdin.appendBuffer(data);
    return Future.succeededFuture();
  }

  /** Runs the command with what stdin received. */
  @Override
  public Future<Void> closeStdin() {
    if (closed) {
      return Future.succeededFuture();
    }
    closed = true;
    JsonObject call = body.copy().put("stdin", stdin.toString(StandardCharsets.UTF_8));
    long bound = client.settings().requestTimeout().toMillis() + body.getInteger("timeout") * 1000L;
    client.api(HttpMethod.POST, CodeCapsulesWire.exec(resourceId)).timeout(bound)
        .putHeader("Content-Type", "application/json").sendBuffer(call.toBuffer())
        .onComplete(ar -> {
          if (ar.failed()) {
            lost(CodeCapsulesClient.transport(ar.cause(), "execute"));
            return;
          }
          int status = ar.result().statusCode();
          if (status == 408 && CodeCapsulesWire.EXEC_TIMEOUT.equals(CodeCapsulesWire.errorCode(ar.result().body()))) {
            int secs = body.getInteger("timeout");
            report(sink.output(Stream.STDERR, Timeouts.message(secs)), Timeouts.EXIT_CODE, true, secs * 1000L);
            return;
          }
          CodeCapsulesWire.ExecResult result = null;
          if (status == 200) {
            try {
              result = CodeCapsulesWire.ExecResult.of(ar.result().bodyAsJsonObject());
            } catch (RuntimeException ignored) {
              // reported below
            }
          }
          if (result == null) {
            lost(status == 200 ? null : CodeCapsulesClient.status("execute", status,
                ar.result().getHeader(CodeCapsulesWire.RETRY_AFTER_HEADER), ar.result().body()));
            return;
          }
          CodeCapsulesWire.ExecResult r = result;
          Future<Void> out = r.stdout().isEmpty() ? Future.succeededFuture()
              : sink.output(Stream.STDOUT, capped(r.stdout()));
          out = out.compose(v -> r.stderr().isEmpty() ? Future.succeededFuture()
              : sink.output(Stream.STDERR, capped(r.stderr())));
          report(out, r.exitCode(), false, r.durationMs());
        });
    return Future.succeededFuture();
  }

  /** The text's bytes, at most the output limit (the sink caps again; this bounds the copy). */
  private byte[] capped(String text) {
    byte[] b = text.getBytes(StandardCharsets.UTF_8);
    return outputLimit > 0 && b.length > outputLimit + 4 ? java.util.Arrays.copyOf(b, outputLimit + 4) : b;
  }

  private void lost(ProviderException e) {
    LOG.warn("codecapsules execution in {} got no usable answer ({})", resourceId,
        e == null ? "unreadable" : e.error().code().wire());
    report(Future.succeededFuture(), StreamedExecution.LOST, false, (System.nanoTime() - startedNanos) / 1_000_000);
  }

  private void report(Future<Void> flushed, int code, boolean timedOut, long durationMs) {
    if (done.future().isComplete()) {
      return;
    }
    done.tryComplete();
    flushed.onComplete(ar -> {
      if (!abandoned) {
        sink.exited(code, timedOut, false, durationMs);
      }
    });
  }

  @Override
  public Future<Void> signal(String signal) {
    if (done.future().isComplete()) {
      return Future.succeededFuture();
    }
    closed = true;
    done.tryComplete();
    if (!abandoned) {
      sink.exited(CodeCapsulesExecutions.signalExit(signal), false, true,
          (System.nanoTime() - startedNanos) / 1_000_000);
    }
    return Future.succeededFuture();
  }

  void abandon() {
    abandoned = true;
    done.tryComplete();
  }
}
