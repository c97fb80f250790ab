package ai.bespokelabs.sandbox.gateway.http;

import ai.bespokelabs.sandbox.core.bus.BusFailures;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.gateway.auth.Principal;
import ai.bespokelabs.sandbox.gateway.auth.Scopes;
import ai.bespokelabs.sandbox.gateway.exec.ClientChannel;
import ai.bespokelabs.sandbox.gateway.exec.ExecutionService;
import ai.bespokelabs.sandbox.gateway.exec.StreamSubscriber;
import io.netty.handler.codec.http.websocketx.CorruptedWebSocketFrameException;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.ServerWebSocket;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonObject;
import java.util.Base64;
import java.util.function.Consumer;

/**
 * The frame protocol of one execution WebSocket: before the execution is known, only {@code start} (on the
 * start route); afterwards {@code stdin}, {@code stdin_eof} and {@code signal} (which need
 * {@code sandboxes:execute}), or binary frames as stdin. A malformed frame gets an error frame and the
 * socket stays open.
 */
final class WebSocketSession {
  private final ExecutionService executions;
  private final Principal principal;
  private final ServerWebSocket ws;
  private final ClientChannel channel;
  private Consumer<Body> onStart;
  private boolean starting;
  private String executionId;
  private ai.bespokelabs.sandbox.core.bus.RuntimeClient.Runner runner;
  private StreamSubscriber sub;

  WebSocketSession(ExecutionService executions, Principal principal, ServerWebSocket ws, ClientChannel channel) {
    this.executions = executions;
    this.principal = principal;
    this.ws = ws;
    this.channel = channel;
    ws.textMessageHandler(this::text);
    ws.binaryMessageHandler(this::binary);
    ws.closeHandler(v -> {
      if (sub != null) {
        sub.clientGone();
      }
    });
    ws.exceptionHandler(t -> {
      if (sub != null) {
        sub.clientGone();
      }
      // an oversized or corrupt frame leaves the decoder unusable: close with the status it calls for
      short status = closeStatus(t);
      if (!ws.isClosed()) {
        ws.close(status, status == 1009 ? "frame too large" : "protocol error");
      }
    });
  }

  /** What a {@code start} frame does (its body without {@code type}); without it, start frames are refused. */
  void onStart(Consumer<Body> start) {
    this.onStart = start;
  }

  /** Whether a start is in progress (a second start frame is refused meanwhile). */
  void starting(boolean starting) {
    this.starting = starting;
  }

  /** The socket is attached to this execution; control frames go to the node that runs it. */
  void started(String id, ai.bespokelabs.sandbox.core.bus.RuntimeClient.Runner runner, StreamSubscriber subscriber) {
    this.executionId = id;
    this.runner = runner;
    this.sub = subscriber;
  }

  private void text(String text) {
    JsonObject frame;
    try {
      frame = new JsonObject(text);
    } catch (DecodeException | ClassCastException e) {
      channel.error("frames must be JSON objects");
      return;
    }
    String type = frame.getValue("type") instanceof String t ? t : "";
    try {
      switch (type) {
        case "start" -> {
          if (onStart == null || starting || executionId != null) {
            channel.error("this socket is already attached to an execution");
            return;
          }
          frame.remove("type");
          onStart.accept(Body.parse(frame.toBuffer()));
        }
        case "stdin" -> {
          byte[] data = frame.getValue("data") instanceof String d ? d.getBytes(java.nio.charset.StandardCharsets.UTF_8)
              : frame.getValue("data_b64") instanceof String b ? Base64.getDecoder().decode(b) : null;
          if (data == null) {
            channel.error("stdin frames need data or data_b64");
            return;
          }
          stdin(data, false);
        }
        case "stdin_eof" -> stdin(new byte[0], true);
        case "signal" -> {
          String sig = frame.getValue("signal") instanceof String v ? v : "";
          if (!ExecutionService.isSignal(sig)) {
            channel.error(ExecutionService.SIGNAL_MESSAGE);
            return;
          }
          if (controllable()) {
            reportFailure(executions.sendSignal(executionId, runner, sig));
          }
        }
        default -> channel.error("unknown frame type; expected start, stdin, stdin_eof or signal");
      }
    } catch (ApiException e) {
      channel.error(e.detail() instanceof String m ? m : String.valueOf(e.detail()));
    } catch (IllegalArgumentException e) {
      channel.error("data_b64 is not valid base64");
    }
  }

  private void binary(Buffer data) {
    stdin(data.getBytes(), false);
  }

  private void stdin(byte[] data, boolean eof) {
    if (controllable()) {
      reportFailure(executions.sendStdin(executionId, runner, data, eof));
    }
  }

  /** Whether stdin and signals may go to the execution now; else the client is told why not. */
  private boolean controllable() {
    if (executionId == null) {
      channel.error("no execution is attached yet");
      return false;
    }
    if (!principal.has(Scopes.SANDBOXES_EXECUTE)) {
      channel.error("API key requires scope: " + Scopes.SANDBOXES_EXECUTE);
      return false;
    }
    return true;
  }

  private void reportFailure(Future<Void> sent) {
    sent.onFailure(t -> channel.error(controlFailure(t)));
  }

  /** The close status a failed frame calls for: 1009 for one that is too large, else its own or 1002. */
  static short closeStatus(Throwable t) {
    for (Throwable c = t; c != null; c = c.getCause()) {
      if (c instanceof CorruptedWebSocketFrameException corrupted) {
        return (short) corrupted.closeStatus().code();
      }
      if (c instanceof io.netty.handler.codec.TooLongFrameException
          || String.valueOf(c.getMessage()).toLowerCase(java.util.Locale.ROOT).contains("max")) {
        return 1009;
      }
    }
    return 1002;
  }

  private static String controlFailure(Throwable t) {
    RuntimeException e = BusFailures.decode(t, "unknown", "control");
    if (e instanceof ApiException api) {
      return api.status() == 404 ? "execution has finished" : String.valueOf(api.detail());
    }
    return "the execution did not accept the request";
  }
}
