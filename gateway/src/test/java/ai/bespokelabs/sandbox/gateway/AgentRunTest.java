package ai.bespokelabs.sandbox.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.gateway.TestGateway.Resp;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.math.BigDecimal;
import java.nio.file.Files;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Agent runs on the local backend with stand-in CLIs that print what Claude Code and Codex print in their JSON
 * modes (success, error, resume), priced by an operator's catalog.
 */
class AgentRunTest {
  @RegisterExtension
  static final GatewayExtension GATEWAY = new GatewayExtension(AgentRunTest::pricing);
  static TestGateway gw;

  static Map<String, String> pricing() {
    return PricingFiles.settings("""
        {"last_updated": "2026-11-01", "backends": {
          "local": {"vcpu_per_hour_usd": 3600, "ram_gib_per_hour_usd": 0}},
         "llm_models": {"gpt-test": {"input_per_million_usd": 2, "cached_input_per_million_usd": 0.5,
          "output_per_million_usd": 10}}}""");
  }

  /**
   * Claude Code in {@code -p --output-format json} mode: answers the prompt (last argument, or stdin), resumes the
   * session after {@code --resume}, fails as Claude Code does when the prompt says so, and tells whether
   * {@code ANTHROPIC_API_KEY} hashes to the value after {@code key:} in the prompt.
   */
  static final String CLAUDE = """
      import sys, os, json, hashlib
      a = sys.argv[1:]
      assert a[:3] == ['-p', '--output-format', 'json'], a
      rest = a[3:]
      session = 'sess-new'
      if rest[:1] == ['--resume']:
          session = rest[1]; rest = rest[2:]
      prompt = rest[-1] if rest and rest[-1] != '--stdin' else sys.stdin.read()
      if 'key:' in prompt:
          want = prompt.split('key:')[1].strip()
          got = hashlib.sha256(os.environ.get('ANTHROPIC_API_KEY', '').encode()).hexdigest()
          prompt = 'key ' + ('matches' if got == want else 'differs') + ' gateway-env ' + str(
              any(k.startswith('BESPOKE_') and k != 'BESPOKE_AGENT_PROMPT' for k in os.environ))
      if 'fail' in prompt:
          print(json.dumps({'type': 'result', 'subtype': 'error_max_turns', 'is_error': True, 'session_id': session,
              'total_cost_usd': 0.25, 'usage': {'input_tokens': 1, 'output_tokens': 2}}))
          sys.exit(1)
      print(json.dumps({'type': 'result', 'subtype': 'success', 'is_error': False, 'result': 'echo ' + prompt
          + ' args ' + ' '.join(rest[:-1]), 'session_id': session, 'total_cost_usd': 0.0123455,
          'usage': {'input_tokens': 4, 'cache_creation_input_tokens': 1520, 'cache_read_input_tokens': 13140,
          'output_tokens': 12}}))
      """;

  /** Codex in {@code exec --json} mode: a thread, two turns with usage, the last message. */
  static final String CODEX = """
      import sys, json
      a = sys.argv[1:]
      assert a[:2] == ['exec', '--json'], a
      thread = a[3] if a[2:3] == ['resume'] else 'th-1'
      for e in [{'type': 'thread.started', 'thread_id': thread}, {'type': 'turn.started'},
                {'type': 'item.completed', 'item': {'id': 'i0', 'type': 'agent_message', 'text': 'thinking'}},
                {'type': 'turn.completed', 'usage': {'input_tokens': 100, 'cached_input_tokens': 40, 'output_tokens': 7}},
                {'type': 'item.completed', 'item': {'id': 'i1', 'type': 'agent_message', 'text': 'did ' + a[-1]}},
                {'type': 'turn.completed', 'usage': {'input_tokens': 200, 'cached_input_tokens': 150, 'output_tokens': 9}}]:
          print(json.dumps(e))
      """;

  static JsonObject run(String key, String sandbox, JsonObject body) {
    return run(gw, key, sandbox, body);
  }

  static JsonObject run(TestGateway gw, String key, String sandbox, JsonObject body) {
    Resp r = gw.post("/v1/sandboxes/" + sandbox + "/agent-runs", key, body);
    assertThat(r.status()).as(r.body()).isEqualTo(200);
    return r.json();
  }

  static JsonObject claude(String prompt) {
    return new JsonObject().put("agent", "claude-code").put("prompt", prompt)
        .put("command", new JsonArray().add("python3").add("-c").add(CLAUDE));
  }

  @Test
  void claude_code_runs_are_read_priced_resumed_and_totalled() {
    String key = gw.bootstrap("Agents");
    String sbx = gw.sandbox(key, new JsonObject().put("cpu", 1).put("memory_mb", 1024)).getString("id");

    JsonObject first = run(key, sbx, claude("hello").put("extra_args", new JsonArray().add("--model").add("opus")));
    assertThat(first.getString("agent")).isEqualTo("claude-code");
    assertThat(first.getString("text")).isEqualTo("echo hello args --model opus");
    assertThat(first.getString("session_id")).isEqualTo("sess-new");
    assertThat(first.getInteger("exit_code")).isZero();
    assertThat(first.containsKey("error")).isFalse();
    JsonObject usage = first.getJsonObject("usage");
    assertThat(usage.getLong("input_tokens")).isEqualTo(4);
    assertThat(usage.getLong("cache_read_tokens")).isEqualTo(13140);
    assertThat(usage.getLong("cache_write_tokens")).isEqualTo(1520);
    assertThat(usage.getLong("total_tokens")).isEqualTo(4 + 12 + 13140 + 1520);
    assertThat(new BigDecimal(usage.getValue("llm_cost_usd").toString())).isEqualByComparingTo("0.0123455");
    // 1 vCPU at 3600 $/h is a dollar a second: compute cost is the run's seconds
    BigDecimal seconds = new BigDecimal(usage.getValue("compute_seconds").toString());
    assertThat(seconds).isEqualByComparingTo(BigDecimal.valueOf(first.getLong("duration_ms")).movePointLeft(3));
    assertThat(new BigDecimal(usage.getValue("compute_cost_usd").toString())).isEqualByComparingTo(seconds);
    assertThat(new BigDecimal(usage.getValue("total_cost_usd").toString()))
        .isEqualByComparingTo(seconds.add(new BigDecimal("0.0123455")));

    JsonObject resumed = run(key, sbx, claude("again").put("resume", true).put("input_mode", "stdin"));
    assertThat(resumed.getString("text")).as("the prompt came on stdin").startsWith("echo again args");
    assertThat(resumed.getString("session_id")).isEqualTo("sess-new");

    JsonObject failed = run(key, sbx, claude("please fail"));
    assertThat(failed.getString("error")).isEqualTo("error_max_turns");
    assertThat(failed.getInteger("exit_code")).isEqualTo(1);
    assertThat(new BigDecimal(failed.getJsonObject("usage").getValue("llm_cost_usd").toString()))
        .as("a failed run still reports its usage").isEqualByComparingTo("0.25");

    JsonObject totals = gw.get("/v1/sandboxes/" + sbx + "/usage", key).json();
    assertThat(totals.getLong("runs")).isEqualTo(3);
    assertThat(totals.getLong("input_tokens")).isEqualTo(4 + 4 + 1);
    assertThat(new BigDecimal(totals.getValue("llm_cost_usd").toString()))
        .isEqualByComparingTo(new BigDecimal("0.0123455").multiply(BigDecimal.TWO).add(new BigDecimal("0.25")));

    JsonObject costs = gw.get("/v1/costs?group_by=backend", key).json();
    JsonObject local = costs.getJsonArray("items").getJsonObject(0);
    assertThat(local.getString("key")).isEqualTo("local");
    assertThat(new BigDecimal(local.getString("llm_cost_usd"))).as("the runs' LLM cost is a line of its own")
        .isEqualByComparingTo(new BigDecimal("0.0123455").multiply(BigDecimal.TWO).add(new BigDecimal("0.25")));

    Resp csv = gw.get("/v1/exports/agent_runs.csv", key);
    assertThat(csv.status()).isEqualTo(200);
    String[] lines = csv.body().split("\r\n");
    assertThat(lines[0]).isEqualTo("id,sandbox_id,execution_id,agent,session_id,exit_code,input_tokens,output_tokens,"
        + "cache_read_tokens,cache_write_tokens,llm_cost_usd,compute_seconds,compute_cost_usd,created_at");
    assertThat(lines).hasSize(4);
    assertThat(lines[1]).contains(",claude-code,sess-new,0,4,12,13140,1520,0.0123455,");

    // another organization sees neither the sandbox's usage nor can run in it
    String other = gw.bootstrap("Others");
    assertThat(gw.get("/v1/sandboxes/" + sbx + "/usage", other).status()).isEqualTo(404);
    assertThat(gw.post("/v1/sandboxes/" + sbx + "/agent-runs", other, claude("x")).status()).isEqualTo(404);
  }

  @Test
  void codex_runs_sum_their_turns_and_resume_the_thread() {
    String key = gw.bootstrap("Codex");
    String sbx = gw.sandbox(key, new JsonObject()).getString("id");
    JsonObject body = new JsonObject().put("agent", "codex").put("prompt", "the task")
        .put("command", new JsonArray().add("python3").add("-c").add(CODEX));
    JsonObject r = run(key, sbx, body);
    assertThat(r.getString("text")).isEqualTo("did the task");
    assertThat(r.getString("session_id")).isEqualTo("th-1");
    JsonObject u = r.getJsonObject("usage");
    assertThat(u.getLong("input_tokens")).isEqualTo(300);
    assertThat(u.getLong("cache_read_tokens")).isEqualTo(190);
    assertThat(u.getLong("output_tokens")).isEqualTo(16);
    assertThat(new BigDecimal(u.getValue("llm_cost_usd").toString())).isEqualByComparingTo("0");
    assertThat(run(key, sbx, body.copy().put("resume", true)).getString("session_id")).isEqualTo("th-1");
    // Codex reports no cost: a model the catalog prices is priced from the tokens (110 uncached at 2 $/M, 190 cached at 0.5, 16 out at 10)
    JsonObject priced = run(key, sbx, body.copy().put("extra_args", new JsonArray().add("--model").add("gpt-test")));
    assertThat(new BigDecimal(priced.getJsonObject("usage").getValue("llm_cost_usd").toString()))
        .isEqualByComparingTo(new BigDecimal("0.000475"));
    Resp noSession = gw.post("/v1/sandboxes/" + sbx + "/agent-runs", key,
        claude("x").put("resume", true));
    assertThat(noSession.status()).isEqualTo(409);
    assertThat(noSession.detail()).isEqualTo("this sandbox has no earlier claude-code session to resume");
  }

  @Test
  void a_sandbox_without_the_cli_names_the_preset_and_bad_requests_are_422() {
    String key = gw.bootstrap("NoCli");
    String sbx = gw.sandbox(key, new JsonObject()).getString("id");
    JsonObject r = run(key, sbx, new JsonObject().put("agent", "claude-code").put("prompt", "hi")
        .put("env", new JsonObject().put("PATH", "/usr/bin:/bin")));
    assertThat(r.getString("error")).isEqualTo(
        "claude is not installed in this sandbox: create the sandbox with the preset claude-code (or claude-code-codex)");
    assertThat(r.getInteger("exit_code")).isEqualTo(127);
    Resp bad = gw.post("/v1/sandboxes/" + sbx + "/agent-runs", key, new JsonObject().put("agent", "gemini")
        .put("prompt", "x"));
    assertThat(bad.status()).isEqualTo(422);
    assertThat(bad.detail()).isEqualTo("agent must be one of claude-code, codex");
    assertThat(gw.post("/v1/sandboxes/" + sbx + "/agent-runs", key, new JsonObject().put("agent", "codex"))
        .status()).isEqualTo(422);
    String readOnly = gw.key(key, "sandboxes:read");
    assertThat(gw.post("/v1/sandboxes/" + sbx + "/agent-runs", readOnly, claude("x")).status()).isEqualTo(403);
  }

  @Test
  void a_stored_secret_reaches_the_cli_and_nowhere_else() throws Exception {
    SecretWatch watch = SecretWatch.start();
    TestGateway gw = new TestGateway(); // started while the watch captures its log
    try {
      String key = gw.bootstrap("Secrets");
      String secret = "sk-ant-api03-" + HexFormat.of().formatHex(java.util.UUID.randomUUID().toString().getBytes());
      Resp put = watch.seen(gw.send("PUT", "/v1/agent-secrets/ANTHROPIC_API_KEY", key,
          new JsonObject().put("value", secret).encode()));
      assertThat(put.status()).as(put.body()).isEqualTo(201);
      assertThat(watch.seen(gw.send("PUT", "/v1/agent-secrets/ANTHROPIC_API_KEY", key,
          new JsonObject().put("value", secret).encode())).status()).isEqualTo(200);
      assertThat(gw.send("PUT", "/v1/agent-secrets/bad-name", key, "{\"value\":\"x\"}").status()).isEqualTo(422);
      assertThat(gw.send("PUT", "/v1/agent-secrets/X", gw.key(key, "sandboxes:execute"), "{\"value\":\"x\"}")
          .status()).isEqualTo(403);
      Resp list = watch.seen(gw.get("/v1/agent-secrets", key));
      assertThat(list.json().getJsonArray("items")).hasSize(1);
      assertThat(list.json().getJsonArray("items").getJsonObject(0).getString("name")).isEqualTo("ANTHROPIC_API_KEY");

      String sbx = gw.sandbox(key, new JsonObject()).getString("id");
      String digest = HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(secret.getBytes()));
      JsonObject r = run(gw, key, sbx, claude("key:" + digest));
      watch.seen(r.encode());
      assertThat(r.getString("text")).startsWith("echo key matches gateway-env False");
      // the run's own env wins over the stored secret
      JsonObject own = run(gw, key, sbx, claude("key:" + digest).put("env", new JsonObject()
          .put("ANTHROPIC_API_KEY", "mine")));
      assertThat(own.getString("text")).startsWith("echo key differs");
      // another organization's runs do not get it
      String other = gw.bootstrap("Other org");
      String otherSbx = gw.sandbox(other, new JsonObject()).getString("id");
      assertThat(run(gw, other, otherSbx, claude("key:" + digest)).getString("text")).startsWith("echo key differs");
      watch.assertNeverLeaked(gw, "local", secret);

      assertThat(gw.delete("/v1/agent-secrets/ANTHROPIC_API_KEY", key).status()).isEqualTo(204);
      assertThat(gw.delete("/v1/agent-secrets/ANTHROPIC_API_KEY", key).status()).isEqualTo(404);
      assertThat(run(gw, key, sbx, claude("key:" + digest)).getString("text")).startsWith("echo key differs");
    } finally {
      gw.close();
      watch.stop();
    }
  }

  @Test
  void llm_cost_counts_against_spend_limits_only_when_the_policy_says_so() {
    String key = gw.bootstrap("Spend");
    String sbx = gw.sandbox(key, new JsonObject().put("cpu", 0.001).put("memory_mb", 128)).getString("id");
    run(key, sbx, claude("please fail")); // reports 0.25 $ of LLM cost
    JsonObject limit = new JsonObject().put("daily_spend_limit_usd", "0.2");
    JsonObject policy = gw.send("PUT", "/v1/policies/current", key, limit.encode()).json();
    assertThat(policy.getBoolean("include_llm_cost")).isFalse();
    Resp allowed = gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "local"));
    assertThat(allowed.status()).as("sandbox costs alone are under the limit: " + allowed.body()).isEqualTo(201);
    assertThat(gw.send("PUT", "/v1/policies/current", key, limit.copy().put("include_llm_cost", true).encode())
        .json().getBoolean("include_llm_cost")).isTrue();
    Resp denied = gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "local"));
    assertThat(denied.status()).as("with the runs' LLM cost the day is over its limit: " + denied.body())
        .isEqualTo(403);
  }

  @Test
  void a_streamed_run_sends_the_cli_events_then_the_run() {
    String key = gw.bootstrap("Streamed");
    String sbx = gw.sandbox(key, new JsonObject()).getString("id");
    JsonObject body = new JsonObject().put("agent", "codex").put("prompt", "stream it")
        .put("command", new JsonArray().add("python3").add("-c").add(CODEX));
    java.util.List<String> names = new java.util.ArrayList<>();
    StringBuilder out = new StringBuilder();
    JsonObject result = null;
    try (ai.bespokelabs.sandbox.testkit.SseClient sse = ai.bespokelabs.sandbox.testkit.SseClient.open(
        gw.base + "/v1/sandboxes/" + sbx + "/agent-runs", key, "POST", body.encode())) {
      assertThat(sse.status).isEqualTo(200);
      for (var e = sse.next(); e != null; e = sse.next()) {
        names.add(e.name());
        if (e.isOutput()) {
          out.append(new String(e.bytes(), java.nio.charset.StandardCharsets.UTF_8));
        } else if ("result".equals(e.name())) {
          result = e.data();
        }
      }
    }
    assertThat(names.get(0)).isEqualTo("started");
    assertThat(names.subList(names.size() - 2, names.size())).containsExactly("exit", "result");
    assertThat(out.toString()).contains("\"thread.started\"").contains("did stream it");
    assertThat(result).isNotNull();
    assertThat(result.getString("text")).isEqualTo("did stream it");
    assertThat(result.getJsonObject("usage").getLong("input_tokens")).isEqualTo(300);
    assertThat(gw.get("/v1/sandboxes/" + sbx + "/usage", key).json().getLong("runs")).isEqualTo(1);
  }
}
