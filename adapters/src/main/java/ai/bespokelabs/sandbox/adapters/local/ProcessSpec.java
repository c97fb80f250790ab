package ai.bespokelabs.sandbox.adapters.local;

import ai.bespokelabs.sandbox.adapters.exec.CommandLine;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecSandbox;
import ai.bespokelabs.sandbox.core.error.ApiException;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Everything needed to run one program on the host: its argv, working directory, complete environment
 * (nothing is inherited from the gateway), timeout and per-stream output cap. Built purely, run by
 * {@link ProcessRunner}; host-process backends that wrap the program (bubblewrap, safehouse) rewrite
 * {@link #argv()} before running. {@code handOff}, when not null, is a file the program finds open read-only as
 * its descriptor 3 and whose name is gone by then ({@link EnvHandOff}).
 */
public record ProcessSpec(List<String> argv, Path cwd, Map<String, String> env, int timeoutSecs,
    int outputLimitBytes, Path handOff) {
  /** The only {@code PATH} a sandbox gets unless its own env overrides it. */
  public static final String BASE_PATH = "/usr/local/bin:/usr/bin:/bin";

  public ProcessSpec {
    argv = List.copyOf(argv);
    env = Map.copyOf(env);
  }

  /** A program that needs no file handed over ({@link #handOff()} null). */
  public ProcessSpec(List<String> argv, Path cwd, Map<String, String> env, int timeoutSecs, int outputLimitBytes) {
    this(argv, cwd, env, timeoutSecs, outputLimitBytes, null);
  }

  /**
   * The shell of host command lines: bash where it is installed, as the seed runs them ({@code [[ … ]]},
   * {@code printf '\xff'}, arrays), else POSIX sh.
   */
  public static final String SHELL = java.nio.file.Files.isExecutable(Path.of("/bin/bash")) ? "/bin/bash"
      : CommandLine.SH;

  /** The spec of {@code request} in a sandbox rooted at {@code sandboxDir} with the sandbox's env vars. */
  public static ProcessSpec of(Path sandboxDir, Map<String, String> sandboxEnv, ExecSandbox request) {
    return new ProcessSpec(
        CommandLine.of(request.code(), request.language(), request.command(), request.args(), SHELL),
        resolveCwd(sandboxDir, request.cwd()),
        environment(sandboxDir, sandboxEnv, request.env()),
        request.timeoutSecs(),
        request.outputLimitBytes());
  }

  /**
   * A clean base ({@code PATH}, {@code HOME}, {@code SANDBOX_ROOT} and {@code TMPDIR} = the sandbox dir,
   * {@code LANG=C.UTF-8}), overlaid by the sandbox's env vars, then by the execution's.
   */
  public static Map<String, String> environment(Path sandboxDir, Map<String, String> sandboxEnv,
      Map<String, String> execEnv) {
    Map<String, String> env = new LinkedHashMap<>();
    env.put("PATH", BASE_PATH);
    env.put("HOME", sandboxDir.toString());
    env.put("SANDBOX_ROOT", sandboxDir.toString());
    env.put("LANG", "C.UTF-8");
    env.put("TMPDIR", sandboxDir.toString());
    env.putAll(sandboxEnv);
    env.putAll(execEnv);
    return env;
  }

  /**
   * The sandbox dir, or {@code cwd} resolved against it (absolute paths must already lie inside it).
   *
   * @throws ApiException 422 when the result would lie outside the sandbox dir
   */
  public static Path resolveCwd(Path sandboxDir, String cwd) {
    Path root = sandboxDir.toAbsolutePath().normalize();
    if (cwd == null || cwd.isBlank()) {
      return root;
    }
    try {
      Path resolved = root.resolve(cwd).normalize();
      if (resolved.startsWith(root)) {
        return resolved;
      }
    } catch (InvalidPathException ignored) {
      // falls through to the same rejection as an escape
    }
    throw new ApiException(422, "cwd must stay inside the sandbox");
  }
}
