package ai.bespokelabs.sandbox.gateway.agent;

import ai.bespokelabs.sandbox.core.agent.AgentCommand.Agent;
import java.util.List;
import java.util.Map;

/**
 * A validated agent run: which agent, the prompt, whether to continue the sandbox's last session of that agent,
 * arguments added after the gateway's own, a program in place of the CLI's name, how the prompt is given, the
 * run's own environment, and its timeout (null: the gateway's execution default).
 */
public record AgentRunRequest(Agent agent, String prompt, boolean resume, List<String> extraArgs,
    List<String> command, boolean stdinPrompt, Map<String, String> env, Integer timeoutSecs) {
  public AgentRunRequest {
    extraArgs = extraArgs == null ? List.of() : List.copyOf(extraArgs);
    command = command == null ? List.of() : List.copyOf(command);
    env = env == null ? Map.of() : Map.copyOf(env);
  }
}
