package ai.bespokelabs.sandbox.adapters;

import ai.bespokelabs.sandbox.adapters.spi.Backend;
import ai.bespokelabs.sandbox.adapters.spi.Capability;
import ai.bespokelabs.sandbox.adapters.spi.Execution;
import ai.bespokelabs.sandbox.adapters.workspace.GitCloner;
import ai.bespokelabs.sandbox.adapters.workspace.Materializer;
import ai.bespokelabs.sandbox.core.bus.Addresses;
import ai.bespokelabs.sandbox.core.bus.BusFailures;
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
import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.core.eventbus.Message;
import io.vertx.core.eventbus.MessageConsumer;
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
public final class AdapterVerticle extends VerticleBase {
  private static final Logger LOG = LoggerFactory.getLogger(AdapterVerticle.class);
  private static final Set<String> SIGNALS = Set.of("TERM", "KILL", "INT");
  static final long RECORD_TIMEOUT_MS = 60_000;
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
      MessageConsumer<Object> node = vertx.eventBus().consumer(Addresses.adapter(provider.name(), nodeId),
          this::handle);
      if (provider.nodeBound()) {
        return node.completion();
      }
      MessageConsumer<Object> shared = vertx.eventBus().consumer(Addresses.adapter(provider.name()), this::handle);
      return Future.all(node.completion(), shared.completion()).mapEmpty();
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

  private void handle(Message<Object> msg) {
    String action = String.valueOf(msg.headers().get(Addresses.ACTION));
    if (startFailure != null) {
      failed(msg, action, new ProviderException(ProviderError.unavailable(provider.name(), action, startFailure)));
      return;
    }
    switch (action) {
      case Addresses.CREATE -> {
        CreateSandbox request = (CreateSandbox) msg.body();
        call(msg, "create", null, () -> provider.lifecycle().create(request)
            .compose(id -> materializer.apply(provider, request, id).map(id))
            .compose(id -> quotedRate(request, id).map(rate -> new SandboxCreated(id, nodeId, rate))));
      }
      case Addresses.DESTROY -> call(msg, "destroy", null,
          () -> provider.lifecycle().destroy((DestroySandbox) msg.body()));
      case Addresses.HEALTH -> call(msg, "health", null, () -> provider.inventory().checkHealth());
      case Addresses.DETAILS -> call(msg, "details", null, () -> provider.inventory().details());
      case Addresses.LIST -> call(msg, "list", null, () -> provider.inventory().list(
          msg.body() instanceof ListResources l ? l.knownResourceIds() : List.of()).map(ResourceList::new));
      case Addresses.FILES -> {
        FileOp op = (FileOp) msg.body();
        String organization = msg.headers().get(Addresses.ORGANIZATION);
        call(msg, op.op(), Capability.FILES, () -> fileShare.run(organization == null ? op.sandboxId() : organization,
            () -> files.handle(op)));
      }
      case Addresses.ADOPT -> call(msg, "adopt", Capability.ADOPT, () -> provider.lifecycle()
          .adopt((CreateSandbox) msg.body(), msg.headers().get("resource")).map(id -> new SandboxCreated(id, nodeId)));
      case Addresses.SNAPSHOT -> call(msg, "snapshot", Capability.SNAPSHOT,
          () -> provider.lifecycle().snapshot((SnapshotSandbox) msg.body()).map(SnapshotTaken::new));
      case Addresses.SET_TIMEOUT -> {
        if (!provider.capabilities().contains(Capability.PROVIDER_TIMEOUT)) {
          msg.reply(null); // the supervisor enforces the gateway's deadline; nothing to move along
          return;
        }
        call(msg, "timeout", null, () -> provider.lifecycle().extendTimeout((SetTimeout) msg.body()));
      }
      case Addresses.METRICS -> call(msg, "metrics", Capability.METRICS,
          () -> provider.metrics().sample((MetricsRequest) msg.body()));
      case Addresses.EXEC, Addresses.START -> startExecution(msg, (ExecSandbox) msg.body());
      case Addresses.ATTACH -> attach(msg, (AttachExec) msg.body());
      case Addresses.DETACH -> {
        DetachExec d = (DetachExec) msg.body();
        ExecStream stream = executions.get(d.executionId());
        if (stream != null) {
          stream.detach(d.subscriberAddress());
        }
        msg.reply(null);
      }
      case Addresses.STDIN -> stdin(msg, (StdinExec) msg.body());
      case Addresses.SIGNAL -> signal(msg, (SignalExec) msg.body());
      default -> BusFailures.fail(msg, new ApiException(400, "unsupported adapter action"));
    }
  }

  /**
   * Calls the backend for {@code op} and replies with the result; an operation outside the backend's declared
   * capabilities is {@code feature_not_supported}, answered here.
   */
  private <T> void call(Message<?> msg, String op, Capability needed, Supplier<Future<T>> work) {
    if (needed != null && !provider.capabilities().contains(needed)) {
      failed(msg, op, unsupported(needed));
      return;
    }
    attempt(msg, op, work).onSuccess(msg::reply);
  }

  /** The one {@code feature_not_supported} answer of every backend. */
  private ProviderException unsupported(Capability capability) {
    return new ProviderException(ProviderError.of(ErrorCode.FEATURE_NOT_SUPPORTED, provider.name(),
        capability.wire(), false, ProviderError.Outcome.FAILED));
  }

  /** Runs a backend call; failures (thrown or failed futures) are answered in the error contract. */
  private <T> Future<T> attempt(Message<?> msg, String op, Supplier<Future<T>> work) {
    Future<T> f;
    try {
      f = work.get();
    } catch (RuntimeException e) {
      f = Future.failedFuture(e);
    }
    return f.recover(t -> failed(msg, op, t));
  }

  private <T> Future<T> failed(Message<?> msg, String op, Throwable t) {
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
    if (!(cause instanceof ApiException)) {
      failures.failed(provider.name(),
          cause instanceof ProviderException p ? p.error() : BusFailures.normalize(provider.name(), op));
    }
    BusFailures.fail(msg, cause, provider.name(), op);
    return Future.failedFuture(cause);
  }

  /**
   * Starts an execution with its stream. {@code exec} answers with the result at the end; {@code start}
   * answers once the program runs and hands the result to the recorder at the end.
   */
  private void startExecution(Message<Object> msg, ExecSandbox req) {
    boolean async = req.recorderAddress() != null;
    ExecStream stream = new ExecStream(req.executionId(), req.keepStdin(), context, vertx.eventBus(), journalBytes,
        req.outputLimitBytes());
    executions.put(req.executionId(), stream);
    if (req.subscriberAddress() != null) {
      stream.attach(req.subscriberAddress(), 0);
    }
    stream.onExit(() -> {
      if (async) {
        vertx.eventBus().request(req.recorderAddress(), new ExecFinished(req.executionId(), stream.result()),
                new DeliveryOptions().setSendTimeout(RECORD_TIMEOUT_MS))
            .onComplete(ar -> {
              if (ar.failed()) {
                LOG.warn("Result of execution {} could not be recorded: {}", req.executionId(), ar.cause().toString());
              }
              stream.recorded();
            });
      } else {
        msg.reply(stream.result());
        stream.recorded();
      }
    });
    stream.onIdle(() -> retain(req.executionId(), stream));
    Future<Execution> started = attempt(msg, "execute", () -> provider.executions().start(req, stream));
    started.onComplete(stream::started)
        .onSuccess(handle -> {
          if (async) {
            msg.reply(new ExecStarted(req.executionId(), nodeId));
          }
        })
        .onFailure(t -> {
          stream.close();
          executions.remove(req.executionId());
        });
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

  private ExecStream find(Message<?> msg, String executionId) {
    ExecStream stream = executions.get(executionId);
    if (stream == null) {
      BusFailures.fail(msg, ApiException.notFound("execution not found"));
    }
    return stream;
  }

  private void attach(Message<Object> msg, AttachExec a) {
    ExecStream stream = find(msg, a.executionId());
    if (stream != null) {
      stream.attach(a.subscriberAddress(), a.after());
      msg.reply(null);
    }
  }

  /** Writes are chained per execution so bytes reach stdin in the order they were sent. */
  private void stdin(Message<Object> msg, StdinExec in) {
    ExecStream stream = find(msg, in.executionId());
    if (stream == null) {
      return;
    }
    if (!stream.keepStdin()) {
      BusFailures.fail(msg, ApiException.conflict("stdin is not open for this execution"), provider.name(), "stdin");
      return;
    }
    if (stream.result() != null) {
      BusFailures.fail(msg, ApiException.conflict("execution has finished"), provider.name(), "stdin");
      return;
    }
    Future<Void> previous = stdinChains.getOrDefault(in.executionId(), Future.succeededFuture());
    Future<Void> next = previous.transform(ignored -> stream.handle().transform(started -> {
      if (started.failed()) {
        BusFailures.fail(msg, ApiException.conflict("execution has finished"), provider.name(), "stdin");
        return Future.<Void>succeededFuture();
      }
      Execution execution = started.result();
      return attempt(msg, "stdin", () -> {
        Future<Void> written = in.data() != null && in.data().length > 0
            ? execution.write(io.vertx.core.buffer.Buffer.buffer(in.data())) : Future.succeededFuture();
        return in.eof() ? written.compose(v -> execution.closeStdin()) : written;
      }).onSuccess(v -> msg.reply(null));
    }));
    stdinChains.put(in.executionId(), next.otherwiseEmpty());
  }

  private void signal(Message<Object> msg, SignalExec s) {
    ExecStream stream = find(msg, s.executionId());
    if (stream == null) {
      return;
    }
    if (!SIGNALS.contains(s.signal())) {
      BusFailures.fail(msg, ApiException.invalid("signal must be one of TERM, KILL, INT"), provider.name(),
          "signal");
      return;
    }
    if (stream.result() != null) {
      BusFailures.fail(msg, ApiException.conflict("execution has finished"), provider.name(), "signal");
      return;
    }
    stream.handle().onFailure(t -> BusFailures.fail(msg, ApiException.conflict("execution has finished"),
        provider.name(), "signal")).onSuccess(execution -> attempt(msg, "signal", () -> execution.signal(s.signal()))
            .onSuccess(v -> msg.reply(null)));
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
