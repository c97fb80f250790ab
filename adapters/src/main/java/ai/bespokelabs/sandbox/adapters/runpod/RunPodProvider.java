package ai.bespokelabs.sandbox.adapters.runpod;

import ai.bespokelabs.sandbox.adapters.spi.Backend;
import ai.bespokelabs.sandbox.adapters.spi.Capability;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import java.time.Clock;
import java.util.EnumSet;
import java.util.Set;

/**
 * The {@code runpod} backend: GPU pods over RunPod's REST v1 (the Vert.x HTTP client, non-blocking), programs in
 * them over SSH with Apache MINA SSHD's asynchronous client.
 *
 * <ul>
 *   <li>lifecycle: create (a GPU type required, polled until the SSH port is mapped), terminate
 *       ({@link RunPodLifecycle}).
 *   <li>executions: programs detached on the pod, their output followed over SSH and resumed after a dropped
 *       connection, stdin and signals ({@link RunPodExecutions}).
 *   <li>inventory: reconciliation by the marks in the pod name with RunPod's cost, and health
 *       ({@link RunPodInventory}).
 *   <li>files: SFTP on the pod's SSH session, archives built on it ({@link RunPodFiles}).
 * </ul>
 */
public final class RunPodProvider implements Backend {
  public static final String BACKEND = "runpod";

  private final RunPodClient client;
  private final RunPodSsh ssh;
  private final RunPodFiles files;
  private final Parts parts;

  public RunPodProvider(Vertx vertx, RunPodSettings settings, Clock clock) {
    this.client = new RunPodClient(vertx, settings);
    RunPodPods pods = new RunPodPods(client);
    this.ssh = new RunPodSsh(client, pods);
    this.files = new RunPodFiles(client, ssh);
    this.parts = new Parts(new RunPodLifecycle(client, pods, ssh), new RunPodExecutions(client, ssh),
        new RunPodInventory(client, pods, ssh, clock), files, null);
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
        ai.bespokelabs.sandbox.adapters.spi.PlacementFacts.Isolation.CONTAINER, true, true, false, false);
  }

  @Override
  public Set<Capability> capabilities() {
    return EnumSet.of(Capability.FILES);
  }

  @Override
  public Future<Void> start(Context context) {
    client.useContext(context);
    return ssh.start();
  }

  @Override
  public Future<Void> close() {
    return files.close().eventually(ssh::close).eventually(client::close);
  }
}
