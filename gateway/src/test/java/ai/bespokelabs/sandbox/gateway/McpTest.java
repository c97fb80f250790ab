package ai.bespokelabs.sandbox.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.gateway.TestGateway.Resp;
import io.modelcontextprotocol.client.McpClient;
import io.modelcontextprotocol.client.McpSyncClient;
import io.modelcontextprotocol.client.transport.HttpClientStreamableHttpTransport;
import io.modelcontextprotocol.spec.McpSchema;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.net.http.HttpRequest;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** MCP over Streamable HTTP, driven by the SDK's own client, as a product key. */
class McpTest {
  @RegisterExtension
  static final GatewayExtension GATEWAY = new GatewayExtension();
  static TestGateway gw;

  static McpSyncClient client(String key) {
    HttpClientStreamableHttpTransport transport = HttpClientStreamableHttpTransport.builder(gw.base)
        .endpoint("/mcp").requestBuilder(HttpRequest.newBuilder().header("Authorization", "Bearer " + key)).build();
    McpSyncClient client = McpClient.sync(transport).requestTimeout(Duration.ofSeconds(60)).build();
    client.initialize();
    return client;
  }

  static String text(McpSchema.CallToolResult r) {
    return ((McpSchema.TextContent) r.content().get(0)).text();
  }

  @Test
  void a_client_lists_the_tools_and_executes_in_its_own_sandbox() {
    String key = gw.bootstrap("Mcp");
    String sbx = gw.sandbox(key, new JsonObject()).getString("id");
    try (McpSyncClient client = client(key)) {
      assertThat(client.getServerInfo().name()).isEqualTo("bespoke-sandbox-gateway");
      List<String> tools = client.listTools().tools().stream().map(McpSchema.Tool::name).toList();
      assertThat(tools).contains("execute", "run_agent");
      McpSchema.CallToolResult ran = client.callTool(new McpSchema.CallToolRequest("execute",
          Map.of("sandbox_id", sbx, "command", "echo hello; echo oops >&2; exit 3")));
      assertThat(ran.isError()).isFalse();
      assertThat(text(ran)).isEqualTo("exit_code: 3\n--- stdout ---\nhello\n\n--- stderr ---\noops\n");
      McpSchema.CallToolResult code = client.callTool(new McpSchema.CallToolRequest("execute",
          Map.of("sandbox_id", sbx, "code", "print(6 * 7)")));
      assertThat(text(code)).contains("42");

      McpSchema.CallToolResult bad = client.callTool(new McpSchema.CallToolRequest("execute",
          Map.of("sandbox_id", sbx)));
      assertThat(bad.isError()).isTrue();
      assertThat(text(bad)).contains("provide exactly one of code or command");
      McpSchema.CallToolResult missing = client.callTool(new McpSchema.CallToolRequest("execute",
          Map.of("sandbox_id", "sbx_00000000000000000000000000000000", "command", "true")));
      assertThat(missing.isError()).isTrue();
      assertThat(text(missing)).isEqualTo("sandbox not found");
    }
    // another organization's key cannot reach the sandbox through MCP either
    try (McpSyncClient other = client(gw.bootstrap("Other"))) {
      McpSchema.CallToolResult r = other.callTool(new McpSchema.CallToolRequest("execute",
          Map.of("sandbox_id", sbx, "command", "true")));
      assertThat(r.isError()).isTrue();
      assertThat(text(r)).isEqualTo("sandbox not found");
    }
    JsonArray audit = gw.get("/v1/audit?limit=50", key).json().getJsonArray("items");
    assertThat(audit.stream().map(e -> ((JsonObject) e).getString("action")))
        .as("tool calls are audited as the REST call they stand for").contains("sandbox.execute");
  }

  @Test
  void a_read_only_key_gets_a_tool_error_naming_the_scope_and_no_key_gets_401() {
    String admin = gw.bootstrap("ReadOnly");
    String sbx = gw.sandbox(admin, new JsonObject()).getString("id");
    try (McpSyncClient client = client(gw.key(admin, "sandboxes:read"))) {
      McpSchema.CallToolResult r = client.callTool(new McpSchema.CallToolRequest("execute",
          Map.of("sandbox_id", sbx, "command", "touch /tmp/never")));
      assertThat(r.isError()).isTrue();
      assertThat(text(r)).isEqualTo("API key requires scope: sandboxes:execute");
    }
    Resp anonymous = gw.send("POST", "/mcp", null, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}",
        "Content-Type", "application/json", "Accept", "application/json, text/event-stream");
    assertThat(anonymous.status()).isEqualTo(401);
    Resp garbage = gw.send("POST", "/mcp", admin, "{\"not\":\"rpc\"}", "Content-Type", "application/json");
    assertThat(garbage.status()).isEqualTo(400);
    assertThat(gw.get("/mcp", admin).status()).isEqualTo(405);
  }

  @Test
  void files_are_written_read_and_listed_through_tools_within_the_key_scopes() {
    String key = gw.bootstrap("McpFiles");
    String sbx = gw.sandbox(key, new JsonObject()).getString("id");
    try (McpSyncClient client = client(key)) {
      McpSchema.CallToolResult wrote = client.callTool(new McpSchema.CallToolRequest("write_file",
          Map.of("sandbox_id", sbx, "path", "notes/hello.txt", "content", "héllo\nworld\n")));
      assertThat(wrote.isError()).as(text(wrote)).isFalse();
      McpSchema.CallToolResult read = client.callTool(new McpSchema.CallToolRequest("read_file",
          Map.of("sandbox_id", sbx, "path", "notes/hello.txt")));
      assertThat(text(read)).isEqualTo("héllo\nworld\n");
      McpSchema.CallToolResult listed = client.callTool(new McpSchema.CallToolRequest("list_files",
          Map.of("sandbox_id", sbx, "path", "notes")));
      assertThat(text(listed)).contains("hello.txt");
      McpSchema.CallToolResult missing = client.callTool(new McpSchema.CallToolRequest("read_file",
          Map.of("sandbox_id", sbx, "path", "notes/absent.txt")));
      assertThat(missing.isError()).isTrue();
      McpSchema.CallToolResult escape = client.callTool(new McpSchema.CallToolRequest("read_file",
          Map.of("sandbox_id", sbx, "path", "../../etc/shadow")));
      assertThat(escape.isError()).as("paths escaping the sandbox are refused as on the files routes").isTrue();
    }
    assertThat(gw.get("/v1/sandboxes/" + sbx + "/files/content?path=notes/hello.txt", key).body())
        .isEqualTo("héllo\nworld\n");
    try (McpSyncClient readOnly = client(gw.key(key, "sandboxes:read"))) {
      assertThat(text(readOnly.callTool(new McpSchema.CallToolRequest("read_file",
          Map.of("sandbox_id", sbx, "path", "notes/hello.txt"))))).isEqualTo("héllo\nworld\n");
      McpSchema.CallToolResult denied = readOnly.callTool(new McpSchema.CallToolRequest("write_file",
          Map.of("sandbox_id", sbx, "path", "notes/x.txt", "content", "x")));
      assertThat(denied.isError()).isTrue();
      assertThat(text(denied)).isEqualTo("API key requires scope: sandboxes:execute");
    }
  }

  @Test
  void a_sandbox_is_created_used_and_destroyed_through_tools_and_a_read_only_key_cannot_create() {
    String key = gw.bootstrap("McpLifecycle");
    String sbx;
    try (McpSyncClient client = client(key)) {
      McpSchema.CallToolResult created = client.callTool(new McpSchema.CallToolRequest("create_sandbox",
          Map.of("backend", "local", "timeout_secs", 600)));
      assertThat(created.isError()).as(text(created)).isFalse();
      sbx = text(created).split(" ")[1];
      assertThat(text(created)).isEqualTo("created " + sbx + " (local, running)");
      assertThat(text(client.callTool(new McpSchema.CallToolRequest("execute",
          Map.of("sandbox_id", sbx, "command", "echo inside"))))).contains("inside");
      McpSchema.CallToolResult bad = client.callTool(new McpSchema.CallToolRequest("create_sandbox",
          Map.of("backend", "nonexistent")));
      assertThat(bad.isError()).isTrue();
      McpSchema.CallToolResult destroyed = client.callTool(new McpSchema.CallToolRequest("destroy_sandbox",
          Map.of("sandbox_id", sbx)));
      assertThat(text(destroyed)).isEqualTo(sbx + " is destroyed");
    }
    assertThat(gw.get("/v1/sandboxes/" + sbx, key).json().getString("status")).isEqualTo("destroyed");
    try (McpSyncClient readOnly = client(gw.key(key, "sandboxes:read"))) {
      McpSchema.CallToolResult denied = readOnly.callTool(new McpSchema.CallToolRequest("create_sandbox",
          Map.of("backend", "local")));
      assertThat(denied.isError()).isTrue();
      assertThat(text(denied)).isEqualTo("API key requires scope: sandboxes:create");
    }
    JsonArray audit = gw.get("/v1/audit?limit=50", key).json().getJsonArray("items");
    assertThat(audit.stream().map(e -> ((JsonObject) e).getString("action")))
        .contains("sandbox.create", "sandbox.terminate");
  }
}
