package ai.bespokelabs.sandbox.adapters;

import ai.bespokelabs.sandbox.core.bus.Addresses;
import ai.bespokelabs.sandbox.core.bus.BusFailures;
import ai.bespokelabs.sandbox.core.bus.Messages.AttachExec;
import ai.bespokelabs.sandbox.core.bus.Messages.CreateSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.DestroySandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.DetachExec;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecFinished;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecStarted;
import ai.bespokelabs.sandbox.core.bus.Messages.SandboxCreated;
import ai.bespokelabs.sandbox.core.bus.Messages.SignalExec;
import ai.bespokelabs.sandbox.core.bus.Messages.StdinExec;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.core.eventbus.Message;
import io.vertx.core.eventbus.MessageConsumer;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Binds one {@link SandboxProvider} to the event bus: {@code sandbox.adapter.<backend>} for node-independent
 * operations and {@code sandbox.adapter.<backend>.<nodeId>} for sandboxes and executions hosted by this
 * node. Blocking provider calls run on virtual threads, so a slow call never holds up another; file operations
 * run on a bounded pool of their own with a share per organization ({@link FilePool}); everything
 * else (the execution registry, streaming) runs on this verticle's context.
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

  private final SandboxProvider provider;
  private final String nodeId;
  private final long journalBytes;
  private final ai.bespokelabs.sandbox.adapters.workspace.Materializer materializer;
  private final Map<String, ExecStream> executions = new HashMap<>();
  private final Map<String, Future<Void>> stdinChains = new HashMap<>();
  private final java.util.LinkedHashMap<String, Long> retained = new java.util.LinkedHashMap<>();
  private long retainedBytes;
  private ExecutorService executor;
  private FilePool filePool;
  private FileSessions files;

  public AdapterVerticle(SandboxProvider provider, String nodeId, long journalBytes) {
    this(provider, nodeId, journalBytes, new ai.bespokelabs.sandbox.adapters.workspace.Materializer(
        new ai.bespokelabs.sandbox.adapters.workspace.GitCloner(false)));
  }

  /** @param materializer populates each created sandbox from its workspace before the create is answered */
  public AdapterVerticle(SandboxProvider provider, String nodeId, long journalBytes,
      ai.bespokelabs.sandbox.adapters.workspace.Materializer materializer) {
    this.provider = Objects.requireNonNull(provider, "provider");
    this.nodeId = Objects.requireNonNull(nodeId, "nodeId");
    this.journalBytes = journalBytes;
    this.materializer = materializer;
  }

  @Override
  public Future<?> start() {
    executor = Executors.newThreadPerTaskExecutor(
        Thread.ofVirtual().name("adapter-" + provider.backend() + "-", 0).factory());
    if (provider instanceof NonBlockingProvider nb) {
      nb.useContext(context);
    }
    filePool = FilePool.sized("adapter-" + provider.backend() + "-files-");
    files = new FileSessions(provider);
    vertx.setPeriodic(FileSessions.IDLE_MS / 4, t -> executor.execute(files::expire));
    MessageConsumer<Object> node = vertx.eventBus().consumer(Addresses.adapter(provider.backend(), nodeId),
        this::handle);
    if (provider.nodeBound()) {
      return node.completion();
    }
    MessageConsumer<Object> shared = vertx.eventBus().consumer(Addresses.adapter(provider.backend()), this::handle);
    return Future.all(node.completion(), shared.completion());
  }

  @Override
  public Future<?> stop() {
    executions.values().forEach(ExecStream::close);
    executor.shutdownNow();
    filePool.shutdownNow();
    files.closeAll();
    provider.close();
    return Future.succeededFuture();
  }

  private void handle(Message<Object> msg) {
    String action = String.valueOf(msg.headers().get(Addresses.ACTION));
    switch (action) {
      case Addresses.CREATE -> {
        CreateSandbox request = (CreateSandbox) msg.body();
        if (provider instanceof NonBlockingProvider nb && request.workspace().isEmpty()) {
          nonBlocking(msg, "create", () -> nb.createAsync(request).map(id -> new SandboxCreated(id, nodeId)))
              .onSuccess(msg::reply);
          return;
        }
        blocking(msg, "create", () -> {
          String resourceId = provider.create(request);
          materializer.apply(provider, request, resourceId);
          return new SandboxCreated(resourceId, nodeId);
        }).onSuccess(msg::reply);
      }
      case Addresses.DESTROY -> (provider instanceof NonBlockingProvider nb
          ? nonBlocking(msg, "destroy", () -> nb.destroyAsync((DestroySandbox) msg.body()))
          : blocking(msg, "destroy", () -> provider.destroy((DestroySandbox) msg.body())))
          .onSuccess(msg::reply);
      case Addresses.HEALTH -> blocking(msg, "health", () -> {
        provider.checkHealth();
        return (Void) null;
      }).onSuccess(v -> msg.reply(null));
      case Addresses.LIST -> blocking(msg, "list",
          () -> new ai.bespokelabs.sandbox.core.bus.Messages.ResourceList(provider.list())).onSuccess(msg::reply);
      case Addresses.FILES -> {
        ai.bespokelabs.sandbox.core.bus.Messages.FileOp op = (ai.bespokelabs.sandbox.core.bus.Messages.FileOp) msg.body();
        String organization = msg.headers().get(Addresses.ORGANIZATION);
        Future.fromCompletionStage(filePool.submit(organization == null ? op.sandboxId() : organization,
                () -> files.handle(op)), context)
            .recover(t -> failed(msg, op.op(), t)).onSuccess(msg::reply);
      }
      case Addresses.ADOPT -> {
        CreateSandbox request = (CreateSandbox) msg.body();
        blocking(msg, "adopt", () -> new SandboxCreated(provider.adopt(request, msg.headers().get("resource")),
            nodeId)).onSuccess(msg::reply);
      }
      case Addresses.SNAPSHOT -> blocking(msg, "snapshot", () -> new ai.bespokelabs.sandbox.core.bus.Messages.SnapshotTaken(
          provider.snapshot((ai.bespokelabs.sandbox.core.bus.Messages.SnapshotSandbox) msg.body()))).onSuccess(msg::reply);
      case Addresses.SET_TIMEOUT -> blocking(msg, "timeout", () -> {
        provider.setTimeout((ai.bespokelabs.sandbox.core.bus.Messages.SetTimeout) msg.body());
        return (Void) null;
      }).onSuccess(v -> msg.reply(null));
      case Addresses.METRICS -> blocking(msg, "metrics",
          () -> provider.metrics((ai.bespokelabs.sandbox.core.bus.Messages.MetricsRequest) msg.body()))
          .onSuccess(msg::reply);
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

  /** Runs a non-blocking provider call on this context; failures are answered in the error contract. */
  private <T> Future<T> nonBlocking(Message<?> msg, String op, Supplier<Future<T>> work) {
    Future<T> f;
    try {
      f = work.get();
    } catch (RuntimeException e) {
      f = Future.failedFuture(e);
    }
    return f.recover(t -> failed(msg, op, t));
  }

  /** Runs a blocking provider call on a virtual thread; failures are answered in the error contract. */
  private <T> Future<T> blocking(Message<?> msg, String op, Supplier<T> work) {
    return Future.fromCompletionStage(CompletableFuture.supplyAsync(work, executor), context)
        .recover(t -> failed(msg, op, t));
  }

  private <T> Future<T> failed(Message<?> msg, String op, Throwable t) {
    Throwable cause = unwrap(t);
    if (!(cause instanceof ProviderException) && !(cause instanceof ApiException)) {
      // only the type and where it was thrown: provider exception texts may echo credentials
      LOG.warn("{} {} failed unexpectedly: {} at {}", provider.backend(), op, cause.getClass().getName(),
          origin(cause));
    }
    BusFailures.fail(msg, cause, provider.backend(), op);
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
    Future<ExecHandle> started = provider instanceof NonBlockingProvider nb
        ? nonBlocking(msg, "execute", () -> nb.startAsync(req, stream))
        : blocking(msg, "execute", () -> provider.start(req, stream));
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
      BusFailures.fail(msg, ApiException.conflict("stdin is not open for this execution"), provider.backend(), "stdin");
      return;
    }
    if (stream.result() != null) {
      BusFailures.fail(msg, ApiException.conflict("execution has finished"), provider.backend(), "stdin");
      return;
    }
    Future<Void> previous = stdinChains.getOrDefault(in.executionId(), Future.succeededFuture());
    Future<Void> next = previous.transform(ignored -> stream.handle().transform(started -> {
      if (started.failed()) {
        BusFailures.fail(msg, ApiException.conflict("execution has finished"), provider.backend(), "stdin");
        return Future.<Void>succeededFuture();
      }
      ExecHandle handle = started.result();
      return blocking(msg, "stdin", () -> {
        if (in.data() != null && in.data().length > 0) {
          handle.writeStdin(in.data());
        }
        if (in.eof()) {
          handle.closeStdin();
        }
        return (Void) null;
      }).onSuccess(v -> msg.reply(null)).mapEmpty();
    }));
    stdinChains.put(in.executionId(), next.otherwiseEmpty());
  }

  private void signal(Message<Object> msg, SignalExec s) {
    ExecStream stream = find(msg, s.executionId());
    if (stream == null) {
      return;
    }
    if (!SIGNALS.contains(s.signal())) {
      BusFailures.fail(msg, ApiException.invalid("signal must be one of TERM, KILL, INT"), provider.backend(),
          "signal");
      return;
    }
    if (stream.result() != null) {
      BusFailures.fail(msg, ApiException.conflict("execution has finished"), provider.backend(), "signal");
      return;
    }
    stream.handle().onFailure(t -> BusFailures.fail(msg, ApiException.conflict("execution has finished"),
        provider.backend(), "signal")).onSuccess(handle -> blocking(msg, "signal", () -> {
          handle.signal(s.signal());
          return (Void) null;
        }).onSuccess(v -> msg.reply(null)));
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
