package ai.bespokelabs.sandbox.core.agent;

import static org.assertj.core.api.Assertions.assertThat;

import java.math.BigDecimal;
import java.util.List;
import org.junit.jupiter.api.Test;

class AgentOutputsTest {
  static final String CLAUDE_OK = "{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"duration_ms\":2847,"
      + "\"num_turns\":1,\"result\":\"Hello!\",\"session_id\":\"7f1c2d3e\",\"total_cost_usd\":0.0123455,"
      + "\"usage\":{\"input_tokens\":4,\"cache_creation_input_tokens\":1520,\"cache_read_input_tokens\":13140,"
      + "\"output_tokens\":12,\"server_tool_use\":{\"web_search_requests\":0},\"service_tier\":\"standard\"}}\n";

  @Test
  void claude_code_result_gives_text_session_tokens_and_the_reported_cost_exactly() {
    AgentReport r = AgentOutputs.claudeCode(CLAUDE_OK);
    assertThat(r.text()).isEqualTo("Hello!");
    assertThat(r.sessionId()).isEqualTo("7f1c2d3e");
    assertThat(r.error()).isEmpty();
    assertThat(r.usage()).isEqualTo(new AgentUsage(4, 12, 13140, 1520, new BigDecimal("0.0123455")));
    assertThat(r.usage().totalTokens()).isEqualTo(4 + 12 + 13140 + 1520);
  }

  @Test
  void claude_code_errors_still_report_usage() {
    AgentReport r = AgentOutputs.claudeCode("{\"type\":\"result\",\"subtype\":\"error_max_turns\",\"is_error\":true,"
        + "\"session_id\":\"s2\",\"total_cost_usd\":0.5,\"usage\":{\"input_tokens\":10,\"output_tokens\":3}}");
    assertThat(r.error()).contains("error_max_turns");
    assertThat(r.sessionId()).isEqualTo("s2");
    assertThat(r.usage().llmCostUsd()).isEqualByComparingTo("0.5");
    assertThat(r.usage().inputTokens()).isEqualTo(10);

    AgentReport withText = AgentOutputs.claudeCode("{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":true,"
        + "\"result\":\"API Error: 401 invalid x-api-key\"}");
    assertThat(withText.error()).contains("API Error: 401 invalid x-api-key");
    assertThat(withText.usage()).isEqualTo(AgentUsage.NONE);
  }

  @Test
  void claude_code_without_cost_counts_tokens_and_zero_cost() {
    AgentReport r = AgentOutputs.claudeCode("{\"type\":\"result\",\"result\":\"x\",\"usage\":{\"input_tokens\":7}}");
    assertThat(r.usage()).isEqualTo(new AgentUsage(7, 0, 0, 0, BigDecimal.ZERO));
    assertThat(r.error()).isEmpty();
  }

  @Test
  void claude_code_stream_json_and_arrays_use_the_last_result_record() {
    String lines = "{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"s\"}\nnot json\n"
        + "{\"type\":\"assistant\",\"message\":{}}\n" + CLAUDE_OK;
    assertThat(AgentOutputs.claudeCode(lines).text()).isEqualTo("Hello!");
    assertThat(AgentOutputs.claudeCode("[{\"type\":\"system\"}," + CLAUDE_OK.strip() + "]").sessionId())
        .isEqualTo("7f1c2d3e");
  }

  @Test
  void hostile_or_broken_output_never_throws_and_counts_nothing_it_cannot_read() {
    for (String out : List.of("", "   ", "[", "{\"usage\":\"many\"}", "{\"usage\":{\"input_tokens\":-5,"
        + "\"output_tokens\":\"9\"},\"total_cost_usd\":-1}", "{\"result\":42,\"session_id\":{}}", "[1,2,3]")) {
      AgentReport r = AgentOutputs.claudeCode(out);
      assertThat(r.usage().inputTokens()).as(out).isZero();
      assertThat(r.usage().outputTokens()).as(out).isZero();
      assertThat(r.usage().llmCostUsd()).as(out).isEqualByComparingTo("0");
      AgentReport c = AgentOutputs.codex(out);
      assertThat(c.usage()).as(out).isEqualTo(AgentUsage.NONE);
    }
    assertThat(AgentOutputs.claudeCode("").error()).contains("the agent printed no JSON result");
    assertThat(AgentOutputs.codex("plain text\n").error()).contains("the agent printed no JSON events");
  }

  static final String CODEX_OK = String.join("\n",
      "{\"type\":\"thread.started\",\"thread_id\":\"0199a213-81c0\"}",
      "{\"type\":\"turn.started\"}",
      "{\"type\":\"item.completed\",\"item\":{\"id\":\"item_0\",\"type\":\"reasoning\",\"text\":\"**Thinking**\"}}",
      "{\"type\":\"item.completed\",\"item\":{\"id\":\"item_1\",\"type\":\"agent_message\",\"text\":\"First.\"}}",
      "{\"type\":\"turn.completed\",\"usage\":{\"input_tokens\":100,\"cached_input_tokens\":40,\"output_tokens\":7}}",
      "{\"type\":\"turn.started\"}",
      "{\"type\":\"item.completed\",\"item\":{\"id\":\"item_3\",\"type\":\"agent_message\",\"text\":\"Done.\"}}",
      "{\"type\":\"turn.completed\",\"usage\":{\"input_tokens\":200,\"cached_input_tokens\":150,\"output_tokens\":9}}",
      "");

  @Test
  void codex_events_give_the_last_message_the_thread_and_summed_usage() {
    AgentReport r = AgentOutputs.codex(CODEX_OK);
    assertThat(r.text()).isEqualTo("Done.");
    assertThat(r.sessionId()).isEqualTo("0199a213-81c0");
    assertThat(r.usage()).isEqualTo(new AgentUsage(300, 16, 190, 0, BigDecimal.ZERO));
    assertThat(r.error()).isEmpty();
  }

  @Test
  void codex_failures_are_the_error_and_keep_usage() {
    AgentReport r = AgentOutputs.codex("{\"type\":\"thread.started\",\"thread_id\":\"t\"}\n"
        + "{\"type\":\"turn.completed\",\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}\n"
        + "{\"type\":\"turn.failed\",\"error\":{\"message\":\"stream disconnected before completion\"}}\n");
    assertThat(r.error()).contains("stream disconnected before completion");
    assertThat(r.usage().inputTokens()).isEqualTo(5);
    assertThat(AgentOutputs.codex("{\"type\":\"error\",\"message\":\"unauthorized\"}").error()).contains("unauthorized");
  }

  @Test
  void commands_are_the_cli_in_json_mode_with_resume_extra_arguments_and_the_prompt() {
    assertThat(AgentCommand.of(AgentCommand.Agent.CLAUDE_CODE, "fix it", null, null, List.of("--model", "opus"), false)
        .argv()).containsExactly("claude", "-p", "--output-format", "json", "--model", "opus", "fix it");
    assertThat(AgentCommand.of(AgentCommand.Agent.CLAUDE_CODE, "more", null, "s1", List.of(), false).argv())
        .containsExactly("claude", "-p", "--output-format", "json", "--resume", "s1", "more");
    AgentCommand codex = AgentCommand.of(AgentCommand.Agent.CODEX, "p; rm -rf /", List.of("npx", "codex"), "t1",
        null, true);
    assertThat(codex.argv()).containsExactly("npx", "codex", "exec", "--json", "resume", "t1");
    assertThat(codex.stdin()).isEqualTo("p; rm -rf /");
    assertThat(AgentCommand.Agent.of("codex")).isEqualTo(AgentCommand.Agent.CODEX);
    assertThat(AgentCommand.Agent.of("gemini")).isNull();
  }
}
