package ai.bespokelabs.sandbox.gateway.mcp;

import ai.bespokelabs.sandbox.core.Ids;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.gateway.agent.AgentRuns;
import ai.bespokelabs.sandbox.gateway.auth.Principal;
import ai.bespokelabs.sandbox.gateway.auth.Scopes;
import ai.bespokelabs.sandbox.gateway.exec.ExecutionService;
import ai.bespokelabs.sandbox.gateway.http.AgentApi;
import ai.bespokelabs.sandbox.gateway.http.Body;
import ai.bespokelabs.sandbox.gateway.http.ExecRequests;
import io.modelcontextprotocol.spec.McpSchema;
import io.modelcontextprotocol.server.McpStatelessServerFeatures.AsyncToolSpecification;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * The tools an MCP client gets: each one the REST call of the same name, with its validation, scope, output caps
 * and audit entry. Arguments are the REST body's fields plus {@code sandbox_id}.
 */
public final class McpTools {
  /** The REST call a tool stands for: its route, the scope it needs, and whether it is audited. */
  record Route(HttpMethod method, String template, String scope, boolean audited) {
    String path(String sandboxId) {
      return template.replace("{sandbox_id}", sandboxId);
    }
  }

  static final Route EXECUTE = new Route(HttpMethod.POST, "/v1/sandboxes/{sandbox_id}/execute",
      Scopes.SANDBOXES_EXECUTE, true);
  static final Route RUN_AGENT = new Route(HttpMethod.POST, "/v1/sandboxes/{sandbox_id}/agent-runs",
      Scopes.SANDBOXES_EXECUTE, true);
  static final Route CREATE = new Route(HttpMethod.POST, "/v1/sandboxes", Scopes.SANDBOXES_CREATE, true);
  static final Route DESTROY = new Route(HttpMethod.DELETE, "/v1/sandboxes/{sandbox_id}", Scopes.SANDBOXES_TERMINATE,
      true);
  static final Route LIST_FILES = new Route(HttpMethod.GET, "/v1/sandboxes/{sandbox_id}/files",
      Scopes.SANDBOXES_READ, false);
  static final Route READ_FILE = new Route(HttpMethod.GET, "/v1/sandboxes/{sandbox_id}/files/content",
      Scopes.SANDBOXES_READ, false);
  static final Route WRITE_FILE = new Route(HttpMethod.PUT, "/v1/sandboxes/{sandbox_id}/files/content",
      Scopes.SANDBOXES_EXECUTE, true);

  private final ExecutionService executions;
  private final AgentRuns agents;
  private final McpFiles files;
  private final ai.bespokelabs.sandbox.gateway.http.SandboxApi sandboxApi;

  public McpTools(ExecutionService executions, AgentRuns agents, ai.bespokelabs.sandbox.core.bus.RuntimeClient runtime,
      ai.bespokelabs.sandbox.core.repo.SandboxRepository sandboxes, ai.bespokelabs.sandbox.gateway.http.SandboxApi sandboxApi) {
    this.sandboxApi = sandboxApi;
    this.executions = executions;
    this.agents = agents;
    this.files = new McpFiles(runtime, sandboxes);
  }

  List<AsyncToolSpecification> specifications(McpApi.Caller caller) {
    List<AsyncToolSpecification> all = new ArrayList<>();
    all.add(tool("create_sandbox", "Create a sandbox and wait until it runs. The arguments are the create body's "
            + "fields (backend, cpu, memory_mb, timeout_secs, image, template, env_vars, allow_internet, preset, ...).",
        schema(Map.of("backend", string("local, docker, e2b, ... (the gateway's default when omitted)"),
            "preset", string("claude-code, codex, claude-code-codex, or one of the organization's"),
            "cpu", Map.of("type", "number"), "memory_mb", Map.of("type", "integer"),
            "timeout_secs", Map.of("type", "integer"), "image", string("A container image"),
            "template", string("A template"), "allow_internet", Map.of("type", "boolean"),
            "env_vars", Map.of("type", "object", "additionalProperties", Map.of("type", "string"))), List.of()),
        (ctx, args) -> caller.call(ctx, CREATE, "/v1/sandboxes", p -> sandboxApi.create(p,
            Buffer.buffer(new JsonObject(new LinkedHashMap<>(args)).encode()), null).compose(McpTools::answer)
            .map(sbx -> result("created " + sbx.getString("id") + " (" + sbx.getString("backend") + ", "
                + sbx.getString("status") + ")", sbx)))));
    all.add(tool("destroy_sandbox", "Terminate a sandbox and everything running in it.",
        schema(Map.of("sandbox_id", string("The sandbox, sbx_...")), List.of("sandbox_id")),
        (ctx, args) -> {
          String sandbox = sandboxId(args);
          return caller.call(ctx, DESTROY, DESTROY.path(sandbox), p -> sandboxApi.terminate(p, sandbox, null)
              .compose(McpTools::answer).map(sbx -> result(sandbox + " is " + sbx.getString("status"), sbx)));
        }));
    all.add(tool("execute", "Run code (python by default) or a command in a running sandbox and get its stdout, "
            + "stderr and exit code. Output beyond the deployment's per-stream limit is cut.",
        schema(Map.of("sandbox_id", string("The sandbox, sbx_..."), "code", string("Source code to run"),
            "language", string("Interpreter of code: python (default), bash, node, ..."),
            "command", string("A command line (run by bash) or, with args, a program"),
            "args", Map.of("type", "array", "items", Map.of("type", "string")),
            "timeout_secs", Map.of("type", "integer", "exclusiveMinimum", 0)), List.of("sandbox_id")),
        (ctx, args) -> {
          String sandbox = sandboxId(args);
          return caller.call(ctx, EXECUTE, EXECUTE.path(sandbox), p -> executions.execute(p, sandbox,
              ExecRequests.parse(body(args)), null).map(McpTools::executeResult));
        }));
    all.add(tool("run_agent", "Run Claude Code or Codex non-interactively inside a sandbox and get its answer, "
            + "session and priced usage.",
        schema(Map.of("sandbox_id", string("The sandbox, sbx_..."),
            "agent", Map.of("type", "string", "enum", List.of("claude-code", "codex")),
            "prompt", string("What the agent is asked"), "resume", Map.of("type", "boolean"),
            "extra_args", Map.of("type", "array", "items", Map.of("type", "string")),
            "timeout_secs", Map.of("type", "integer", "exclusiveMinimum", 0)), List.of("sandbox_id", "agent", "prompt")),
        (ctx, args) -> {
          String sandbox = sandboxId(args);
          return caller.call(ctx, RUN_AGENT, RUN_AGENT.path(sandbox), p -> agents.run(p, sandbox,
              AgentApi.parse(body(args))).map(run -> result(run.getString("error") == null
                  ? run.getString("text") : "error: " + run.getString("error") + "\n" + run.getString("text"), run)));
        }));
    all.add(tool("list_files", "List a directory of a running sandbox (name, path, is_dir, size).",
        schema(Map.of("sandbox_id", string("The sandbox, sbx_..."), "path", string("The directory")),
            List.of("sandbox_id", "path")),
        (ctx, args) -> {
          String sandbox = sandboxId(args);
          String path = McpFiles.path(args.get("path"));
          return caller.call(ctx, LIST_FILES, LIST_FILES.path(sandbox), p -> files.list(p, sandbox, path)
              .map(listing -> result(listing.getJsonArray("entries").stream().map(e -> ((JsonObject) e)
                  .getString("path") + (Boolean.TRUE.equals(((JsonObject) e).getBoolean("is_dir")) ? "/" : ""))
                  .collect(java.util.stream.Collectors.joining("\n")), listing)));
        }));
    all.add(tool("read_file", "Read a text file of a running sandbox (at most " + McpFiles.MAX_BYTES + " bytes).",
        schema(Map.of("sandbox_id", string("The sandbox, sbx_..."), "path", string("The file")),
            List.of("sandbox_id", "path")),
        (ctx, args) -> {
          String sandbox = sandboxId(args);
          String path = McpFiles.path(args.get("path"));
          return caller.call(ctx, READ_FILE, READ_FILE.path(sandbox), p -> files.read(p, sandbox, path)
              .map(bytes -> McpSchema.CallToolResult.builder()
                  .addTextContent(new String(bytes, java.nio.charset.StandardCharsets.UTF_8)).build()));
        }));
    all.add(tool("write_file", "Write a text file in a running sandbox, replacing it (at most " + McpFiles.MAX_BYTES
            + " bytes).",
        schema(Map.of("sandbox_id", string("The sandbox, sbx_..."), "path", string("The file"),
            "content", string("Its new content")), List.of("sandbox_id", "path", "content")),
        (ctx, args) -> {
          String sandbox = sandboxId(args);
          String path = McpFiles.path(args.get("path"));
          if (!(args.get("content") instanceof String content)) {
            throw ApiException.invalid("content is required");
          }
          return caller.call(ctx, WRITE_FILE, WRITE_FILE.path(sandbox), p -> files.write(p, sandbox, path, content)
              .map(entry -> result("wrote " + path, entry)));
        }));
    return all;
  }

  private interface Handler {
    reactor.core.publisher.Mono<McpSchema.CallToolResult> apply(io.modelcontextprotocol.common.McpTransportContext ctx,
        Map<String, Object> args);
  }

  private static AsyncToolSpecification tool(String name, String description, Map<String, Object> schema,
      Handler handler) {
    McpSchema.Tool tool = McpSchema.Tool.builder(name, schema).description(description).build();
    return AsyncToolSpecification.builder().tool(tool).callHandler((ctx, req) -> {
      Map<String, Object> args = req.arguments() == null ? Map.of() : req.arguments();
      try {
        return handler.apply(ctx, args);
      } catch (ApiException e) {
        return reactor.core.publisher.Mono.just(McpSchema.CallToolResult.builder()
            .addTextContent(String.valueOf(e.detail())).isError(true).build());
      }
    }).build();
  }

  private static Map<String, Object> schema(Map<String, Object> properties, List<String> required) {
    Map<String, Object> s = new LinkedHashMap<>();
    s.put("type", "object");
    s.put("properties", properties);
    s.put("required", required);
    return s;
  }

  private static Map<String, Object> string(String description) {
    return Map.of("type", "string", "description", description);
  }

  private static String sandboxId(Map<String, Object> args) {
    Object id = args.get("sandbox_id");
    if (!(id instanceof String s) || !Ids.isValid("sbx", s)) {
      throw ApiException.notFound("sandbox not found");
    }
    return s;
  }

  /** The tool's arguments but {@code sandbox_id}, as the REST body they stand for. */
  private static Body body(Map<String, Object> args) {
    JsonObject json = new JsonObject(new LinkedHashMap<>(args));
    json.remove("sandbox_id");
    return Body.parse(Buffer.buffer(json.encode()));
  }

  /** The body of a REST answer, or its status and detail as the failure a tool reports. */
  private static Future<JsonObject> answer(ai.bespokelabs.sandbox.gateway.http.Reply r) {
    if (r.status() >= 400) {
      Object body = r.body();
      Object detail = body instanceof JsonObject j && j.containsKey("detail") ? j.getValue("detail") : body;
      return Future.failedFuture(new ApiException(r.status(), detail));
    }
    return Future.succeededFuture(r.body() instanceof JsonObject j ? j : new JsonObject());
  }

  private static McpSchema.CallToolResult executeResult(JsonObject r) {
    String text = "exit_code: " + r.getValue("exit_code") + (Boolean.TRUE.equals(r.getBoolean("timed_out"))
        ? " (timed out)" : "") + "\n--- stdout ---\n" + r.getString("stdout", "") + "\n--- stderr ---\n"
        + r.getString("stderr", "");
    return result(text, r);
  }

  private static McpSchema.CallToolResult result(String text, JsonObject structured) {
    return McpSchema.CallToolResult.builder().addTextContent(text).structuredContent(plain(structured)).build();
  }

  /** A Vert.x JSON value as plain maps, lists and scalars, as the SDK's mapper writes them. */
  static Object plain(Object json) {
    if (json instanceof JsonObject o) {
      return io.vertx.core.json.Json.decodeValue(o.encode(), Map.class);
    }
    if (json instanceof io.vertx.core.json.JsonArray a) {
      return io.vertx.core.json.Json.decodeValue(a.encode(), List.class);
    }
    return json;
  }

}
