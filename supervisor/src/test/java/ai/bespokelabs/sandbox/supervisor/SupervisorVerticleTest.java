package ai.bespokelabs.sandbox.supervisor;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.core.Ids;
import ai.bespokelabs.sandbox.core.Secret;
import ai.bespokelabs.sandbox.core.Times;
import ai.bespokelabs.sandbox.core.bus.Messages;
import ai.bespokelabs.sandbox.core.db.Database;
import ai.bespokelabs.sandbox.core.db.Wakeups;
import ai.bespokelabs.sandbox.core.model.ApiKeyRecord;
import ai.bespokelabs.sandbox.core.model.SandboxConfig;
import ai.bespokelabs.sandbox.core.repo.ApiKeyRepository;
import ai.bespokelabs.sandbox.core.repo.ExecutionRepository;
import ai.bespokelabs.sandbox.core.repo.NodeRepository;
import ai.bespokelabs.sandbox.core.repo.OperationsRepository;
import ai.bespokelabs.sandbox.core.repo.OrganizationRepository;
import ai.bespokelabs.sandbox.core.repo.PolicyRepository;
import ai.bespokelabs.sandbox.core.repo.ReconciliationRepository;
import ai.bespokelabs.sandbox.core.repo.SandboxRepository;
import ai.bespokelabs.sandbox.core.repo.TerminationClaims;
import ai.bespokelabs.sandbox.core.sandbox.Terminations;
import ai.bespokelabs.sandbox.core.testing.OffsetClock;
import ai.bespokelabs.sandbox.core.testing.TestDatabase;
import ai.bespokelabs.sandbox.testkit.Waits;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import io.vertx.junit5.VertxExtension;
import io.vertx.sqlclient.Pool;
import java.math.BigDecimal;
import java.nio.file.Path;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The supervisor on its own, against a real PostgreSQL and a fake runtime ({@link FakeRuntime}): what a sweep claims
 * it destroys, and a provider that never answers holds up only its own sandboxes.
 */
@ExtendWith(VertxExtension.class)
class SupervisorVerticleTest {
  static final String ORG = "org_supervised";
  static final String BACKEND = "fake";
  static Vertx vertx;
  static Database db;
  static Pool pool;
  static SandboxRepository sandboxes;
  static int nodes;

  @BeforeAll
  static void start(final Vertx v) throws Exception {
    vertx = v; // closed by VertxExtension after the class
    Messages.registerCodecs(vertx.eventBus());
    db = Database.open(Optional.of(new Secret(TestDatabase.newDatabaseUrl())), Path.of("/nonexistent"));
    pool = db.pool(vertx, 8);
    sandboxes = new SandboxRepository(pool);
    OffsetDateTime now = Times.now(java.time.Clock.systemUTC());
    await(new OrganizationRepository(pool).createWithInitialKey(ORG, "supervised", now, new ApiKeyRepository.NewKey(
        new ApiKeyRecord("key_supervised", ORG, "k", "sk_sup", List.of("sandboxes"), now, null, null, null), "d")));
  }

  @AfterAll
  static void stop() {
    db.close();
  }

  static <T> T await(final Future<T> f) throws Exception {
    return f.toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
  }

  /** A supervisor of its own node, sweeping only when told to (no periodic sweep, no wake-ups). */
  static SupervisorVerticle supervisor(final String nodeId, final OffsetClock clock, final FakeRuntime runtime) {
    return new SupervisorVerticle(new NodeRepository(pool), new TerminationClaims(pool), new ExecutionRepository(pool),
        new Wakeups(db.connectOptions()), nodeId, clock, 0, new Terminations(runtime, sandboxes),
        List.of(), new Reconciler(vertx, new ReconciliationRepository(pool), runtime,
            new Terminations(runtime, sandboxes)),
        new AlertEvaluator(new OperationsRepository(pool), new PolicyRepository(pool),
            (org, at) -> Future.succeededFuture(new BigDecimal[] {BigDecimal.ZERO, BigDecimal.ZERO})));
  }

  /** A running sandbox on {@code nodeId} whose deadline is {@code ttl} from now. */
  static String running(final String nodeId, final Duration ttl) throws Exception {
    String id = Ids.newId("sbx");
    OffsetDateTime now = Times.now(java.time.Clock.systemUTC());
    await(sandboxes.claimIfUnrestricted(new SandboxRepository.NewSandbox(id, ORG, BACKEND,
        SandboxConfig.fromStoredJson(new JsonObject()), null, "fp", "ctk", nodeId, null, new BigDecimal("0.05"),
        "test", now.plus(ttl), now, null)));
    await(sandboxes.completeCreation(id, "res-" + id, nodeId, null, now));
    return id;
  }

  /** The status of each sandbox of {@code ids}. */
  static List<String> statuses(final List<String> ids) throws Exception {
    List<String> out = new ArrayList<>();
    for (String id : ids) {
      out.add(await(sandboxes.find(ORG, id)).orElseThrow().status());
    }
    return out;
  }

  /** A runtime whose adapter of {@code nodeId} hands each destroy it is sent to {@code onDestroy}. */
  static FakeRuntime adapter(final String nodeId, final Consumer<FakeRuntime.Destroy> onDestroy) {
    return new FakeRuntime(BACKEND, nodeId, onDestroy);
  }

  @Test
  void a_provider_that_never_answers_does_not_hold_up_the_other_expired_sandboxes() throws Exception {
    String nodeId = "node-hung-" + ++nodes;
    // the hung ones expire first: claimed first, a sweep that destroys one after another waits on them
    List<String> hung = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      hung.add(running(nodeId, Duration.ofMinutes(1)));
    }
    List<String> healthy = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      healthy.add(running(nodeId, Duration.ofMinutes(2)));
    }
    Set<String> hungIds = Set.copyOf(hung);
    List<FakeRuntime.Destroy> unanswered = new CopyOnWriteArrayList<>();
    AtomicBoolean answering = new AtomicBoolean();
    FakeRuntime runtime = adapter(nodeId, msg -> {
      if (hungIds.contains(msg.request().sandboxId()) && !answering.get()) {
        unanswered.add(msg);
      } else {
        msg.answer().complete(null);
      }
    });
    OffsetClock clock = new OffsetClock();
    SupervisorVerticle supervisor = supervisor(nodeId, clock, runtime);
    String deployment = await(vertx.deployVerticle(supervisor));
    try {
      clock.advance(Duration.ofMinutes(10));
      supervisor.sweepSoon();
      Waits.upTo(3).untilAsserted(() -> assertThat(statuses(healthy))
          .as("the healthy sandboxes, %d hung destroy(s) sent", unanswered.size()).containsOnly("destroyed"));
      assertThat(unanswered).as("every hung destroy was sent").hasSize(hung.size());
      assertThat(statuses(hung)).as("the hung sandboxes wait for their provider").containsOnly("stopping");
    } finally {
      // the provider answers at last: the sweep ends, and so can the supervisor
      answering.set(true);
      unanswered.forEach(msg -> msg.answer().complete(null));
    }
    Waits.upTo(3).untilAsserted(() -> assertThat(statuses(hung)).as("the hung sandboxes once answered")
        .containsOnly("destroyed"));
    await(vertx.undeploy(deployment));
  }

  @Test
  void a_sweep_destroys_at_most_the_bound_at_once_and_all_of_its_batch() throws Exception {
    String nodeId = "node-busy-" + ++nodes;
    List<String> ids = new ArrayList<>();
    for (int i = 0; i < 2 * SupervisorVerticle.PARALLEL_DESTROYS + 5; i++) {
      ids.add(running(nodeId, Duration.ofMinutes(1)));
    }
    AtomicInteger inFlight = new AtomicInteger();
    AtomicInteger most = new AtomicInteger();
    FakeRuntime runtime = adapter(nodeId, msg -> {
      most.accumulateAndGet(inFlight.incrementAndGet(), Math::max);
      vertx.setTimer(100, t -> {
        inFlight.decrementAndGet();
        msg.answer().complete(null);
      });
    });
    OffsetClock clock = new OffsetClock();
    SupervisorVerticle supervisor = supervisor(nodeId, clock, runtime);
    String deployment = await(vertx.deployVerticle(supervisor));
    clock.advance(Duration.ofMinutes(10));
    supervisor.sweepSoon();
    Waits.upTo(10).untilAsserted(() -> assertThat(statuses(ids)).containsOnly("destroyed"));
    assertThat(most.get()).as("destroys in flight at once").isEqualTo(SupervisorVerticle.PARALLEL_DESTROYS);
    await(vertx.undeploy(deployment));
  }
}
