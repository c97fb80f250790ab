package ai.bespokelabs.sandbox.gateway.http;

import ai.bespokelabs.sandbox.core.bus.Messages.StreamEvent;
import ai.bespokelabs.sandbox.gateway.exec.ClientChannel;
import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * A streamed agent run's channel: the execution's events go to the client as they come; once its {@code exit}
 * event is out, the run is read and stored, and a last {@code result} event carries it before the stream ends.
 */
final class AgentRunStream implements ClientChannel {
  private final SseChannel sse;
  private final Supplier<String> executionId;
  private final Function<String, Future<JsonObject>> result;
  private boolean exited;

  /** {@code result}: the run, given the execution's id once it ended. */
  AgentRunStream(SseChannel sse, Supplier<String> executionId, Function<String, Future<JsonObject>> result) {
    this.sse = sse;
    this.executionId = executionId;
    this.result = result;
  }

  @Override
  public void write(StreamEvent event) {
    if (StreamEvent.EXIT.equals(event.type())) {
      exited = true;
    }
    sse.write(event);
  }

  @Override
  public void error(String message) {
    sse.error(message);
  }

  @Override
  public boolean writeQueueFull() {
    return sse.writeQueueFull();
  }

  @Override
  public String transport() {
    return sse.transport();
  }

  @Override
  public boolean textOutput() {
    return sse.textOutput();
  }

  @Override
  public void drainHandler(Runnable r) {
    sse.drainHandler(r);
  }

  @Override
  public void end() {
    if (!exited || executionId.get() == null) {
      sse.end();
      return;
    }
    result.apply(executionId.get()).onComplete(ar -> {
      if (ar.succeeded()) {
        sse.meta("result", ar.result().copy().put("type", "result"));
      } else {
        sse.error(String.valueOf(ErrorMapper.map(ar.cause(), 0).detail()));
      }
      sse.end();
    });
  }
}
