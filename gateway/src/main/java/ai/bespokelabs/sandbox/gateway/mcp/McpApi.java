package ai.bespokelabs.sandbox.gateway.mcp;

import ai.bespokelabs.sandbox.core.Times;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.gateway.auth.Principal;
import ai.bespokelabs.sandbox.gateway.http.Api;
import ai.bespokelabs.sandbox.gateway.http.AuditTrail;
import ai.bespokelabs.sandbox.gateway.http.Endpoints;
import ai.bespokelabs.sandbox.gateway.http.ErrorMapper;
import ai.bespokelabs.sandbox.gateway.http.Reply;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.modelcontextprotocol.common.McpTransportContext;
import io.modelcontextprotocol.json.jackson2.JacksonMcpJsonMapper;
import io.modelcontextprotocol.server.McpServer;
import io.modelcontextprotocol.server.McpStatelessAsyncServer;
import io.modelcontextprotocol.spec.McpSchema;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;
import java.time.Clock;
import java.util.Map;
import reactor.core.publisher.Mono;

/**
 * {@code POST /mcp}: the Model Context Protocol over its Streamable HTTP transport (stateless: no session, no
 * server-initiated stream), built with the official Java SDK. The product key in the Bearer header is the caller
 * of every tool; each tool checks the key's scope and is audited as the REST call it stands for.
 */
public final class McpApi implements Endpoints {
  /** The implementation version this server announces: the build's, else the development version. */
  public static final String VERSION = java.util.Optional.ofNullable(McpApi.class.getPackage().getImplementationVersion())
      .orElse("0.1.0-SNAPSHOT");
  private final Vertx vertx;
  private final VertxStatelessTransport transport;
  private final McpStatelessAsyncServer server;
  private final AuditTrail audit;
  private final Clock clock;

  public McpApi(Vertx vertx, McpTools tools, AuditTrail audit, Clock clock, String version) {
    this.vertx = vertx;
    this.audit = audit;
    this.clock = clock;
    JacksonMcpJsonMapper json = new JacksonMcpJsonMapper(new ObjectMapper());
    this.transport = new VertxStatelessTransport(json);
    this.server = McpServer.async(transport).serverInfo("bespoke-sandbox-gateway", version).jsonMapper(json)
        .capabilities(McpSchema.ServerCapabilities.builder().tools(false).build())
        .tools(tools.specifications(this::call))
        .build();
  }

  @Override
  public void register(Api api) {
    api.authed(HttpMethod.POST, "/mcp", null, this::post);
    api.authed(HttpMethod.GET, "/mcp", null, (ctx, p) -> Future.failedFuture(
        new ApiException(405, "this server offers no server-initiated stream; POST JSON-RPC messages to /mcp")));
  }

  private Future<Reply> post(RoutingContext ctx, Principal p) {
    if ("session".equals(p.authMode())) {
      return Future.failedFuture(ApiException.unauthorized("MCP clients authenticate with a product key as a Bearer token"));
    }
    return transport.handle(vertx, p, Api.body(ctx)).map(text -> {
      if (text == null) {
        return Reply.of(202, null);
      }
      ctx.response().putHeader("content-type", "application/json").setStatusCode(200).end(text);
      return Reply.HANDLED;
    });
  }

  /**
   * Runs one tool as the calling key: {@code scope} checked first, the outcome audited as {@code method route}
   * at {@code path}; failures become tool errors carrying the REST answer's detail.
   */
  Mono<McpSchema.CallToolResult> call(McpTransportContext context, McpTools.Route route, String path,
      java.util.function.Function<Principal, Future<McpSchema.CallToolResult>> body) {
    Principal p = (Principal) context.get(VertxStatelessTransport.PRINCIPAL);
    if (p == null) {
      throw new IllegalStateException("an MCP call without a caller");
    }
    java.time.OffsetDateTime at = Times.now(clock);
    Future<McpSchema.CallToolResult> result;
    try {
      p.require(route.scope());
      result = body.apply(p);
    } catch (RuntimeException e) {
      result = Future.failedFuture(e);
    }
    Future<McpSchema.CallToolResult> done = result.transform(ar -> {
      if (ar.succeeded()) {
        if (route.audited()) {
          audit.recordCall(p, route.method(), route.template(), path, 200, at);
        }
        return Future.succeededFuture(ar.result());
      }
      ErrorMapper.Mapped m = ErrorMapper.map(ar.cause(), 500);
      if (route.audited()) {
        audit.recordCall(p, route.method(), route.template(), path, m.status(), at);
      }
      Object detail = m.detail();
      String text = detail instanceof String s ? s : new JsonObject().put("detail", detail).encode();
      return Future.succeededFuture(McpSchema.CallToolResult.builder().addTextContent(text).isError(true)
          .structuredContent(Map.of("status", m.status(), "detail", McpTools.plain(detail)))
          .build());
    });
    return Mono.fromCompletionStage(done.toCompletionStage());
  }

  /** How a tool reaches {@link #call}. */
  @FunctionalInterface
  interface Caller {
    Mono<McpSchema.CallToolResult> call(McpTransportContext context, McpTools.Route route, String path,
        java.util.function.Function<Principal, Future<McpSchema.CallToolResult>> body);
  }
}
