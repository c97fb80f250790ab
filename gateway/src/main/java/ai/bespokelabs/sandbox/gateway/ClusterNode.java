package ai.bespokelabs.sandbox.gateway;

import ai.bespokelabs.sandbox.core.db.Wakeups;
import ai.bespokelabs.sandbox.core.repo.NodeLoss;
import ai.bespokelabs.sandbox.gateway.routing.Backends;
import ai.bespokelabs.sandbox.supervisor.NodeWatchVerticle;
import ai.bespokelabs.sandbox.supervisor.SupervisorVerticle;
import ai.bespokelabs.sandbox.gateway.exec.ExecutionService;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import java.time.Clock;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What a clustered node adds to a gateway: the watch over the other nodes ({@link NodeWatchVerticle}, told of
 * members that leave the cluster), the streams of executions a lost node ran ended on this node when any node
 * takes it over ({@link NodeLoss#CHANNEL}), and the drain before it stops.
 */
final class ClusterNode {
  private static final Logger LOG = LoggerFactory.getLogger(ClusterNode.class);
  static final long DRAIN_POLL_MS = 500;

  private final Backends backends;
  private final Wiring wiring;
  private final Wakeups.Listening listening;
  private final Vertx vertx;
  private final String supervisorDeployment;

  private ClusterNode(Vertx vertx, Backends backends, Wiring wiring, Wakeups.Listening listening,
      String supervisorDeployment) {
    this.vertx = vertx;
    this.supervisorDeployment = supervisorDeployment;
    this.backends = backends;
    this.wiring = wiring;
    this.listening = listening;
  }

  /** Starts watching the other nodes; the supervisor hands its claims over when it stops. */
  static Future<ClusterNode> join(Vertx vertx, Cluster cluster, Wiring w, Backends backends,
      SupervisorVerticle supervisor, String supervisorDeployment, HostSandboxes hostSandboxes, Clock clock) {
    NodeWatchVerticle watch = new NodeWatchVerticle(w.nodes, w.nodeLoss, backends.nodeId(),
        List.of(backends.nodeBound()), clock, supervisor::sweepSoon, hostSandboxes::reapLost);
    return vertx.deployVerticle(watch)
        .compose(id -> {
          cluster.onNodeLeft(watch::memberLeft);
          // the backstop of the notification below, for streams of a lost node that missed it
          vertx.setPeriodic(ExecutionService.LOST_NODE_CHECK_MS, t -> w.executionService.checkLostNodes(w.nodes));
          return w.wakeups().listenPayloads(vertx, NodeLoss.CHANNEL, w.executionService::nodeLost)
              .map(l -> new ClusterNode(vertx, backends, w, l, supervisorDeployment));
        });
  }

  /**
   * Hands supervision over, blocking: this node's supervisor stops (releasing the terminations it claimed to
   * the other nodes) while its adapters still answer the requests in flight. Its heartbeat goes on until the
   * node has ended its own sandboxes, so no other node takes it over meanwhile.
   */
  void handOver() {
    try {
      vertx.undeploy(supervisorDeployment).await(30, TimeUnit.SECONDS);
    } catch (Exception e) {
      LOG.warn("Handing supervision over did not finish cleanly: {}", e.toString());
    }
  }

  /**
   * Blocks while the node drains: it stops taking new node-bound sandboxes and reports not ready, then waits
   * up to {@code drainSecs} for the executions it runs to finish.
   */
  void drain(int drainSecs) {
    drain(backends, wiring, drainSecs);
    try {
      listening.close().await(10, TimeUnit.SECONDS);
    } catch (Exception e) {
      LOG.warn("Closing the node-loss listener failed: {}", e.toString());
    }
  }

  /**
   * Any node's drain (clustered or not): no new node-bound sandboxes and {@code /readyz} 503, then up to
   * {@code drainSecs} for the executions this node runs to finish.
   */
  static void drain(Backends backends, Wiring wiring, int drainSecs) {
    backends.drain();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(drainSecs);
    LOG.info("Draining: no new node-hosted sandboxes; waiting up to {} s for running executions", drainSecs);
    try {
      while (true) {
        int running = wiring.executions.runningOn(backends.nodeId()).await(10, TimeUnit.SECONDS);
        if (running == 0) {
          break;
        }
        if (System.nanoTime() > deadline) {
          LOG.warn("Drain time is over with {} execution(s) still running; stopping anyway", running);
          break;
        }
        Thread.sleep(DRAIN_POLL_MS);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (Exception e) {
      LOG.warn("Draining could not read the running executions: {}", e.toString());
    }
  }
}
