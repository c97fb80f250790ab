package ai.bespokelabs.sandbox.core.agent;

import java.util.Optional;

/**
 * What one agent run printed, read from its JSON output: the answer's text (empty when there is none), the
 * session a later run may resume (null when the CLI named none), the usage it reported, and why it failed
 * (empty when the CLI reported success).
 */
public record AgentReport(String text, String sessionId, AgentUsage usage, Optional<String> error) {
  public AgentReport {
    text = text == null ? "" : text;
    usage = usage == null ? AgentUsage.NONE : usage;
    error = error == null ? Optional.empty() : error;
  }
}
