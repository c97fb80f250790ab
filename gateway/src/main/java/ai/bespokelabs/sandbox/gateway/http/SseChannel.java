package ai.bespokelabs.sandbox.gateway.http;

import ai.bespokelabs.sandbox.core.bus.Messages.StreamEvent;
import ai.bespokelabs.sandbox.core.bus.OutputJson;
import ai.bespokelabs.sandbox.gateway.exec.ClientChannel;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.json.JsonObject;

/**
 * Server-Sent Events: {@code stdout}/{@code stderr} events with {@code id: <seq>} so {@code Last-Event-ID}
 * resumes exactly, {@code notice} and {@code gap} events, a final {@code exit} event; comment lines as
 * heartbeats while idle.
 */
final class SseChannel implements ClientChannel {
  private static final Buffer HEARTBEAT = Buffer.buffer(": keep-alive\n\n");

  private final HttpServerResponse response;
  private long lastWrite = System.nanoTime();

  /** Nothing is written until the first event, so a failure before it can still be a JSON error. */
  SseChannel(HttpServerResponse response) {
    this.response = response;
  }

  HttpServerResponse response() {
    return response;
  }

  private static final byte[] OUTPUT_END = "\n\n".getBytes(java.nio.charset.StandardCharsets.US_ASCII);

  @Override
  public void write(StreamEvent e) {
    if (StreamEvent.OUTPUT.equals(e.type())) {
      byte[] prefix = ("id: " + e.seq() + "\nevent: " + e.stream() + "\ndata: ")
          .getBytes(java.nio.charset.StandardCharsets.US_ASCII);
      send(wrap(OutputJson.parts(prefix, e, OUTPUT_END)));
      return;
    }
    JsonObject j = ClientChannel.json(e);
    String name = j.getString("type");
    StringBuilder sb = new StringBuilder(64);
    if (StreamEvent.NOTICE.equals(e.type()) || StreamEvent.GAP.equals(e.type())) {
      sb.append("id: ").append(e.seq()).append('\n');
    }
    sb.append("event: ").append(name).append('\n').append("data: ");
    // the exit event holds the stored result (up to the output caps): encoded straight to bytes
    send(Buffer.buffer(sb.length() + 1024).appendString(sb.toString()).appendBuffer(j.toBuffer()).appendString("\n\n"));
  }

  /**
   * The arrays as one buffer without copying them (Buffer.buffer(byte[]) copies): output travels through
   * here at full speed. The arrays must not change afterwards; output chunks and encoded events never do.
   */
  static Buffer wrap(byte[]... parts) {
    return io.vertx.core.internal.buffer.BufferInternal.buffer(io.netty.buffer.Unpooled.wrappedBuffer(parts));
  }

  /** Sends the response head now, so the client knows the stream is established (and heartbeats can flow). */
  void open() {
    if (!response.headWritten() && !response.closed()) {
      head();
      response.writeHead();
    }
  }

  /** A named event without an id, e.g. {@code started}. */
  void meta(String event, JsonObject data) {
    send(Buffer.buffer().appendString("event: " + event + "\ndata: ").appendBuffer(data.toBuffer()).appendString("\n\n"));
  }

  private void head() {
    response.setChunked(true)
        .putHeader("Content-Type", "text/event-stream; charset=utf-8")
        .putHeader("Cache-Control", "no-cache")
        .putHeader("X-Accel-Buffering", "no");
  }

  @Override
  public void error(String message) {
    send(Buffer.buffer("event: error\ndata: " + new JsonObject().put("type", "error").put("message", message).encode()
        + "\n\n"));
  }

  private void send(Buffer b) {
    if (!response.closed() && !response.ended()) {
      if (!response.headWritten()) {
        head();
      }
      lastWrite = System.nanoTime();
      response.write(b);
    }
  }

  /** Writes a heartbeat comment when nothing was written for {@code idleNanos} and the socket has room. */
  void heartbeat(long idleNanos) {
    if (response.headWritten() && !response.ended() && !response.closed()
        && System.nanoTime() - lastWrite >= idleNanos && !response.writeQueueFull()) {
      send(HEARTBEAT);
    }
  }

  @Override
  public boolean textOutput() {
    return true;
  }

  @Override
  public String transport() {
    return "sse";
  }

  @Override
  public boolean writeQueueFull() {
    return response.writeQueueFull();
  }

  @Override
  public void drainHandler(Runnable r) {
    response.drainHandler(v -> r.run());
  }

  @Override
  public void end() {
    if (!response.closed() && !response.ended()) {
      response.end();
    }
  }
}
