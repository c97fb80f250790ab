package ai.bespokelabs.sandbox.gateway.mcp;

import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.gateway.auth.Principal;
import io.modelcontextprotocol.common.McpTransportContext;
import io.modelcontextprotocol.json.McpJsonMapper;
import io.modelcontextprotocol.server.McpStatelessServerHandler;
import io.modelcontextprotocol.spec.McpSchema;
import io.modelcontextprotocol.spec.McpStatelessServerTransport;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import java.io.IOException;
import java.util.Map;
import reactor.core.publisher.Mono;

/**
 * The MCP SDK's stateless Streamable HTTP transport on Vert.x: each POST carries one JSON-RPC message, answered
 * with one JSON-RPC response (a request) or 202 (a notification); the authenticated caller rides in the transport
 * context, so every tool acts as that product key. No server-initiated stream is offered (GET is 405).
 */
final class VertxStatelessTransport implements McpStatelessServerTransport {
  /** The transport-context key of the calling {@link Principal}. */
  static final String PRINCIPAL = "bespoke.principal";
  private final McpJsonMapper json;
  private volatile McpStatelessServerHandler handler;
  private volatile boolean closing;

  VertxStatelessTransport(McpJsonMapper json) {
    this.json = json;
  }

  @Override
  public void setMcpHandler(McpStatelessServerHandler handler) {
    this.handler = handler;
  }

  @Override
  public Mono<Void> closeGracefully() {
    return Mono.fromRunnable(() -> closing = true);
  }

  /** What a POST answers: the JSON-RPC response's text, or null for 202 (a notification). */
  Future<String> handle(Vertx vertx, Principal caller, Buffer body) {
    if (closing || handler == null) {
      return Future.failedFuture(new ApiException(503, "the server is shutting down"));
    }
    McpSchema.JSONRPCMessage message;
    try {
      message = McpSchema.deserializeJsonRpcMessage(json, body.toString(java.nio.charset.StandardCharsets.UTF_8));
    } catch (IOException | IllegalArgumentException e) {
      return Future.failedFuture(new ApiException(400, "the body is not a JSON-RPC message"));
    }
    McpTransportContext context = McpTransportContext.create(Map.of(PRINCIPAL, caller));
    if (message instanceof McpSchema.JSONRPCRequest request) {
      Mono<String> answer = handler.handleRequest(context, request)
          .contextWrite(c -> c.put(McpTransportContext.KEY, context))
          .map(this::text);
      return Future.fromCompletionStage(answer.toFuture(), vertx.getOrCreateContext());
    }
    if (message instanceof McpSchema.JSONRPCNotification notification) {
      Mono<String> done = handler.handleNotification(context, notification)
          .contextWrite(c -> c.put(McpTransportContext.KEY, context))
          .then(Mono.<String>empty());
      return Future.fromCompletionStage(done.toFuture(), vertx.getOrCreateContext());
    }
    return Future.failedFuture(new ApiException(400, "the server accepts JSON-RPC requests and notifications"));
  }

  private String text(McpSchema.JSONRPCResponse response) {
    try {
      return json.writeValueAsString(response);
    } catch (IOException e) {
      throw new IllegalStateException("a JSON-RPC response could not be written", e);
    }
  }
}
