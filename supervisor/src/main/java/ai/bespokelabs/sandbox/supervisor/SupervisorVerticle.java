package ai.bespokelabs.sandbox.supervisor;

import ai.bespokelabs.sandbox.core.Ids;
import ai.bespokelabs.sandbox.core.Times;
import ai.bespokelabs.sandbox.core.bus.Messages.DestroySandbox;
import ai.bespokelabs.sandbox.core.bus.RuntimeClient;
import ai.bespokelabs.sandbox.core.sandbox.Terminations;
import ai.bespokelabs.sandbox.core.db.Wakeups;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import ai.bespokelabs.sandbox.core.repo.ExecutionRepository;
import ai.bespokelabs.sandbox.core.repo.NodeRepository;
import ai.bespokelabs.sandbox.core.repo.TerminationClaims;
import ai.bespokelabs.sandbox.core.repo.TerminationClaims.Claimed;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.VerticleBase;
import java.time.Clock;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Terminates sandboxes at their deadline even when no client is connected, and finishes terminations left
 * half-done (an operator DELETE or a claim of a supervisor that died). A timer is armed for the earliest
 * deadline (re-armed on every {@link Wakeups#SUPERVISOR} wake-up PostgreSQL sends, whichever node wrote the
 * change), with a periodic sweep as the backstop. Claims are rows taken with {@code FOR UPDATE SKIP LOCKED}, so
 * any number of nodes supervise one database safely; a claim older than the stale period is taken over. Also
 * keeps this node's heartbeat.
 */
public final class SupervisorVerticle extends VerticleBase {
  private static final Logger LOG = LoggerFactory.getLogger(SupervisorVerticle.class);
  static final int BATCH = 100;
  /**
   * At most this many destroys of a sweep are in flight at once: a provider that never answers holds one of them
   * for up to {@link RuntimeClient#DESTROY_TIMEOUT_MS} while the others go on, and a full batch does not flood the adapters
   * and the pool.
   */
  static final int PARALLEL_DESTROYS = 16;
  static final long COALESCE_MS = 20;
  static final long RECONCILE_STOP_WAIT_MS = 5_000;
  /** How long after its sandbox ended an execution may still report its own end. */
  static final Duration STRANDED_GRACE = Duration.ofSeconds(5);

  private final NodeRepository nodes;
  private final TerminationClaims sandboxes;
  private final ExecutionRepository executions;
  private final Wakeups wakeups;
  private final String nodeId;
  private final Clock clock;
  private final long intervalMs;
  private final Duration stale;
  private final Terminations terminations;
  private final List<Watch> watches;
  private final Reconciler reconciler;
  private final AlertEvaluator alerts;
  private boolean reconciling;
  private final String owner;
  private Wakeups.Listening subscriber;
  private long periodic = -1;
  private long deadlineTimer = -1;
  private boolean sweeping;
  private boolean again;
  private boolean rearmScheduled;
  private boolean stopping;
  private ai.bespokelabs.sandbox.core.repo.NodeLoss handOver;
  private Future<?> sweepInFlight = Future.succeededFuture();
  private Future<?> reconcileInFlight = Future.succeededFuture();
  private Future<?> rearmInFlight = Future.succeededFuture();
  private java.util.function.IntConsumer claims = n -> { };

  /**
   * A backend the supervisor reconciles periodically, and the node whose sandboxes the listing covers (null: every
   * node).
   */
  public record Watch(String backend, String nodeId) {}

  public SupervisorVerticle(NodeRepository nodes, TerminationClaims sandboxes, ExecutionRepository executions,
      Wakeups wakeups, String nodeId, Clock clock, int intervalSecs, Terminations terminations,
      List<Watch> watches, Reconciler reconciler, AlertEvaluator alerts) {
    this.alerts = alerts;
    this.watches = List.copyOf(watches);
    this.reconciler = reconciler;
    this.nodes = nodes;
    this.sandboxes = sandboxes;
    this.executions = executions;
    this.wakeups = wakeups;
    this.nodeId = nodeId;
    this.clock = clock;
    this.intervalMs = intervalSecs * 1000L;
    this.stale = Duration.ofSeconds(Math.max(60, 3L * intervalSecs));
    this.terminations = terminations;
    this.owner = "supervisor-" + nodeId + "-" + Ids.newId("sup").substring(4, 16);
  }

  private OffsetDateTime now() {
    return Times.now(clock);
  }

  @Override
  public Future<?> start() {
    return nodes.started(nodeId, now())
        .compose(r -> {
          if (intervalMs <= 0) {
            return Future.succeededFuture();
          }
          periodic = vertx.setPeriodic(intervalMs, t -> {
            heartbeat();
            sweep();
            reconcile();
          });
          sweep();
          return wakeups.listen(vertx, Wakeups.SUPERVISOR, this::scheduleRearm).onSuccess(s -> subscriber = s);
        });
  }

  /**
   * Lets a sweep (and, for up to {@link #RECONCILE_STOP_WAIT_MS}, a reconciliation) in progress finish before the
   * pool closes; with a hand-over, the
   * terminations it claimed and could not finish are released to the other nodes' next sweep.
   */
  @Override
  public Future<?> stop() {
    stopping = true;
    vertx.cancelTimer(periodic);
    vertx.cancelTimer(deadlineTimer);
    Future<Void> closed = subscriber == null ? Future.succeededFuture() : subscriber.close();
    // a listing can wait a minute for an adapter that went away mid-request (a lost node): not the stop
    Future<?> reconciling = reconcileInFlight.timeout(RECONCILE_STOP_WAIT_MS, java.util.concurrent.TimeUnit.MILLISECONDS);
    return Future.join(closed, sweepInFlight, reconciling, rearmInFlight).otherwiseEmpty()
        .compose(v -> handOver == null ? Future.succeededFuture() : handOver.releaseClaims(owner)
            .onFailure(e -> LOG.warn("Handing over this supervisor's claims failed: {}", e.toString()))
            .otherwiseEmpty());
  }

  /**
   * Hands this supervisor's unfinished claims over to the other nodes when it stops (a cluster member);
   * call before deploying.
   */
  public SupervisorVerticle handingOverWith(ai.bespokelabs.sandbox.core.repo.NodeLoss loss) {
    this.handOver = loss;
    return this;
  }

  /** Tells {@code observer} how many terminations each sweep claimed (metrics); call before deploying. */
  public SupervisorVerticle countingClaims(java.util.function.IntConsumer observer) {
    this.claims = observer;
    return this;
  }

  /** Sweeps soon, from any thread (another node's claims were released to this one). */
  public void sweepSoon() {
    if (context != null) {
      context.runOnContext(v -> sweep());
    }
  }

  Future<Void> heartbeat() {
    return nodes.heartbeat(nodeId, now())
        .onFailure(e -> LOG.warn("Supervisor heartbeat failed: {}", e.toString()));
  }

  /** Reconciles every watched backend, cleans up orphans and evaluates alerts; one pass at a time. */
  void reconcile() {
    if (reconciling || stopping) {
      return;
    }
    reconciling = true;
    OffsetDateTime now = now();
    Future<Void> chain = Future.succeededFuture();
    for (Watch w : watches) {
      chain = chain.compose(v -> reconciler.sweep(w.backend(), w.nodeId(), now,
          now.minus(stale)).recover(e -> {
            LOG.warn("Reconciling {} failed: {}", w.backend(), e.toString());
            return Future.succeededFuture();
          }));
    }
    Future<Void> pass = chain.compose(v -> endStrandedExecutions(now)).compose(v -> alerts.evaluateAll(now));
    reconcileInFlight = pass;
    pass.onComplete(ar -> {
      reconciling = false;
      if (ar.failed()) {
        LOG.warn("Evaluating alerts failed: {}", ar.cause().toString());
      }
    });
  }

  /**
   * Executions still running in sandboxes that ended more than {@link #STRANDED_GRACE} ago can never report
   * an end (their node died, or their result was lost): they end as failed, and the ledger meters them.
   */
  private Future<Void> endStrandedExecutions(OffsetDateTime now) {
    return executions.endWithSandboxes(now.minus(STRANDED_GRACE)).<Void>map(n -> {
      if (n > 0) {
        LOG.info("Ended {} execution(s) left running in sandboxes that ended", n);
      }
      return null;
    }).recover(e -> {
      LOG.warn("Ending executions of ended sandboxes failed: {}", e.toString());
      return Future.succeededFuture();
    });
  }

  /** A wake-up (a create, a new deadline) may bring an earlier deadline: look again shortly. */
  private void scheduleRearm() {
    if (!rearmScheduled) {
      rearmScheduled = true;
      vertx.setTimer(COALESCE_MS, t -> {
        rearmScheduled = false;
        rearm();
      });
    }
  }

  /** Arms one timer for the earliest deadline. */
  private void rearm() {
    if (stopping) {
      return;
    }
    var next = sandboxes.nextDeadline();
    rearmInFlight = next;
    next.onSuccess(found -> {
      vertx.cancelTimer(deadlineTimer);
      deadlineTimer = -1;
      found.ifPresent(deadline -> {
        long delay = Math.max(1, Duration.between(now(), deadline).toMillis() + 1);
        deadlineTimer = vertx.setTimer(delay, t -> sweep());
      });
    }).onFailure(e -> {
      if (!stopping) {
        LOG.warn("Reading the next deadline failed: {}", e.toString());
      }
    });
  }

  /** Claims and terminates everything due, batch after batch; then re-arms the deadline timer. */
  void sweep() {
    if (stopping) {
      return;
    }
    if (sweeping) {
      again = true;
      return;
    }
    sweeping = true;
    again = false;
    OffsetDateTime now = now();
    Future<Integer> pass = sandboxes.claimForTermination(owner, now, now.minus(stale), BATCH)
        .compose(claimed -> {
          if (!claimed.isEmpty()) {
            claims.accept(claimed.size());
          }
          return terminateAll(claimed).map(claimed.size());
        });
    sweepInFlight = pass;
    pass.onComplete(ar -> {
          sweeping = false;
          if (ar.failed()) {
            LOG.warn("Supervisor sweep failed: {}", ar.cause().toString());
          }
          if (ar.succeeded() && ar.result() == BATCH || again) {
            sweep();
          } else if (!stopping) {
            rearm();
          }
        });
  }

  /**
   * Terminates the claimed sandboxes {@link #PARALLEL_DESTROYS} at a time, on this event loop: each lane takes
   * the next one as its last ends. Done when all are (each records its own failure).
   */
  private Future<Void> terminateAll(List<Claimed> claimed) {
    Iterator<Claimed> it = claimed.iterator();
    List<Future<Void>> lanes = new ArrayList<>();
    for (int i = 0; i < Math.min(PARALLEL_DESTROYS, claimed.size()); i++) {
      Promise<Void> lane = Promise.promise();
      next(it, lane);
      lanes.add(lane.future());
    }
    return Future.join(lanes).mapEmpty();
  }

  private void next(Iterator<Claimed> it, Promise<Void> done) {
    if (!it.hasNext()) {
      done.complete();
      return;
    }
    Claimed c = it.next();
    Future<Void> ended;
    try {
      ended = terminate(c);
    } catch (RuntimeException e) {
      // a lane that threw would never complete, and neither would the sweep
      LOG.warn("Terminating {} failed: {}", c.id(), e.toString());
      ended = Future.failedFuture(e);
    }
    ended.onComplete(ar -> next(it, done));
  }

  /** Ends one claimed sandbox the one way sandboxes end ({@link Terminations}); a provider failure is recorded. */
  private Future<Void> terminate(Claimed c) {
    String reason = c.expired() ? DestroySandbox.TTL_EXPIRED : "operator";
    return terminations.terminate(new Terminations.Ending(c.id(), c.backend(), c.nodeId(), c.providerResourceId(),
            reason), null, this::now)
        .<Void>mapEmpty()
        .recover(e -> {
          if (e instanceof ProviderException pe) {
            LOG.warn("Terminating {} failed: {}", c.id(), pe.error().code().wire());
            return Future.succeededFuture();
          }
          return Future.failedFuture(e);
        });
  }
}
