package ai.bespokelabs.sandbox.gateway.agent;

import ai.bespokelabs.sandbox.core.Ids;
import ai.bespokelabs.sandbox.core.Secret;
import ai.bespokelabs.sandbox.core.agent.AgentCommand;
import ai.bespokelabs.sandbox.core.agent.AgentCommand.Agent;
import ai.bespokelabs.sandbox.core.agent.AgentReport;
import ai.bespokelabs.sandbox.core.agent.AgentUsage;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.pricing.PricingCatalog;
import ai.bespokelabs.sandbox.core.repo.AgentRunRepository;
import ai.bespokelabs.sandbox.core.repo.AgentSecretRepository;
import ai.bespokelabs.sandbox.core.repo.SandboxRepository;
import ai.bespokelabs.sandbox.gateway.auth.Principal;
import ai.bespokelabs.sandbox.gateway.exec.ExecRequest;
import ai.bespokelabs.sandbox.gateway.exec.ExecutionService;
import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.time.Clock;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Runs an agent's CLI inside a sandbox as one execution and prices what it reported: the organization's stored
 * agent secrets and the run's own {@code env} (which wins) are the CLI's environment, never the gateway's; the
 * output is read by the agent's reader; the run is stored once (its LLM-cost line) whatever its outcome.
 */
public final class AgentRuns {
  /** The variable that carries a prompt given on stdin to the shell that pipes it; unset before the CLI starts. */
  static final String PROMPT_VARIABLE = "BESPOKE_AGENT_PROMPT";
  /** Answers 127 with the shell's message when the program is not on the sandbox's PATH, on every backend. */
  private static final String FIND = "command -v \"$1\" >/dev/null 2>&1 || { echo \"$1: command not found\" >&2;"
      + " exit 127; }; ";
  private static final String ARGV_SCRIPT = FIND + "exec \"$@\"";
  private static final String STDIN_SCRIPT = FIND + "printf '%s' \"$" + PROMPT_VARIABLE + "\" | { unset "
      + PROMPT_VARIABLE + "; exec \"$@\"; }";

  private final ExecutionService executions;
  private final SandboxRepository sandboxes;
  private final AgentRunRepository runs;
  private final AgentSecretRepository secrets;
  private final Clock clock;
  private final PricingCatalog pricing;

  public AgentRuns(ExecutionService executions, SandboxRepository sandboxes, AgentRunRepository runs,
      AgentSecretRepository secrets, PricingCatalog pricing, Clock clock) {
    this.pricing = pricing;
    this.executions = executions;
    this.sandboxes = sandboxes;
    this.runs = runs;
    this.secrets = secrets;
    this.clock = clock;
  }

  /** What a run executes: the CLI's command and the execution that runs it. */
  public record Prepared(AgentCommand command, ExecRequest execution) {}

  /** Runs the agent and answers the run: text, session, exit code, error, duration and priced usage. */
  public Future<JsonObject> run(Principal p, String sandboxId, AgentRunRequest req) {
    return prepare(p, sandboxId, req).compose(prepared -> executions.execute(p, sandboxId, prepared.execution(), null)
        .compose(answer -> record(p, sandboxId, req, prepared.command(), answer)));
  }

  /**
   * The execution of a run: the sandbox must be the caller's, the session to resume must exist, and the
   * environment is the organization's stored secrets under the run's own values.
   */
  public Future<Prepared> prepare(Principal p, String sandboxId, AgentRunRequest req) {
    return sandboxes.find(p.organizationId(), sandboxId).compose(found -> {
      if (found.isEmpty()) {
        return Future.failedFuture(ApiException.notFound("sandbox not found"));
      }
      Future<Optional<String>> session = req.resume()
          ? runs.lastSession(p.organizationId(), sandboxId, req.agent().wire)
          : Future.succeededFuture(Optional.empty());
      return session.compose(resumed -> {
        if (req.resume() && resumed.isEmpty()) {
          return Future.failedFuture(ApiException.conflict("this sandbox has no earlier " + req.agent().wire
              + " session to resume"));
        }
        return secrets.openAll(p.organizationId()).map(stored -> {
          AgentCommand command = AgentCommand.of(req.agent(), req.prompt(), req.command(), resumed.orElse(null),
              req.extraArgs(), req.stdinPrompt());
          return new Prepared(command, execRequest(command, environment(stored, req.env()), req.timeoutSecs()));
        });
      });
    });
  }

  /** A sandbox's running totals over its agent runs, as the seed's {@code sb.usage}. */
  public Future<JsonObject> usage(Principal p, String sandboxId) {
    return sandboxes.find(p.organizationId(), sandboxId).compose(found -> {
      if (found.isEmpty()) {
        return Future.failedFuture(ApiException.notFound("sandbox not found"));
      }
      return runs.totals(p.organizationId(), sandboxId).map(t -> usageJson(t.usage(), t.computeSeconds(),
          t.computeCostUsd()).put("runs", t.runs()).put("sandbox_id", sandboxId));
    });
  }

  /**
   * Reads the run's output from its execution's answer (as {@code execute} answers it), stores the run once and
   * answers it.
   */
  public Future<JsonObject> record(Principal p, String sandboxId, AgentRunRequest req, AgentCommand command,
      JsonObject answer) {
    String stdout = answer.getString("stdout", "");
    int exitCode = answer.getInteger("exit_code", -1);
    AgentReport report = priced(req, req.agent().read(stdout));
    Optional<String> error = report.error();
    if (exitCode == 127 && report.sessionId() == null && report.usage().equals(AgentUsage.NONE)) {
      error = Optional.of(notInstalled(req, command));
    } else if (Boolean.TRUE.equals(answer.getBoolean("timed_out"))) {
      error = Optional.of("the agent did not finish within its timeout");
    } else if (error.isEmpty() && exitCode != 0) {
      error = Optional.of("the agent exited with code " + exitCode);
    }
    if (Boolean.TRUE.equals(answer.getBoolean("stdout_truncated"))) {
      error = Optional.of(error.map(e -> e + "; ").orElse("")
          + "the agent's output exceeded the output cap: its usage may be incomplete");
    }
    long durationMs = answer.getLong("duration_ms", 0L);
    BigDecimal seconds = BigDecimal.valueOf(durationMs).movePointLeft(3);
    JsonObject execUsage = answer.getJsonObject("usage", new JsonObject());
    BigDecimal computeCost = new BigDecimal(String.valueOf(execUsage.getValue("provider_cost_usd", "0")));
    String runId = Ids.newId("run");
    OffsetDateTime now = OffsetDateTime.now(clock);
    AgentRunRepository.Run run = new AgentRunRepository.Run(runId, p.organizationId(), sandboxId,
        answer.getString("execution_id"), req.agent().wire, report.sessionId(), exitCode, error.orElse(null),
        report.usage(), seconds, computeCost, durationMs, now);
    return runs.insert(run).map(v -> {
      JsonObject out = new JsonObject().put("run_id", runId).put("agent", req.agent().wire)
          .put("execution_id", run.executionId()).put("text", report.text()).put("session_id", report.sessionId())
          .put("exit_code", exitCode).put("duration_ms", durationMs)
          .put("usage", usageJson(report.usage(), seconds, computeCost));
      if (run.error() != null) {
        out.put("error", run.error());
      }
      return out;
    });
  }

  /**
   * The report, with its LLM cost from the pricing catalog when the CLI reported tokens but no cost (Codex) and
   * the catalog prices the model the run asked for ({@code -m}/{@code --model} in {@code extra_args}).
   */
  AgentReport priced(AgentRunRequest req, AgentReport report) {
    AgentUsage u = report.usage();
    if (u.llmCostUsd().signum() != 0) {
      return report;
    }
    return pricing.model(model(req.extraArgs())).map(rates -> new AgentReport(report.text(), report.sessionId(),
        new AgentUsage(u.inputTokens(), u.outputTokens(), u.cacheReadTokens(), u.cacheWriteTokens(),
            rates.cost(u.inputTokens(), u.cacheReadTokens(), u.outputTokens())), report.error())).orElse(report);
  }

  /** The model named by {@code -m X}, {@code --model X} or {@code --model=X}; null when none. */
  static String model(List<String> args) {
    String model = null;
    for (int i = 0; i < args.size(); i++) {
      String a = args.get(i);
      if ((a.equals("-m") || a.equals("--model")) && i + 1 < args.size()) {
        model = args.get(++i);
      } else if (a.startsWith("--model=")) {
        model = a.substring("--model=".length());
      }
    }
    return model;
  }

  private static String notInstalled(AgentRunRequest req, AgentCommand command) {
    String program = command.argv().get(0);
    if (!req.command().isEmpty()) {
      return program + " was not found in this sandbox";
    }
    String presets = req.agent() == Agent.CLAUDE_CODE ? "claude-code (or claude-code-codex)"
        : "codex (or claude-code-codex)";
    return program + " is not installed in this sandbox: create the sandbox with the preset " + presets;
  }

  static JsonObject usageJson(AgentUsage usage, BigDecimal computeSeconds, BigDecimal computeCost) {
    BigDecimal llm = usage.llmCostUsd();
    return usage.toJson().put("llm_cost_usd", plain(llm)).put("compute_seconds", plain(computeSeconds))
        .put("compute_cost_usd", plain(computeCost)).put("total_cost_usd", plain(llm.add(computeCost)));
  }

  /** An amount as a JSON number, exactly, without trailing zeros (at most 12 decimals for computed ones). */
  private static BigDecimal plain(BigDecimal d) {
    BigDecimal s = d.scale() > 12 ? d.setScale(12, RoundingMode.HALF_UP) : d;
    s = s.stripTrailingZeros();
    return s.scale() < 0 ? s.setScale(0) : s;
  }

  /** The stored secrets, then the run's own values over them. */
  static Map<String, String> environment(Map<String, Secret> stored, Map<String, String> own) {
    Map<String, String> env = new LinkedHashMap<>();
    stored.forEach((k, v) -> env.put(k, v.reveal()));
    env.putAll(own);
    return env;
  }

  /**
   * The CLI as the program of one execution, under {@code sh} (every backend's images have it): the shell only
   * checks the program exists and, for a prompt on stdin, pipes it from a variable; the CLI's arguments are the
   * shell's positional parameters, never parsed by it.
   */
  static ExecRequest execRequest(AgentCommand command, Map<String, String> env, Integer timeoutSecs) {
    List<String> args = new ArrayList<>(List.of("-c", command.stdin() == null ? ARGV_SCRIPT : STDIN_SCRIPT, "agent"));
    args.addAll(command.argv());
    Map<String, String> all = new LinkedHashMap<>(env);
    if (command.stdin() != null) {
      all.put(PROMPT_VARIABLE, command.stdin());
    }
    return new ExecRequest(null, null, "sh", args, all, null, timeoutSecs, false);
  }
}
