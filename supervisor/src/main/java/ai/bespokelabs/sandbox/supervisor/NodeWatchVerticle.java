package ai.bespokelabs.sandbox.supervisor;

import ai.bespokelabs.sandbox.core.Times;
import ai.bespokelabs.sandbox.core.repo.NodeLoss;
import ai.bespokelabs.sandbox.core.repo.NodeRepository;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import java.time.Clock;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.Collection;
import java.util.List;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A clustered node's watch over the others: renews this node's heartbeat every {@link #HEARTBEAT}, and takes
 * over ({@link NodeLoss}) a node whose heartbeat is older than {@link #STALE} or whose cluster membership
 * ended ({@link #memberLeft}), so a lost node's work is taken over within 15 s. Whichever surviving node gets
 * there first does it, once. When this node finds it was itself taken over (it stalled, or was cut off), its
 * {@code declaredLost} action runs (killing what is left of its failed sandboxes) and it registers again.
 */
public final class NodeWatchVerticle extends VerticleBase {
  private static final Logger LOG = LoggerFactory.getLogger(NodeWatchVerticle.class);
  static final Duration HEARTBEAT = Duration.ofSeconds(2);
  static final Duration STALE = Duration.ofSeconds(10);

  private final NodeRepository nodes;
  private final NodeLoss loss;
  private final String nodeId;
  private final List<String> nodeHosted;
  private final Clock clock;
  private final Runnable afterTakeOver;
  private final Supplier<Future<?>> declaredLost;
  private long timer = -1;
  private boolean ticking;
  private Future<?> inFlight = Future.succeededFuture();

  /**
   * @param nodeHosted the backends whose sandboxes live on one node
   * @param afterTakeOver runs after this node took another over (e.g. a supervisor sweep for released claims)
   * @param declaredLost runs when this node finds another one took it over
   */
  public NodeWatchVerticle(NodeRepository nodes, NodeLoss loss, String nodeId, Collection<String> nodeHosted,
      Clock clock, Runnable afterTakeOver, Supplier<Future<?>> declaredLost) {
    this.nodes = nodes;
    this.loss = loss;
    this.nodeId = nodeId;
    this.nodeHosted = List.copyOf(nodeHosted);
    this.clock = clock;
    this.afterTakeOver = afterTakeOver;
    this.declaredLost = declaredLost;
  }

  @Override
  public Future<?> start() {
    timer = vertx.setPeriodic(HEARTBEAT.toMillis(), t -> tick());
    return Future.succeededFuture();
  }

  @Override
  public Future<?> stop() {
    vertx.cancelTimer(timer);
    return inFlight.otherwiseEmpty();
  }

  /** A cluster member left: its node is taken over now, whatever its heartbeat says (from any thread). */
  public void memberLeft(String lostNodeId) {
    if (context != null && !nodeId.equals(lostNodeId)) {
      context.runOnContext(v -> takeOver(lostNodeId, null));
    }
  }

  /** Renews this node's heartbeat, then takes over the nodes whose heartbeat went stale. */
  void tick() {
    if (ticking) {
      return;
    }
    ticking = true;
    OffsetDateTime now = Times.now(clock);
    Future<?> pass = nodes.renew(nodeId, now)
        .compose(alive -> alive ? Future.succeededFuture() : rejoin(now))
        .compose(v -> nodes.stale(nodeId, now.minus(STALE)))
        .compose(stale -> {
          Future<Void> chain = Future.succeededFuture();
          for (String n : stale) {
            chain = chain.compose(v -> takeOver(n, now.minus(STALE)));
          }
          return chain;
        });
    inFlight = pass;
    pass.onComplete(ar -> {
      ticking = false;
      if (ar.failed()) {
        LOG.warn("Node watch pass failed: {}", ar.cause().toString());
      }
    });
  }

  private Future<Void> rejoin(OffsetDateTime now) {
    LOG.warn("This node was taken over by another one (its heartbeat stalled or it was cut off): killing what is"
        + " left of its failed sandboxes and registering again");
    return declaredLost.get().otherwiseEmpty().compose(v -> nodes.started(nodeId, now));
  }

  private Future<Void> takeOver(String lostNodeId, OffsetDateTime staleBefore) {
    OffsetDateTime now = Times.now(clock);
    return loss.takeOver(lostNodeId, now, staleBefore, nodeHosted)
        .<Void>map(taken -> {
          taken.ifPresent(l -> {
            LOG.warn("Took over node {} (last alive {}): {} sandbox(es) failed with reason node_lost, {}"
                + " execution(s) ended", l.nodeId(), l.lastAlive(), l.sandboxIds().size(), l.executions());
            afterTakeOver.run();
          });
          return null;
        })
        .recover(e -> {
          LOG.warn("Taking over node {} failed: {}", lostNodeId, e.toString());
          return Future.succeededFuture();
        });
  }
}
