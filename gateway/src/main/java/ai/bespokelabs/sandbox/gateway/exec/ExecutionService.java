package ai.bespokelabs.sandbox.gateway.exec;

import ai.bespokelabs.sandbox.core.Hmac;
import ai.bespokelabs.sandbox.core.Ids;
import ai.bespokelabs.sandbox.core.log.LogContext;
import ai.bespokelabs.sandbox.core.bus.BusFailures;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecFinished;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecResult;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.SignalExec;
import ai.bespokelabs.sandbox.core.bus.Messages.StdinExec;
import ai.bespokelabs.sandbox.core.bus.Messages.StreamEvent;
import ai.bespokelabs.sandbox.core.bus.RuntimeClient;
import ai.bespokelabs.sandbox.core.bus.RuntimeClient.Runner;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import ai.bespokelabs.sandbox.core.model.ExecutionRecord;
import ai.bespokelabs.sandbox.core.model.SandboxRecord;
import ai.bespokelabs.sandbox.core.repo.ExecutionRepository;
import ai.bespokelabs.sandbox.core.repo.NodeRepository;
import ai.bespokelabs.sandbox.core.repo.SandboxRepository;
import ai.bespokelabs.sandbox.gateway.routing.Backends;
import ai.bespokelabs.sandbox.gateway.routing.ExecRoutes;
import ai.bespokelabs.sandbox.gateway.auth.Principal;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import java.math.BigDecimal;
import java.time.Clock;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.Set;
import java.util.function.BiFunction;

/**
 * The life of an execution, whatever transport asked for it: inserting the running execution (or finding the
 * request it replays), launching it on its adapter, attaching watchers, stdin and signals, and storing its
 * result, which happens here and only here ({@link #store}).
 */
public final class ExecutionService {
  public static final String SIGNAL_MESSAGE = "signal must be one of TERM, KILL, INT";
  private static final Set<String> SIGNALS = Set.of("TERM", "KILL", "INT");

  /** The configured values executions use. */
  public record Settings(int execTimeoutSecs, int outputLimitBytes, BigDecimal customerMarkup) {}

  /**
   * A launched (or replayed) execution. {@code existing} is set for a replay of its request id; otherwise
   * {@code runner} and {@code message} say where and what to send.
   */
  public record Launch(String executionId, String requestId, ExecutionRepository.Target target,
      ExecutionRecord existing, Runner runner, ExecSandbox message, OffsetDateTime createdAt) {}

  /** A stored execution and the node that runs (or ran) it. */
  public record Located(ExecutionRecord execution, Runner runner) {}

  private final Vertx vertx;
  private final RuntimeClient runtime;
  private final ExecutionRepository executions;
  private final SandboxRepository sandboxes;
  private final Backends backends;
  private final ExecRoutes routes;
  private final Hmac hmac;
  private final Clock clock;
  private final Settings settings;
  /** This node's watchers of executions running on some node, by subscriber, with that node. */
  private final java.util.Map<StreamSubscriber, String> watching = new java.util.concurrent.ConcurrentHashMap<>();

  private final StreamMeter meter;

  public ExecutionService(Vertx vertx, RuntimeClient runtime, ExecutionRepository executions, SandboxRepository sandboxes,
      Backends backends, ExecRoutes routes, Hmac hmac, Clock clock, Settings settings, StreamMeter meter) {
    this.vertx = vertx;
    this.runtime = runtime;
    this.meter = meter;
    this.executions = executions;
    this.sandboxes = sandboxes;
    this.backends = backends;
    this.routes = routes;
    this.hmac = hmac;
    this.clock = clock;
    this.settings = settings;
  }

  public static boolean isSignal(String signal) {
    return SIGNALS.contains(signal);
  }

  // ---- launching ----------------------------------------------------------------------------------

  /** Inserts the running execution (or finds the replay) and builds the adapter message; sends nothing. */
  private Future<Launch> prepare(Principal p, String sandboxId, ExecRequest req, String requestId, boolean async,
      String subscriberAddress) {
    String executionId = Ids.newId("exe");
    LogContext.put(LogContext.EXECUTION_ID, executionId);
    String rid = requestId != null ? requestId : Ids.newId("req");
    OffsetDateTime now = now();
    return executions.start(p.organizationId(), sandboxId, executionId, rid, p.keyId(), now,
            backends.nodeBound(), backends.nodeId(), req.stdin(), fingerprint(req))
        .map(start -> {
          ExecutionRepository.Target t = start.target();
          if (start.existing().isPresent()) {
            ExecutionRecord existing = start.existing().get();
            return new Launch(existing.id(), rid, t, existing, null, null, existing.createdAt());
          }
          if (!"running".equals(t.status())) {
            throw ApiException.conflict("sandbox is " + t.status());
          }
          if (!start.started()) {
            throw ApiException.conflict("execution is already in progress");
          }
          if (!async) {
            routes.remember(p.organizationId(), t);
          }
          return launch(t, sandboxId, executionId, rid, req, async, subscriberAddress, now);
        });
  }

  /** What an {@code Idempotency-Key} is bound to: the keyed HMAC of the request, so env values stay unreadable. */
  private String fingerprint(ExecRequest req) {
    return hmac.hex(req.fingerprintInput());
  }

  /** The adapter message of a new execution and where it goes. */
  private Launch launch(ExecutionRepository.Target t, String sandboxId, String executionId, String requestId,
      ExecRequest req, boolean async, String subscriberAddress, OffsetDateTime now) {
    int timeout = req.timeoutSecs() != null ? req.timeoutSecs()
        : t.timeoutSecs() != null ? t.timeoutSecs() : settings.execTimeoutSecs();
    ExecSandbox msg = new ExecSandbox(sandboxId, executionId, t.providerResourceId(), req.code(), req.language(),
        req.command(), req.args(), req.env(), req.cwd(), timeout, settings.outputLimitBytes(), req.stdin(),
        null, subscriberAddress); // a started one's result goes to this node's recorder: the client says so
    return new Launch(executionId, requestId, t, null, runtime.runner(t.backend(), t.nodeId()), msg, now);
  }

  /**
   * Sends a prepared asynchronous launch (its result reaches {@link #recordFinished}); a failure marks the
   * execution failed and is rethrown.
   */
  public Future<Void> send(Launch l) {
    return runtime.start(l.runner(), l.message())
        .<Void>mapEmpty()
        .recover(cause -> failed(l, cause));
  }

  private <T> Future<T> failed(Launch l, Throwable cause) {
    RuntimeException failure;
    if (RuntimeClient.unreachable(cause)) {
      failure = ApiException.conflict("sandbox runtime is unavailable after a control-plane restart");
    } else {
      failure = cause instanceof ApiException || cause instanceof ProviderException ? (RuntimeException) cause
          : new ProviderException(BusFailures.normalize(l.target().backend(), "execute"));
    }
    JsonObject stored = failure instanceof ProviderException pe ? pe.error().toJson()
        : new JsonObject().put("code", "conflict").put("message", ((ApiException) failure).detail());
    return executions.fail(l.executionId(), stored, 0, now())
        .compose(v -> Future.failedFuture(failure));
  }

  // ---- blocking execute ---------------------------------------------------------------------------

  /** Runs the program and answers with its stored result (or replays the request's earlier result). */
  public Future<JsonObject> execute(Principal p, String sandboxId, ExecRequest req, String requestId) {
    ExecutionRepository.Target route = requestId == null ? routes.route(p.organizationId(), sandboxId) : null;
    if (route != null) {
      return executeEarly(p, sandboxId, req, route);
    }
    return prepare(p, sandboxId, req, requestId, false, null).compose(l -> {
      if (l.existing() != null) {
        return replay(l.existing());
      }
      return run(l).transform(ar -> ar.succeeded() ? completed(l, ar.result()) : failed(l, ar.cause()));
    });
  }

  private Future<ExecResult> run(Launch l) {
    return runtime.exec(l.runner(), l.message());
  }

  /**
   * {@code execute} without an idempotency key on a sandbox this node saw running moments ago: the program is
   * launched at once while its execution row is inserted, instead of after, which takes a database round
   * trip off every call. The insert still decides: when it finds the sandbox no longer running (or gone)
   * the launched program is killed and the caller gets that answer, as it would have before launching. (A
   * program that ends within a few milliseconds may have run by then, as one may that races a terminate.)
   * Without a key there is no earlier request the insert could find instead.
   */
  private Future<JsonObject> executeEarly(Principal p, String sandboxId, ExecRequest req,
      ExecutionRepository.Target t) {
    OffsetDateTime now = now();
    Launch l = launch(t, sandboxId, Ids.newId("exe"), Ids.newId("req"), req, false, null, now);
    Future<ExecResult> ran = run(l);
    return executions.start(p.organizationId(), sandboxId, l.executionId(), l.requestId(), p.keyId(), now,
            backends.nodeBound(), backends.nodeId(), req.stdin(), fingerprint(req))
        .transform(started -> {
          if (started.succeeded() && started.result().started()) {
            return ran.transform(ar -> {
              if (ar.failed()) {
                routes.forget(sandboxId); // the route may be stale (e.g. the sandbox moved): look it up next time
              }
              return ar.succeeded() ? completed(l, ar.result()) : this.<JsonObject>failed(l, ar.cause());
            });
          }
          routes.forget(sandboxId);
          runtime.signal(l.runner(), new SignalExec(l.executionId(), "KILL"));
          if (started.failed()) {
            return Future.failedFuture(started.cause());
          }
          return Future.failedFuture(ApiException.conflict("sandbox is " + started.result().target().status()));
        });
  }

  private Future<JsonObject> completed(Launch l, ExecResult r) {
    return store(l.executionId(), l.requestId(), l.target().hourlyRateUsd(), r);
  }

  /** The earlier result of a replayed request, or why there is none to give. */
  public Future<JsonObject> replay(ExecutionRecord existing) {
    return switch (existing.status()) {
      case "completed", "timed_out", "cancelled" -> Future.succeededFuture((JsonObject) existing.response());
      case "running" -> Future.failedFuture(ApiException.conflict("execution is already in progress"));
      default -> Future.failedFuture(ApiException.conflict(String.valueOf(existing.error())));
    };
  }

  // ---- started executions -------------------------------------------------------------------------

  /** Starts an execution nobody watches yet; answers with its stored (or replayed) record. */
  public Future<ExecutionRecord> start(Principal p, String sandboxId, ExecRequest req, String requestId) {
    return prepare(p, sandboxId, req, requestId, true, null).compose(l -> l.existing() != null
        ? Future.succeededFuture(l.existing())
        : send(l).map(sent -> new ExecutionRecord(l.executionId(), p.organizationId(), sandboxId, l.requestId(),
            "running", null, null, null, null, l.createdAt(), null, null, req.stdin())));
  }

  /**
   * Prepares an execution that {@code sub} watches from its start: once the subscriber is registered the
   * execution is inserted and {@code sub} targets it. Nothing runs until {@link #send}, so the caller can
   * announce the execution first. A replay ({@code existing} set) or a failure releases the subscriber.
   */
  public Future<Launch> prepareWatched(Principal p, String sandboxId, ExecRequest req, String requestId,
      StreamSubscriber sub) {
    return sub.ready()
        .compose(v -> prepare(p, sandboxId, req, requestId, true, sub.subscription().address()))
        .map(l -> {
          if (l.existing() != null) {
            sub.clientGone();
          } else {
            sub.target(l.executionId(), l.runner());
            watch(sub, l.runner().nodeId());
          }
          return l;
        })
        .onFailure(e -> sub.clientGone());
  }

  /** The organization's execution, or the contract's 404. */
  public Future<ExecutionRecord> find(Principal p, String sandboxId, String executionId) {
    return executions.findById(p.organizationId(), sandboxId, executionId)
        .map(o -> o.orElseThrow(() -> ApiException.notFound("execution not found")));
  }

  /** The execution and the node that runs (or ran) it. */
  public Future<Located> locate(Principal p, String sandboxId, String executionId) {
    return find(p, sandboxId, executionId).compose(e -> sandboxOf(p, e).map(sbx -> new Located(e, runnerOf(sbx, e))));
  }

  /** The sandbox of an execution, for its backend (routing). */
  private Future<SandboxRecord> sandboxOf(Principal p, ExecutionRecord e) {
    return sandboxes.find(p.organizationId(), e.sandboxId())
        .map(o -> o.orElseThrow(() -> ApiException.notFound("execution not found")));
  }

  private static Runner runnerOf(SandboxRecord sbx, ExecutionRecord e) {
    return new Runner(sbx.backend(), e.nodeId() != null ? e.nodeId() : sbx.nodeId());
  }

  // ---- watching -----------------------------------------------------------------------------------

  /** A new subscription for one client's channel; attach it with {@link #attach}. */
  public StreamSubscriber subscriber(ClientChannel channel) {
    return new StreamSubscriber(runtime, vertx, channel, meter);
  }

  /**
   * Attaches {@code sub} to the live execution from sequence number {@code after}; when its node no longer
   * holds it, serves the stored result: a {@code gap} for the output that is no longer retained, then
   * {@code exit}.
   */
  public void attach(Principal p, Located at, StreamSubscriber sub, long after) {
    ExecutionRecord e = at.execution();
    sub.target(e.id(), at.runner());
    watch(sub, at.runner().nodeId());
    sub.ready()
        .compose(v -> runtime.attach(at.runner(), e.id(), sub.subscription(), after))
        .onFailure(cause -> find(p, e.sandboxId(), e.id()).onComplete(ar -> {
          if (sub.finished()) {
            return;
          }
          ExecutionRecord now = ar.succeeded() ? ar.result() : e;
          if (now.response() instanceof JsonObject stored) {
            long lastSeq = stored.getLong("last_seq", 0L);
            StreamEvent exit = new StreamEvent(StreamEvent.EXIT, lastSeq, null, null, stored.copy());
            if (after < lastSeq) {
              sub.deliverFinal(new StreamEvent(StreamEvent.GAP, lastSeq, null, null, new JsonObject()
                  .put("from_seq", after + 1).put("to_seq", lastSeq).putNull("bytes")
                  .put("message", "live output is no longer retained; the exit event holds the stored result")),
                  exit);
            } else {
              sub.deliverFinal(exit);
            }
          } else if ("failed".equals(now.status())) {
            sub.failAndEnd("execution failed: " + now.error());
          } else {
            sub.failAndEnd("execution is not attached to a running gateway node");
          }
        }));
  }

  /** Remembers that {@code sub} watches an execution running on {@code node}, until it finishes. */
  void watch(StreamSubscriber sub, String node) {
    if (sub.finished()) {
      return;
    }
    watching.put(sub, node);
    sub.whenFinished(() -> watching.remove(sub));
  }

  /**
   * The backstop of {@link #nodeLost}: a take-over's notification missed (the listening connection was being
   * re-established) would leave those streams waiting; every {@link #LOST_NODE_CHECK_MS} the nodes that streams
   * watched here depend on are looked up, and those marked lost are treated as just announced.
   */
  public void checkLostNodes(NodeRepository nodes) {
    java.util.Set<String> remote = new java.util.HashSet<>(watching.values());
    remote.remove(backends.nodeId());
    if (remote.isEmpty()) {
      return;
    }
    nodes.lostAmong(remote).onSuccess(lost -> lost.forEach(this::nodeLost));
  }

  public static final long LOST_NODE_CHECK_MS = 5_000;

  /**
   * Node {@code nodeId} was lost (another node took it over): every stream of an execution it ran ends with a
   * failed {@code exit} event, since no more output can come, and no execute goes there on a remembered route.
   */
  public void nodeLost(String nodeId) {
    routes.forgetNode(nodeId);
    watching.forEach((sub, node) -> {
      if (node.equals(nodeId)) {
        sub.nodeLost("the gateway node running this execution (" + nodeId + ") was lost; the execution failed");
      }
    });
  }

  // ---- stdin and signals --------------------------------------------------------------------------

  /** Sends stdin to a running execution whose stdin is open; a finished one is the contract's 409. */
  public Future<Void> stdin(Principal p, String sandboxId, String executionId, byte[] data, boolean eof) {
    return control(p, sandboxId, executionId, (at, e) -> runtime.stdin(at, new StdinExec(e.id(), data, eof)), true);
  }

  /** Signals a running execution (the signal is checked with {@link #isSignal} first). */
  public Future<Void> signal(Principal p, String sandboxId, String executionId, String signal) {
    return control(p, sandboxId, executionId, (at, e) -> runtime.signal(at, new SignalExec(e.id(), signal)), false);
  }

  private Future<Void> control(Principal p, String sandboxId, String executionId,
      BiFunction<Runner, ExecutionRecord, Future<Void>> send, boolean needsStdin) {
    return find(p, sandboxId, executionId).compose(e -> {
      if (!"running".equals(e.status())) {
        throw ApiException.conflict("execution has finished");
      }
      if (needsStdin && !e.stdinOpen()) {
        throw ApiException.conflict("stdin is not open for this execution");
      }
      return sandboxOf(p, e).compose(sbx -> send.apply(runnerOf(sbx, e), e)
          .recover(t -> {
            if (t instanceof ApiException api && api.status() == 404 || RuntimeClient.unreachable(t)) {
              return Future.failedFuture(ApiException.conflict("execution has finished"));
            }
            return Future.failedFuture(t);
          }));
    });
  }

  /** Stdin for an execution a WebSocket is attached to; fails with the adapter's own failure. */
  public Future<Void> sendStdin(String executionId, Runner runner, byte[] data, boolean eof) {
    return runtime.stdin(runner, new StdinExec(executionId, data, eof));
  }

  /** A signal for an execution a WebSocket is attached to; fails with the adapter's own failure. */
  public Future<Void> sendSignal(String executionId, Runner runner, String signal) {
    return runtime.signal(runner, new SignalExec(executionId, signal));
  }

  // ---- results ------------------------------------------------------------------------------------

  /**
   * Stores the result an adapter reported for an execution this node started, unless it is no longer
   * pending (stored already, or ended otherwise).
   */
  Future<Void> recordFinished(ExecFinished f) {
    return executions.pending(f.executionId())
        .compose(p -> p.isEmpty() ? Future.succeededFuture()
            : store(f.executionId(), p.get().requestId(), p.get().hourlyRateUsd(), f.result()).mapEmpty());
  }

  /**
   * The one place an execution's result is stored: usage priced at the sandbox's captured hourly rate, then
   * PostgreSQL wakes the ledger to meter it (the write notifies in its transaction). Answers with the stored
   * response.
   */
  private Future<JsonObject> store(String executionId, String requestId, BigDecimal hourlyRate, ExecResult r) {
    JsonObject response = ExecResponses.of(requestId, executionId, r, hourlyRate, settings.customerMarkup());
    return executions.complete(executionId, r.status(), response, r.exitCode(), r.durationMs(), now())
        .map(v -> response);
  }

  /** Now, in UTC, at the microsecond precision PostgreSQL stores. */
  private OffsetDateTime now() {
    return OffsetDateTime.now(clock).withOffsetSameInstant(ZoneOffset.UTC).truncatedTo(ChronoUnit.MICROS);
  }
}
