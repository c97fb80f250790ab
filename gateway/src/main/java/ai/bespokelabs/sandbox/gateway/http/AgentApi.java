package ai.bespokelabs.sandbox.gateway.http;

import ai.bespokelabs.sandbox.core.Secret;
import ai.bespokelabs.sandbox.core.Times;
import ai.bespokelabs.sandbox.core.agent.AgentCommand.Agent;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.repo.AgentSecretRepository;
import ai.bespokelabs.sandbox.gateway.agent.AgentRunRequest;
import ai.bespokelabs.sandbox.gateway.agent.AgentRuns;
import ai.bespokelabs.sandbox.gateway.auth.Principal;
import ai.bespokelabs.sandbox.gateway.auth.Scopes;
import ai.bespokelabs.sandbox.gateway.exec.ExecutionService;
import io.vertx.core.Vertx;
import io.vertx.core.Future;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;
import java.time.Clock;
import java.time.OffsetDateTime;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/** Agent runs in a sandbox, a sandbox's agent usage, and the organization's stored agent secrets. */
public final class AgentApi implements Endpoints {
  static final int MAX_PROMPT = 1 << 20;
  static final int MAX_SECRET = 64 << 10;
  static final int MAX_SECRETS = 100;
  private static final Pattern NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,255}");
  private final AgentRuns runs;
  private final AgentSecretRepository secrets;
  private final ExecutionService executions;
  private final ExecutionStreams streams;
  private final Clock clock;

  public AgentApi(Vertx vertx, AgentRuns runs, AgentSecretRepository secrets, ExecutionService executions,
      Clock clock) {
    this.runs = runs;
    this.secrets = secrets;
    this.executions = executions;
    this.streams = new ExecutionStreams(vertx, executions);
    this.clock = clock;
  }

  @Override
  public void register(Api api) {
    api.authed(HttpMethod.POST, "/v1/sandboxes/{sandbox_id}/agent-runs", Scopes.SANDBOXES_EXECUTE, this::run);
    api.authed(HttpMethod.GET, "/v1/sandboxes/{sandbox_id}/usage", Scopes.SANDBOXES_READ, this::usage);
    api.authed(HttpMethod.GET, "/v1/agent-secrets", Scopes.POLICIES_READ, this::listSecrets);
    api.authed(HttpMethod.PUT, "/v1/agent-secrets/{name}", Scopes.POLICIES_WRITE, this::putSecret);
    api.authed(HttpMethod.DELETE, "/v1/agent-secrets/{name}", Scopes.POLICIES_WRITE, this::deleteSecret);
    streams.startHeartbeats();
  }

  private Future<Reply> run(RoutingContext ctx, Principal p) {
    String sandboxId = Api.idParam(ctx, "sandbox_id", "sbx", "sandbox not found");
    AgentRunRequest req = parse(Body.parse(Api.body(ctx)));
    String accept = ctx.request().getHeader("Accept");
    if (accept == null || !accept.contains("text/event-stream")) {
      return runs.run(p, sandboxId, req).map(Reply::ok);
    }
    // streamed: the CLI's events as the execution streams them, then the run as a last result event
    return runs.prepare(p, sandboxId, req).compose(prepared -> streams.execute(ctx, p, sandboxId,
        prepared.execution(), null, (sse, executionId) -> new AgentRunStream(sse, executionId,
            id -> executions.find(p, sandboxId, id).compose(e -> e.response() instanceof JsonObject answer
                ? runs.record(p, sandboxId, req, prepared.command(), answer.copy().put("execution_id", id))
                : Future.failedFuture(ApiException.conflict("the run's execution ended without a result"))))));
  }

  private Future<Reply> usage(RoutingContext ctx, Principal p) {
    String sandboxId = Api.idParam(ctx, "sandbox_id", "sbx", "sandbox not found");
    return runs.usage(p, sandboxId).map(Reply::ok);
  }

  public static AgentRunRequest parse(Body body) {
    String agent = body.string("agent", true, 1, 64);
    String prompt = body.string("prompt", true, 1, MAX_PROMPT);
    Boolean resume = body.bool("resume");
    List<String> extraArgs = body.stringList("extra_args");
    List<String> command = body.stringList("command");
    String inputMode = body.string("input_mode", false, 1, 16);
    Map<String, String> env = body.stringMap("env");
    Integer timeout = body.integer("timeout_secs", 0, null);
    body.check();
    Agent which = Agent.of(agent);
    if (which == null) {
      throw ApiException.invalid("agent must be one of claude-code, codex");
    }
    if (inputMode != null && !inputMode.equals("argv") && !inputMode.equals("stdin")) {
      throw ApiException.invalid("input_mode must be one of argv, stdin");
    }
    noNul("prompt", List.of(prompt));
    noNul("extra_args", extraArgs);
    noNul("command", command);
    if (env != null) {
      for (Map.Entry<String, String> e : env.entrySet()) {
        if (!NAME.matcher(e.getKey()).matches()) {
          throw ApiException.invalid("env var names must match [A-Za-z_][A-Za-z0-9_]*");
        }
        noNul("env", List.of(e.getValue()));
      }
    }
    return new AgentRunRequest(which, prompt, Boolean.TRUE.equals(resume), extraArgs, command,
        "stdin".equals(inputMode), env, timeout);
  }

  private static void noNul(String field, List<String> values) {
    for (String v : values == null ? List.<String>of() : values) {
      if (v.indexOf('\0') >= 0) {
        throw ApiException.invalid(field + " must not contain NUL characters");
      }
    }
  }

  private Future<Reply> listSecrets(RoutingContext ctx, Principal p) {
    return secrets.list(p.organizationId()).map(all -> {
      JsonArray items = new JsonArray();
      all.forEach(e -> items.add(new JsonObject().put("name", e.name()).put("created_at", Times.iso(e.createdAt()))
          .put("updated_at", Times.iso(e.updatedAt()))));
      return Reply.ok(new JsonObject().put("items", items));
    });
  }

  private Future<Reply> putSecret(RoutingContext ctx, Principal p) {
    String name = secretName(ctx);
    Body body = Body.parse(Api.body(ctx));
    String value = body.string("value", true, 1, MAX_SECRET);
    body.check();
    if (value.indexOf('\0') >= 0) {
      throw ApiException.invalid("value must not contain NUL characters");
    }
    OffsetDateTime now = OffsetDateTime.now(clock);
    return secrets.list(p.organizationId()).compose(existing -> {
      boolean known = existing.stream().anyMatch(e -> e.name().equals(name));
      if (!known && existing.size() >= MAX_SECRETS) {
        return Future.failedFuture(ApiException.conflict("an organization stores at most " + MAX_SECRETS
            + " agent secrets"));
      }
      return secrets.put(p.organizationId(), name, new Secret(value), p.keyId(), now);
    }).map(created -> Reply.of(created ? 201 : 200, new JsonObject().put("name", name)
        .put("updated_at", Times.iso(now))));
  }

  private Future<Reply> deleteSecret(RoutingContext ctx, Principal p) {
    String name = secretName(ctx);
    return secrets.delete(p.organizationId(), name).map(deleted -> {
      if (!deleted) {
        throw ApiException.notFound("agent secret not found");
      }
      return Reply.noContent();
    });
  }

  private static String secretName(RoutingContext ctx) {
    String name = ctx.pathParam("name");
    if (name == null || !NAME.matcher(name).matches()) {
      throw ApiException.invalid("secret names must match [A-Za-z_][A-Za-z0-9_]*");
    }
    return name;
  }
}
