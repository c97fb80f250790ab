package ai.bespokelabs.sandbox.adapters;

import ai.bespokelabs.sandbox.adapters.spi.Backend;
import ai.bespokelabs.sandbox.adapters.spi.Capability;
import ai.bespokelabs.sandbox.adapters.spi.Execution;
import ai.bespokelabs.sandbox.adapters.workspace.GitCloner;
import ai.bespokelabs.sandbox.adapters.workspace.Materializer;
import ai.bespokelabs.sandbox.core.bus.AdapterEndpoint;
import ai.bespokelabs.sandbox.core.bus.BusFailures;
import ai.bespokelabs.sandbox.core.bus.RuntimeServer;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecResult;
import ai.bespokelabs.sandbox.core.bus.Messages.FileReply;
import ai.bespokelabs.sandbox.core.bus.Messages.SandboxDestroyed;
import ai.bespokelabs.sandbox.core.bus.Messages.SandboxMetrics;
import ai.bespokelabs.sandbox.core.bus.Messages.AttachExec;
import ai.bespokelabs.sandbox.core.bus.Messages.CreateSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.DestroySandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.DetachExec;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecFinished;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecStarted;
import ai.bespokelabs.sandbox.core.bus.Messages.FileOp;
import ai.bespokelabs.sandbox.core.bus.Messages.ListResources;
import ai.bespokelabs.sandbox.core.bus.Messages.MetricsRequest;
import ai.bespokelabs.sandbox.core.bus.Messages.ResourceList;
import ai.bespokelabs.sandbox.core.bus.Messages.SandboxCreated;
import ai.bespokelabs.sandbox.core.bus.Messages.SetTimeout;
import ai.bespokelabs.sandbox.core.bus.Messages.SnapshotSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.SnapshotTaken;
import ai.bespokelabs.sandbox.core.bus.Messages.SignalExec;
import ai.bespokelabs.sandbox.core.bus.Messages.StdinExec;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.Promise;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletionException;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Binds one {@link Backend} to the event bus: {@code sandbox.adapter.<backend>} for node-independent
 * operations and {@code sandbox.adapter.<backend>.<nodeId>} for sandboxes and executions hosted by this
 * node. Every backend call is made on this verticle's context and answered when its future completes; an
 * operation outside the backend's declared {@link Capability capabilities} is answered
 * {@code feature_not_supported} here, without calling it. File operations are admitted with a share per
 * organization ({@link FairShare}). The execution registry and streaming run on this context too. Every
 * provider failure it answers, whoever asked, is told to its {@link FailureCounter} once.
 */
public final class AdapterVerticle extends VerticleBase implements RuntimeServer {
  private static final Logger LOG = LoggerFactory.getLogger(AdapterVerticle.class);
  private static final Set<String> SIGNALS = Set.of("TERM", "KILL", "INT");
  /** How long a finished execution stays attachable for clients that reconnect. */
  static final long RETAIN_AFTER_EXIT_MS = 60_000;
  /**
   * Journal bytes all finished executions may keep together; past it the oldest are dropped early (a client
   * attaching later gets the stored result instead of the live journal).
   */
  static final long RETAINED_BUDGET_BYTES = 64L << 20;

  /** Told of each provider failure an adapter answers: the contract's error only, never the provider's text. */
  @FunctionalInterface
  public interface FailureCounter {
    FailureCounter NONE = (backend, error) -> { };

    /** @param backend the adapter's backend, as requests name it */
    void failed(String backend, ProviderError error);
  }

  private final Backend provider;
  private final String nodeId;
  private final long journalBytes;
  private final Materializer materializer;
  private final Map<String, ExecStream> executions = new HashMap<>();
  private final Map<String, Future<Void>> stdinChains = new HashMap<>();
  private final java.util.LinkedHashMap<String, Long> retained = new java.util.LinkedHashMap<>();
  private long retainedBytes;
  private FairShare fileShare;
  private FileSessions files;
  private FailureCounter failures = FailureCounter.NONE;
  private java.util.function.Consumer<String> onUnavailable = reason -> { };
  /** Why the backend could not start (its settings are broken); null once it started. */
  private String startFailure;

  public AdapterVerticle(Backend provider, String nodeId, long journalBytes) {
    this(provider, nodeId, journalBytes, new Materializer(new GitCloner(false)));
  }

  /** @param materializer populates each created sandbox from its workspace before the create is answered */
  public AdapterVerticle(Backend provider, String nodeId, long journalBytes, Materializer materializer) {
    this.provider = Objects.requireNonNull(provider, "provider");
    this.nodeId = Objects.requireNonNull(nodeId, "nodeId");
    this.journalBytes = journalBytes;
    this.materializer = materializer;
  }

  /**
   * Told, once, why the backend could not start (its settings are broken): the verticle still deploys and
   * answers every request with {@code backend_not_installed} and that reason (set before deployment).
   */
  public AdapterVerticle reportingUnavailable(java.util.function.Consumer<String> listener) {
    this.onUnavailable = Objects.requireNonNull(listener, "listener");
    return this;
  }

  /** Counts every provider failure this verticle answers (set before deployment). */
  public AdapterVerticle countingFailures(FailureCounter counter) {
    this.failures = Objects.requireNonNull(counter, "counter");
    return this;
  }

  @Override
  public Future<?> start() {
    Future<Void> started;
    try {
      started = provider.start(context);
    } catch (RuntimeException e) {
      started = Future.failedFuture(e);
    }
    return started.recover(e -> {
      // A backend whose settings are broken never stops the gateway: it is listed as not configured with the
      // reason, its requests are refused with it, and the log has this one line.
      startFailure = unavailableReason(provider.name(), e);
      LOG.warn("{} is not available: {}", provider.name(), e.getMessage() == null ? startFailure : e.getMessage());
      onUnavailable.accept(startFailure);
      return Future.succeededFuture();
    }).compose(v -> {
      fileShare = new FairShare(ai.bespokelabs.sandbox.adapters.spi.FileSystem.PER_ORGANIZATION);
      if (startFailure == null && provider.capabilities().contains(Capability.FILES)) {
        files = new FileSessions(provider.files());
        vertx.setPeriodic(FileSessions.IDLE_MS / 4, t -> files.expire());
      }
      return AdapterEndpoint.bind(vertx, provider.name(), nodeId, provider.nodeBound(), this);
    });
  }

  @Override
  public Future<?> stop() {
    executions.values().forEach(ExecStream::close);
    if (files != null) {
      files.closeAll();
    }
    return provider.close();
  }

  /** The provider's price quote for a sandbox it just made; without one (or when asking failed) the catalog's. */
  private Future<java.math.BigDecimal> quotedRate(CreateSandbox request, String resourceId) {
    Future<java.math.BigDecimal> quote;
    try {
      quote = provider.lifecycle().quotedHourlyRate(request, resourceId);
    } catch (RuntimeException e) {
      quote = Future.failedFuture(e);
    }
    return quote.map(rate -> rate != null && rate.signum() > 0 ? rate : null).recover(e -> {
      LOG.warn("The {} price of sandbox {} could not be read; it is billed at the catalog's rate: {}", provider.name(),
          request.sandboxId(), e.toString());
      return Future.succeededFuture(null);
    });
  }

  /**
   * What tenants and {@code /v1/providers} are told of a backend that failed to start: a settings error's own
   * sentence (it names the setting, never a credential), else only that it failed, the details being in the log.
   */
  static String unavailableReason(String backend, Throwable e) {
    if (e instanceof ai.bespokelabs.sandbox.core.config.ConfigException && e.getMessage() != null) {
      return e.getMessage();
    }
    if (e instanceof ProviderException pe && pe.error().reason() != null) {
      return pe.error().reason();
    }
    return backend + " failed to start; the gateway's log says why";
  }

  @Override
  public Throwable refusal(String operation) {
    return startFailure == null ? null
        : failed(operation, new ProviderException(ProviderError.unavailable(provider.name(), operation, startFailure)))
            .cause();
  }

  @Override
  public Future<SandboxCreated> create(CreateSandbox request) {
    return call("create", null, () -> provider.lifecycle().create(request)
        .compose(id -> materializer.apply(provider, request, id).map(id))
        .compose(id -> quotedRate(request, id).map(rate -> new SandboxCreated(id, nodeId, rate))));
  }

  @Override
  public Future<SandboxDestroyed> destroy(DestroySandbox request) {
    return call("destroy", null, () -> provider.lifecycle().destroy(request));
  }

  @Override
  public Future<Void> health() {
    return call("health", null, () -> provider.inventory().checkHealth());
  }

  @Override
  public Future<io.vertx.core.json.JsonObject> details() {
    return call("details", null, () -> provider.inventory().details());
  }

  @Override
  public Future<ResourceList> list(ListResources request) {
    return call("list", null, () -> provider.inventory().list(request.knownResourceIds()).map(ResourceList::new));
  }

  @Override
  public Future<FileReply> files(String organization, FileOp op) {
    return call(op.op(), Capability.FILES, () -> fileShare.run(organization == null ? op.sandboxId() : organization,
        () -> files.handle(op)));
  }

  @Override
  public Future<SandboxCreated> adopt(CreateSandbox request, String resource) {
    return call("adopt", Capability.ADOPT, () -> provider.lifecycle().adopt(request, resource)
        .map(id -> new SandboxCreated(id, nodeId)));
  }

  @Override
  public Future<SnapshotTaken> snapshot(SnapshotSandbox request) {
    return call("snapshot", Capability.SNAPSHOT, () -> provider.lifecycle().snapshot(request).map(SnapshotTaken::new));
  }

  @Override
  public Future<Void> setTimeout(SetTimeout request) {
    if (!provider.capabilities().contains(Capability.PROVIDER_TIMEOUT)) {
      return Future.succeededFuture(); // the supervisor enforces the gateway's deadline; nothing to move along
    }
    return call("timeout", null, () -> provider.lifecycle().extendTimeout(request));
  }

  @Override
  public Future<SandboxMetrics> metrics(MetricsRequest request) {
    return call("metrics", Capability.METRICS, () -> provider.metrics().sample(request));
  }

  @Override
  @SuppressWarnings("unchecked")
  public Future<ExecResult> exec(ExecSandbox request) {
    return (Future<ExecResult>) startExecution(request);
  }

  @Override
  @SuppressWarnings("unchecked")
  public Future<ExecStarted> start(ExecSandbox request) {
    return (Future<ExecStarted>) startExecution(request);
  }

  @Override
  public Future<Void> detach(DetachExec d) {
    ExecStream stream = executions.get(d.executionId());
    if (stream != null) {
      stream.detach(d.subscriberAddress());
    }
    return Future.succeededFuture();
  }

  /**
   * Calls the backend for {@code op}; an operation outside the backend's declared capabilities is
   * {@code feature_not_supported}, answered here.
   */
  private <T> Future<T> call(String op, Capability needed, Supplier<Future<T>> work) {
    if (needed != null && !provider.capabilities().contains(needed)) {
      return failed(op, unsupported(needed));
    }
    return attempt(op, work);
  }

  /** The one {@code feature_not_supported} answer of every backend. */
  private ProviderException unsupported(Capability capability) {
    return new ProviderException(ProviderError.of(ErrorCode.FEATURE_NOT_SUPPORTED, provider.name(),
        capability.wire(), false, ProviderError.Outcome.FAILED));
  }

  /** Runs a backend call; failures (thrown or failed futures) end in the error contract ({@link #failed}). */
  private <T> Future<T> attempt(String op, Supplier<Future<T>> work) {
    Future<T> f;
    try {
      f = work.get();
    } catch (RuntimeException e) {
      f = Future.failedFuture(e);
    }
    return f.recover(t -> failed(op, t));
  }

  /**
   * Logs and counts a failure of {@code op}; fails with its contract form (anything unexpected becomes a normalized
   * provider error).
   */
  private <T> Future<T> failed(String op, Throwable t) {
    Throwable cause = unwrap(t);
    if (!(cause instanceof ProviderException) && !(cause instanceof ApiException)) {
      // only the type and where it was thrown: provider exception texts may echo credentials
      LOG.warn("{} {} failed unexpectedly: {} at {}", provider.name(), op, cause.getClass().getName(),
          origin(cause));
    } else if (cause instanceof ProviderException p) {
      // the contract's error only, never the provider's own text
      LOG.info("{} {} failed: {} (retryable {}, outcome {})", provider.name(), op, p.error().code().wire(),
          p.error().retryable(), p.error().outcome().wire());
    }
    if (cause instanceof ApiException) {
      return Future.failedFuture(cause);
    }
    ProviderError error = cause instanceof ProviderException p ? p.error() : BusFailures.normalize(provider.name(), op);
    failures.failed(provider.name(), error);
    return Future.failedFuture(cause instanceof ProviderException ? cause : new ProviderException(error));
  }

  /**
   * Starts an execution with its stream. {@code exec} completes with the result at the end; {@code start}
   * completes once the program runs and reports the result at the end.
   */
  private Future<?> startExecution(ExecSandbox req) {
    boolean async = AdapterEndpoint.reportsResult(req);
    Promise<Object> answer = Promise.promise();
    ExecStream stream = new ExecStream(req.executionId(), req.keepStdin(), context, vertx.eventBus(), journalBytes,
        req.outputLimitBytes());
    executions.put(req.executionId(), stream);
    if (req.subscriberAddress() != null) {
      stream.attach(req.subscriberAddress(), 0);
    }
    stream.onExit(() -> {
      if (async) {
        AdapterEndpoint.report(vertx.eventBus(), req, new ExecFinished(req.executionId(), stream.result()))
            .onComplete(ar -> {
              if (ar.failed()) {
                LOG.warn("Result of execution {} could not be recorded: {}", req.executionId(), ar.cause().toString());
              }
              stream.recorded();
            });
      } else {
        answer.tryComplete(stream.result());
        stream.recorded();
      }
    });
    stream.onIdle(() -> retain(req.executionId(), stream));
    Future<Execution> started = attempt("execute", () -> provider.executions().start(req, stream));
    started.onFailure(answer::tryFail); // answered before the stream hears of it (and ends)
    started.onComplete(stream::started)
        .onSuccess(handle -> {
          if (async) {
            answer.tryComplete(new ExecStarted(req.executionId(), nodeId));
          }
        })
        .onFailure(t -> {
          stream.close();
          executions.remove(req.executionId());
        });
    return answer.future();
  }

  /** Keeps a finished execution attachable for a while, within the retained-bytes budget. */
  private void retain(String executionId, ExecStream stream) {
    if (retained.containsKey(executionId)) {
      return;
    }
    long bytes = stream.journalBytes();
    retained.put(executionId, bytes);
    retainedBytes += bytes;
    vertx.setTimer(RETAIN_AFTER_EXIT_MS, t -> forget(executionId));
    var oldest = retained.keySet().iterator();
    while (retainedBytes > RETAINED_BUDGET_BYTES && oldest.hasNext()) {
      String id = oldest.next();
      oldest.remove();
      release(id);
    }
  }

  private void forget(String executionId) {
    if (retained.remove(executionId) != null) {
      release(executionId);
    }
  }

  /** Drops a finished execution; reads its journal size before removing it. */
  private void release(String executionId) {
    ExecStream stream = executions.remove(executionId);
    stdinChains.remove(executionId);
    if (stream != null) {
      retainedBytes -= stream.journalBytes();
    }
  }

  private ExecStream find(String executionId) {
    ExecStream stream = executions.get(executionId);
    if (stream == null) {
      throw ApiException.notFound("execution not found");
    }
    return stream;
  }

  @Override
  public Future<Void> attach(AttachExec a) {
    find(a.executionId()).attach(a.subscriberAddress(), a.after());
    return Future.succeededFuture();
  }

  /** Writes are chained per execution so bytes reach stdin in the order they were sent. */
  @Override
  public Future<Void> stdin(StdinExec in) {
    ExecStream stream = find(in.executionId());
    if (!stream.keepStdin()) {
      throw ApiException.conflict("stdin is not open for this execution");
    }
    if (stream.result() != null) {
      throw ApiException.conflict("execution has finished");
    }
    Future<Void> previous = stdinChains.getOrDefault(in.executionId(), Future.succeededFuture());
    Future<Void> next = previous.transform(ignored -> stream.handle().transform(started -> {
      if (started.failed()) {
        return Future.<Void>failedFuture(ApiException.conflict("execution has finished"));
      }
      Execution execution = started.result();
      return attempt("stdin", () -> {
        Future<Void> written = in.data() != null && in.data().length > 0
            ? execution.write(io.vertx.core.buffer.Buffer.buffer(in.data())) : Future.succeededFuture();
        return in.eof() ? written.compose(v -> execution.closeStdin()) : written;
      });
    }));
    stdinChains.put(in.executionId(), next.otherwiseEmpty());
    return next;
  }

  @Override
  public Future<Void> signal(SignalExec s) {
    ExecStream stream = find(s.executionId());
    if (!SIGNALS.contains(s.signal())) {
      throw ApiException.invalid("signal must be one of TERM, KILL, INT");
    }
    if (stream.result() != null) {
      throw ApiException.conflict("execution has finished");
    }
    return stream.handle().transform(started -> started.failed()
        ? Future.failedFuture(ApiException.conflict("execution has finished"))
        : attempt("signal", () -> started.result().signal(s.signal())));
  }

  /** The innermost frame of this project's code in {@code t}'s stack, else its first frame. */
  static String origin(Throwable t) {
    StackTraceElement[] frames = t.getStackTrace();
    for (StackTraceElement f : frames) {
      if (f.getClassName().startsWith("ai.bespokelabs.")) {
        return f.toString();
      }
    }
    return frames.length == 0 ? "?" : frames[0].toString();
  }

  private static Throwable unwrap(Throwable t) {
    while (t instanceof CompletionException && t.getCause() != null) {
      t = t.getCause();
    }
    return t;
  }
}
