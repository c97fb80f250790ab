package ai.bespokelabs.sandbox.adapters.codecapsules;

import ai.bespokelabs.sandbox.adapters.spi.Backend;
import ai.bespokelabs.sandbox.adapters.spi.Capability;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import java.util.EnumSet;
import java.util.Set;

/**
 * The {@code codecapsules} backend: CodeCapsules' sandbox REST API through the Vert.x clients, non-blocking.
 * Its routes are not published; every assumption about them lives in {@link CodeCapsulesWire}. Node
 * independent: every operation works from the sandbox id alone (a sandbox's env vars are kept in it, see
 * {@link CodeCapsulesEnv}). No list operation exists, so orphans cannot be found; no snapshots, no adoption,
 * no signals beyond ending a streamed command.
 */
public final class CodeCapsulesProvider implements Backend {
  public static final String BACKEND = "codecapsules";

  private final CodeCapsulesClient client;
  private final CodeCapsulesExecutions executions;
  private final Parts parts;

  public CodeCapsulesProvider(Vertx vertx, CodeCapsulesSettings settings) {
    this.client = new CodeCapsulesClient(vertx, settings);
    CodeCapsulesWorkdir workdirs = new CodeCapsulesWorkdir(client);
    CodeCapsulesEnv envs = new CodeCapsulesEnv(client, workdirs);
    CodeCapsulesLifecycle lifecycle = new CodeCapsulesLifecycle(client, envs);
    this.executions = new CodeCapsulesExecutions(client, envs);
    this.parts = new Parts(lifecycle, executions, lifecycle, new CodeCapsulesFiles(client, workdirs),
        new CodeCapsulesMetrics(client));
  }

  @Override
  public Parts parts() {
    return parts;
  }

  @Override
  public String name() {
    return BACKEND;
  }

  @Override
  public boolean nodeBound() {
    return false;
  }

  @Override
  public ai.bespokelabs.sandbox.adapters.spi.PlacementFacts placement() {
    return new ai.bespokelabs.sandbox.adapters.spi.PlacementFacts(
        ai.bespokelabs.sandbox.adapters.spi.PlacementFacts.Isolation.VM, false, false, true, false);
  }

  @Override
  public Set<Capability> capabilities() {
    return EnumSet.of(Capability.FILES, Capability.METRICS);
  }

  /** Abandons running executions (their sinks get no result) and closes the HTTP client. */
  @Override
  public Future<Void> close() {
    executions.abandonAll();
    return client.close();
  }
}
