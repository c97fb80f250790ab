package ai.bespokelabs.sandbox.core.agent;

import io.vertx.core.json.DecodeException;
import io.vertx.core.json.Json;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.math.BigDecimal;
import java.util.Optional;

/**
 * Reads the JSON modes of the agent CLIs. Output is the tenant's program's: nothing in it is trusted, malformed
 * lines are skipped, numbers that are not numbers count as zero, and no input makes these methods throw.
 */
public final class AgentOutputs {
  private AgentOutputs() {}

  /**
   * Claude Code's {@code --output-format json}: one result object (also accepted: a JSON array of stream
   * records, or stream-json lines, whose last result record counts). Text is {@code result}, the session
   * {@code session_id}, tokens come from {@code usage}, the cost is {@code total_cost_usd} as reported;
   * {@code is_error} or an error {@code subtype} is the run's error.
   */
  public static AgentReport claudeCode(String stdout) {
    JsonObject result = claudeResult(stdout == null ? "" : stdout.strip());
    if (result == null) {
      return new AgentReport("", null, AgentUsage.NONE, Optional.of("the agent printed no JSON result"));
    }
    JsonObject usage = result.getValue("usage") instanceof JsonObject u ? u : new JsonObject();
    AgentUsage reported = new AgentUsage(count(usage.getValue("input_tokens")),
        count(usage.getValue("output_tokens")), count(usage.getValue("cache_read_input_tokens")),
        count(usage.getValue("cache_creation_input_tokens")), cost(result.getValue("total_cost_usd")));
    String text = result.getValue("result") instanceof String s ? s : "";
    String session = result.getValue("session_id") instanceof String s && !s.isBlank() ? s : null;
    String subtype = result.getValue("subtype") instanceof String s ? s : null;
    Optional<String> error = Optional.empty();
    if (Boolean.TRUE.equals(result.getValue("is_error"))) {
      error = Optional.of(!text.isBlank() ? text : subtype != null ? subtype : "the agent reported an error");
    } else if (subtype != null && subtype.startsWith("error")) {
      error = Optional.of(subtype);
    }
    return new AgentReport(text, session, reported, error);
  }

  /**
   * Codex's {@code exec --json} events, one JSON object per line: text is the last completed
   * {@code agent_message} item, the session is {@code thread.started}'s {@code thread_id}, tokens are summed over
   * {@code turn.completed} usages ({@code cached_input_tokens} are cache reads); {@code turn.failed} and
   * {@code error} events are the run's error. Codex reports no cost: it is zero here.
   */
  public static AgentReport codex(String stdout) {
    String text = "";
    String session = null;
    AgentUsage usage = AgentUsage.NONE;
    String error = null;
    boolean any = false;
    for (String line : (stdout == null ? "" : stdout).split("\n")) {
      if (!(parse(line.strip()) instanceof JsonObject event) || !(event.getValue("type") instanceof String type)) {
        continue;
      }
      any = true;
      switch (type) {
        case "thread.started" -> {
          if (event.getValue("thread_id") instanceof String id && !id.isBlank()) {
            session = id;
          }
        }
        case "item.completed" -> {
          if (event.getValue("item") instanceof JsonObject item && "agent_message".equals(item.getValue("type"))
              && item.getValue("text") instanceof String s) {
            text = s;
          }
        }
        case "turn.completed" -> {
          if (event.getValue("usage") instanceof JsonObject u) {
            usage = usage.plus(new AgentUsage(count(u.getValue("input_tokens")), count(u.getValue("output_tokens")),
                count(u.getValue("cached_input_tokens")), 0, BigDecimal.ZERO));
          }
        }
        case "turn.failed" -> error = message(event.getValue("error"), "the agent's turn failed");
        case "error" -> error = event.getValue("message") instanceof String m && !m.isBlank() ? m
            : "the agent reported an error";
        default -> { }
      }
    }
    if (!any) {
      error = "the agent printed no JSON events";
    }
    return new AgentReport(text, session, usage, Optional.ofNullable(error));
  }

  private static JsonObject claudeResult(String text) {
    if (text.isEmpty()) {
      return null;
    }
    Object whole = parse(text);
    if (whole instanceof JsonObject o) {
      return o;
    }
    if (whole instanceof JsonArray records) {
      for (int i = records.size() - 1; i >= 0; i--) {
        if (records.getValue(i) instanceof JsonObject o && looksLikeResult(o)) {
          return o;
        }
      }
      return null;
    }
    JsonObject last = null;
    for (String line : text.split("\n")) {
      if (parse(line.strip()) instanceof JsonObject o && looksLikeResult(o)) {
        last = o;
      }
    }
    return last;
  }

  private static boolean looksLikeResult(JsonObject record) {
    return "result".equals(record.getValue("type")) || record.containsKey("total_cost_usd")
        || record.containsKey("usage");
  }

  private static Object parse(String text) {
    if (text.isEmpty() || (text.charAt(0) != '{' && text.charAt(0) != '[')) {
      return null;
    }
    try {
      return Json.decodeValue(text);
    } catch (DecodeException | IllegalArgumentException e) {
      return null;
    }
  }

  private static String message(Object error, String fallback) {
    if (error instanceof JsonObject o && o.getValue("message") instanceof String m && !m.isBlank()) {
      return m;
    }
    return error instanceof String s && !s.isBlank() ? s : fallback;
  }

  /** A token count: a finite, non-negative number (fractions dropped), else 0. */
  private static long count(Object value) {
    if (value instanceof Number n && !(value instanceof Double d && !Double.isFinite(d))
        && !(value instanceof Float f && !Float.isFinite(f))) {
      long v = n.longValue();
      return Math.max(0, v);
    }
    return 0;
  }

  /** A reported cost: a finite, non-negative number as written, else 0. */
  private static BigDecimal cost(Object value) {
    if (value instanceof Number n) {
      try {
        BigDecimal d = new BigDecimal(n.toString());
        return d.signum() < 0 ? BigDecimal.ZERO : d;
      } catch (NumberFormatException e) {
        return BigDecimal.ZERO;
      }
    }
    return BigDecimal.ZERO;
  }
}
