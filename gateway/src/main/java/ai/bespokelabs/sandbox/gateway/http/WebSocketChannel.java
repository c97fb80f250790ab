package ai.bespokelabs.sandbox.gateway.http;

import ai.bespokelabs.sandbox.core.bus.Messages.StreamEvent;
import ai.bespokelabs.sandbox.core.bus.OutputJson;
import ai.bespokelabs.sandbox.gateway.exec.ClientChannel;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.ServerWebSocket;
import io.vertx.core.json.JsonObject;

/**
 * WebSocket frames: JSON text frames by default; in binary mode output travels as binary frames
 * {@code [1 byte stream: 1 stdout, 2 stderr][8 bytes seq, big-endian][payload]} and every other event stays
 * a JSON text frame.
 */
final class WebSocketChannel implements ClientChannel {
  private final ServerWebSocket ws;
  private final boolean binary;

  WebSocketChannel(ServerWebSocket ws, boolean binary) {
    this.ws = ws;
    this.binary = binary;
  }

  @Override
  public void write(StreamEvent e) {
    if (ws.isClosed()) {
      return;
    }
    if (binary && StreamEvent.OUTPUT.equals(e.type())) {
      byte[] header = new byte[9];
      header[0] = (byte) ("stdout".equals(e.stream()) ? 1 : 2);
      java.nio.ByteBuffer.wrap(header, 1, 8).putLong(e.seq());
      ws.writeBinaryMessage(SseChannel.wrap(header, e.data()));
    } else if (StreamEvent.OUTPUT.equals(e.type())) {
      ws.writeFrame(io.vertx.core.http.WebSocketFrame.textFrame(
          new String(OutputJson.encode(new byte[0], e, new byte[0]), java.nio.charset.StandardCharsets.UTF_8), true));
    } else {
      ws.writeTextMessage(ClientChannel.json(e).encode());
    }
  }

  @Override
  public void error(String message) {
    if (!ws.isClosed()) {
      ws.writeTextMessage(new JsonObject().put("type", "error").put("message", message).encode());
    }
  }

  @Override
  public boolean textOutput() {
    return !binary;
  }

  @Override
  public String transport() {
    return "websocket";
  }

  @Override
  public boolean writeQueueFull() {
    return ws.writeQueueFull();
  }

  @Override
  public void drainHandler(Runnable r) {
    ws.drainHandler(v -> r.run());
  }

  @Override
  public void end() {
    if (!ws.isClosed()) {
      ws.close((short) 1000, "execution finished");
    }
  }
}
