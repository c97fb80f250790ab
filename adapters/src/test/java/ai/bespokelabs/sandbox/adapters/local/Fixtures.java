package ai.bespokelabs.sandbox.adapters.local;

import ai.bespokelabs.sandbox.core.bus.Messages.CreateSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecSandbox;
import ai.bespokelabs.sandbox.core.model.SandboxConfig;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/** Request builders and host-process probes shared by the local backend tests. */
final class Fixtures {
  private Fixtures() {}

  static CreateSandbox create(String sandboxId, Map<String, String> envVars, String workdir) {
    SandboxConfig config = new SandboxConfig(null, null, null, null, null, null, null, envVars, null, null, null,
        null, workdir, null, null);
    return new CreateSandbox(sandboxId, "org_test", LocalProvider.BACKEND, "token", config);
  }

  /** A shell command line run in {@code sandboxId}. */
  static ExecSandbox shell(String sandboxId, String commandLine) {
    return exec(sandboxId, null, commandLine, null, Map.of(), null);
  }

  static ExecSandbox exec(String sandboxId, String code, String command, List<String> args, Map<String, String> env,
      String cwd) {
    return new ExecSandbox(sandboxId, "exe_test", null, code, code == null ? null : "python", command, args, env,
        cwd, 10, 64 * 1024);
  }

  /** True while {@code pid} is a live process (a zombie, killed but not yet reaped, counts as dead). */
  static boolean isRunning(long pid) {
    try {
      String stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"));
      char state = stat.charAt(stat.lastIndexOf(')') + 2);
      return state != 'Z' && state != 'X';
    } catch (NoSuchFileException e) {
      return false;
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  /** Waits up to 3 s for {@code pid} to die; true when it did. */
  static boolean awaitDeath(long pid) throws InterruptedException {
    for (int i = 0; i < 300 && isRunning(pid); i++) {
      Thread.sleep(10);
    }
    return !isRunning(pid);
  }
}
