package ai.bespokelabs.sandbox.adapters.local;

import ai.bespokelabs.sandbox.core.model.SandboxConfig;
import java.nio.file.Path;

/**
 * How a host-process backend runs a program: as it is ({@code local}), or inside an isolation tool
 * (bubblewrap, macOS safehouse) whose command line wraps the program's. Everything else — directories,
 * process groups, streaming, stdin, signals, timeouts — is shared.
 */
public interface HostWrapper {
  /** Runs programs directly on the host. */
  HostWrapper NONE = new HostWrapper() {
    @Override
    public void check() {
    }

    @Override
    public ProcessSpec wrap(ProcessSpec spec, Path sandboxDir, SandboxConfig config) {
      return spec;
    }
  };

  /**
   * Fails with the contract's {@code backend_not_installed} error when the host cannot run this backend.
   */
  void check();

  /** The spec to run for a program of a sandbox rooted at {@code sandboxDir} created with {@code config}. */
  ProcessSpec wrap(ProcessSpec spec, Path sandboxDir, SandboxConfig config);
}
