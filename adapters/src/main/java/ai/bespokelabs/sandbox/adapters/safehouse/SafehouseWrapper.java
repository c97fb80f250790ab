package ai.bespokelabs.sandbox.adapters.safehouse;

import ai.bespokelabs.sandbox.adapters.local.HostWrapper;
import ai.bespokelabs.sandbox.adapters.local.ProcessSpec;
import ai.bespokelabs.sandbox.core.error.ProviderError;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import ai.bespokelabs.sandbox.core.model.SandboxConfig;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * macOS Agent Safehouse: every program runs as {@code safehouse --workdir=<sandbox dir> --env -- <program…>}
 * (the seed's command line), so the sandbox-exec policy confines it to its directory. macOS only: where the
 * {@code safehouse} CLI is not installed ({@code brew install eugene1g/safehouse/agent-safehouse}) creates
 * answer {@code backend_not_installed}.
 */
public final class SafehouseWrapper implements HostWrapper {
  public static final String BACKEND = "safehouse";

  /** An OS sandbox profile on the host, which ignores {@code allow_internet}. */
  @Override
  public ai.bespokelabs.sandbox.adapters.spi.PlacementFacts placement() {
    return new ai.bespokelabs.sandbox.adapters.spi.PlacementFacts(
        ai.bespokelabs.sandbox.adapters.spi.PlacementFacts.Isolation.NAMESPACE, false, false, false, false);
  }
  private static final List<String> EXTRA_DIRS = List.of("/opt/homebrew/bin", "/usr/local/bin");

  private final Optional<Path> cli;

  public SafehouseWrapper() {
    this(HostWrapper.findExecutable("safehouse", List.of(), EXTRA_DIRS));
  }

  public SafehouseWrapper(Optional<Path> cli) {
    this.cli = cli;
  }

  @Override
  public boolean envThroughFile(boolean dropping) {
    return false; // macOS: the environment reaches safehouse directly, never through a command line
  }

  @Override
  public Optional<String> missing() {
    return cli.isPresent() ? Optional.empty()
        : Optional.of("safehouse is not installed on this host (macOS only: install Agent Safehouse and put"
            + " safehouse on the gateway's PATH)");
  }

  @Override
  public void check() {
    Optional<String> missing = missing();
    if (missing.isPresent()) {
      throw new ProviderException(ProviderError.unavailable(BACKEND, "create", missing.get()));
    }
  }

  @Override
  public ProcessSpec wrap(ProcessSpec spec, HostSandbox sandbox) {
    check();
    return new ProcessSpec(command(cli.get(), sandbox.dir(), spec.argv()), spec.cwd(), spec.env(), spec.timeoutSecs(),
        spec.outputLimitBytes());
  }

  /** {@code safehouse --workdir=<dir> --env -- argv…}. */
  static List<String> command(Path cli, Path sandboxDir, List<String> argv) {
    List<String> out = new ArrayList<>(argv.size() + 4);
    out.add(cli.toString());
    out.add("--workdir=" + sandboxDir.toAbsolutePath().normalize());
    out.add("--env");
    out.add("--");
    out.addAll(argv);
    return out;
  }
}
