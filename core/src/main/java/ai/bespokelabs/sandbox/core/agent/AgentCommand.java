package ai.bespokelabs.sandbox.core.agent;

import java.util.ArrayList;
import java.util.List;

/**
 * The program an agent run starts: the agent's CLI (or {@code command} in its place) in its non-interactive JSON
 * mode, the session to resume, the caller's extra arguments, and the prompt as the last argument or on stdin.
 * Every part is one argument of the program: nothing is given to a shell.
 *
 * @param argv the program and its arguments
 * @param stdin what to write to the program's stdin before closing it; null for none
 */
public record AgentCommand(List<String> argv, String stdin) {
  public AgentCommand {
    argv = List.copyOf(argv);
  }

  /** The agents a run may name, by their API name. */
  public enum Agent {
    CLAUDE_CODE("claude-code", "claude"),
    CODEX("codex", "codex");

    public final String wire;
    /** The CLI's own program name. */
    public final String program;

    Agent(String wire, String program) {
      this.wire = wire;
      this.program = program;
    }

    /** The agent of {@code name}, or null when there is none. */
    public static Agent of(String name) {
      for (Agent a : values()) {
        if (a.wire.equals(name)) {
          return a;
        }
      }
      return null;
    }

    /** What the agent's output is read with. */
    public AgentReport read(String stdout) {
      return this == CLAUDE_CODE ? AgentOutputs.claudeCode(stdout) : AgentOutputs.codex(stdout);
    }
  }

  /**
   * @param command replaces the CLI's own name (for example a wrapper and its arguments); null or empty for the CLI
   * @param resumeSession the session to continue, or null for a new one
   * @param stdinPrompt the prompt goes to stdin instead of the last argument
   */
  public static AgentCommand of(Agent agent, String prompt, List<String> command, String resumeSession,
      List<String> extraArgs, boolean stdinPrompt) {
    List<String> argv = new ArrayList<>(command == null || command.isEmpty() ? List.of(agent.program) : command);
    switch (agent) {
      case CLAUDE_CODE -> {
        argv.addAll(List.of("-p", "--output-format", "json"));
        if (resumeSession != null) {
          argv.addAll(List.of("--resume", resumeSession));
        }
      }
      case CODEX -> {
        argv.addAll(List.of("exec", "--json"));
        if (resumeSession != null) {
          argv.addAll(List.of("resume", resumeSession));
        }
      }
      default -> throw new IllegalArgumentException(agent.name());
    }
    if (extraArgs != null) {
      argv.addAll(extraArgs);
    }
    if (stdinPrompt) {
      return new AgentCommand(argv, prompt);
    }
    argv.add(prompt);
    return new AgentCommand(argv, null);
  }
}
