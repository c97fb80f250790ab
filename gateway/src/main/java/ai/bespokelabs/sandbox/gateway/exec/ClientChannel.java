package ai.bespokelabs.sandbox.gateway.exec;

import ai.bespokelabs.sandbox.core.bus.Messages.StreamEvent;
import ai.bespokelabs.sandbox.core.bus.OutputJson;
import io.vertx.core.json.JsonObject;

/** One client's end of an execution stream (an SSE response or a WebSocket). Used on its event loop. */
public interface ClientChannel {
  /** Writes one event; never blocks. */
  void write(StreamEvent event);

  /** Reports a problem to the client without ending the stream (WebSocket) or before ending it (SSE). */
  void error(String message);

  boolean writeQueueFull();

  /** {@code sse} or {@code websocket} (a metrics label). */
  String transport();

  /** Whether output reaches this client as JSON text (then the adapter encodes it once for all such clients). */
  boolean textOutput();

  void drainHandler(Runnable r);

  /** Ends the stream normally (after the exit event, or when the subscription was evicted). */
  void end();

  /**
   * The JSON form of an event: {@code {"type","seq","data"|"data_b64"}} for output (stdout/stderr as the
   * type), the info object plus type and seq for the others.
   */
  static JsonObject json(StreamEvent e) {
    if (StreamEvent.OUTPUT.equals(e.type())) {
      return new JsonObject(io.vertx.core.buffer.Buffer.buffer(OutputJson.encode(new byte[0], e, new byte[0])));
    }
    JsonObject j = new JsonObject().put("type", StreamEvent.EVICTED.equals(e.type()) ? "error" : e.type())
        .put("seq", e.seq());
    if (e.info() != null) {
      j.mergeIn(e.info());
    }
    return j;
  }

}
