package ai.bespokelabs.sandbox.core.bus;

import ai.bespokelabs.sandbox.core.Ids;
import ai.bespokelabs.sandbox.core.bus.Messages.AttachExec;
import ai.bespokelabs.sandbox.core.bus.Messages.CreateSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.DestroySandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.DetachExec;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecFinished;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecResult;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecStarted;
import ai.bespokelabs.sandbox.core.bus.Messages.FileOp;
import ai.bespokelabs.sandbox.core.bus.Messages.FileReply;
import ai.bespokelabs.sandbox.core.bus.Messages.ListResources;
import ai.bespokelabs.sandbox.core.bus.Messages.MetricsRequest;
import ai.bespokelabs.sandbox.core.bus.Messages.ResourceList;
import ai.bespokelabs.sandbox.core.bus.Messages.SandboxCreated;
import ai.bespokelabs.sandbox.core.bus.Messages.SandboxDestroyed;
import ai.bespokelabs.sandbox.core.bus.Messages.SandboxMetrics;
import ai.bespokelabs.sandbox.core.bus.Messages.SetTimeout;
import ai.bespokelabs.sandbox.core.bus.Messages.SignalExec;
import ai.bespokelabs.sandbox.core.bus.Messages.SnapshotSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.SnapshotTaken;
import ai.bespokelabs.sandbox.core.bus.Messages.StdinExec;
import ai.bespokelabs.sandbox.core.bus.Messages.StreamEvent;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.core.eventbus.Message;
import io.vertx.core.eventbus.MessageConsumer;
import io.vertx.core.eventbus.ReplyException;
import io.vertx.core.eventbus.ReplyFailure;
import io.vertx.core.json.JsonObject;
import java.util.Objects;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.Predicate;

/**
 * The {@link RuntimeClient} over the event bus: the one sender that knows the adapters' addresses, which node
 * serves which request, how long each may take, its headers and how its failures come back. {@link AdapterEndpoint}
 * is the other end.
 */
public final class BusRuntimeClient implements RuntimeClient {
  static final long CREATE_TIMEOUT_MS = 15 * 60_000L;
  static final long SET_TIMEOUT_MS = 2 * 60_000L;
  static final long FILES_TIMEOUT_MS = 120_000;
  static final long METRICS_TIMEOUT_MS = 60_000;
  static final long CHECK_TIMEOUT_MS = 30_000;
  static final long LIST_TIMEOUT_MS = 60_000;
  static final long CONTROL_TIMEOUT_MS = 30_000L;
  /** How long past its own timeout a program's result may take to come back. */
  static final long EXEC_GRACE_MS = 30_000L;

  private final Vertx vertx;
  private final String nodeId;
  private final Predicate<String> nodeBound;

  /**
   * @param nodeId this node
   * @param nodeBound whether a backend's sandboxes live on one node (they are served there only)
   */
  public BusRuntimeClient(Vertx vertx, String nodeId, Predicate<String> nodeBound) {
    this.vertx = Objects.requireNonNull(vertx, "vertx");
    this.nodeId = Objects.requireNonNull(nodeId, "nodeId");
    this.nodeBound = Objects.requireNonNull(nodeBound, "nodeBound");
  }

  /** Where operations on a sandbox hosted by {@code hostNode} go: that node for node-bound backends. */
  private String sandboxAddress(String backend, String hostNode) {
    return nodeBound.test(backend) ? Addresses.adapter(backend, hostNode == null ? nodeId : hostNode)
        : Addresses.adapter(backend);
  }

  private static String runnerAddress(Runner runner) {
    return Addresses.adapter(runner.backend(), runner.nodeId());
  }

  private static DeliveryOptions action(String action, long timeoutMs) {
    return new DeliveryOptions().addHeader(Addresses.ACTION, action).setSendTimeout(timeoutMs);
  }

  /** Sends one request and answers with the reply's body, or the failure decoded for {@code backend}/{@code op}. */
  private <T> Future<T> request(String address, Object body, DeliveryOptions options, String backend, String op) {
    return vertx.eventBus().<T>request(address, body, options).transform(ar -> ar.succeeded()
        ? Future.succeededFuture(ar.result().body()) : Future.failedFuture(decode(ar.cause(), backend, op)));
  }

  /** {@link BusFailures#decode}, keeping a missing handler as the cause so {@link #unreachable} can tell it. */
  static RuntimeException decode(Throwable t, String backend, String op) {
    if (t instanceof ReplyException re && !(t instanceof BusFailures.Failed)
        && re.failureType() == ReplyFailure.NO_HANDLERS) {
      return new ProviderException(ProviderError.of(ErrorCode.CONNECTION, backend, op, true,
          ProviderError.Outcome.FAILED), re);
    }
    return BusFailures.decode(t, backend, op);
  }

  @Override
  public Future<SandboxCreated> create(CreateSandbox request) {
    return request(sandboxAddress(request.backend(), nodeId), request, action(Addresses.CREATE, CREATE_TIMEOUT_MS),
        request.backend(), "create");
  }

  @Override
  public Future<SandboxCreated> adopt(CreateSandbox request, String providerResourceId) {
    return request(sandboxAddress(request.backend(), nodeId), request,
        action(Addresses.ADOPT, CREATE_TIMEOUT_MS).addHeader(Addresses.RESOURCE, providerResourceId),
        request.backend(), "adopt");
  }

  @Override
  public Future<SandboxDestroyed> destroy(String backend, String nodeId, DestroySandbox request) {
    return request(sandboxAddress(backend, nodeId), request, action(Addresses.DESTROY, DESTROY_TIMEOUT_MS), backend,
        "destroy");
  }

  @Override
  public Future<SnapshotTaken> snapshot(String backend, String nodeId, SnapshotSandbox request) {
    return request(sandboxAddress(backend, nodeId), request, action(Addresses.SNAPSHOT, CREATE_TIMEOUT_MS), backend,
        "snapshot");
  }

  @Override
  public Future<Void> setTimeout(String backend, String nodeId, SetTimeout request) {
    return this.<Object>request(sandboxAddress(backend, nodeId), request, action(Addresses.SET_TIMEOUT, SET_TIMEOUT_MS),
        backend, "timeout").mapEmpty();
  }

  @Override
  public Future<SandboxMetrics> metrics(String backend, String nodeId, MetricsRequest request) {
    return request(sandboxAddress(backend, nodeId), request, action(Addresses.METRICS, METRICS_TIMEOUT_MS), backend,
        "metrics");
  }

  @Override
  public Future<FileReply> files(String backend, String nodeId, String organizationId, FileOp op) {
    return request(sandboxAddress(backend, nodeId), op,
        action(Addresses.FILES, FILES_TIMEOUT_MS).addHeader(Addresses.ORGANIZATION, organizationId), backend, "files");
  }

  @Override
  public Future<ResourceList> list(String backend, String nodeId, ListResources request) {
    return request(sandboxAddress(backend, nodeId), request,
        action(Addresses.LIST, LIST_TIMEOUT_MS), backend, "list");
  }

  @Override
  public Future<Void> health(String backend) {
    return this.<Object>request(Addresses.adapter(backend, nodeId), null, action(Addresses.HEALTH, CHECK_TIMEOUT_MS),
        backend, "health").mapEmpty();
  }

  @Override
  public Future<JsonObject> details(String backend) {
    return request(Addresses.adapter(backend, nodeId), null, action(Addresses.DETAILS, CHECK_TIMEOUT_MS), backend,
        "details");
  }

  @Override
  public Runner runner(String backend, String sandboxNodeId) {
    // every node runs every adapter: an execution of a backend that is not node-bound runs here
    return new Runner(backend, nodeBound.test(backend) ? sandboxNodeId : nodeId);
  }

  @Override
  public Future<ExecResult> exec(Runner runner, ExecSandbox request) {
    return request(runnerAddress(runner), request,
        action(Addresses.EXEC, request.timeoutSecs() * 1000L + EXEC_GRACE_MS), runner.backend(), "execute");
  }

  @Override
  public Future<ExecStarted> start(Runner runner, ExecSandbox r) {
    ExecSandbox recorded = new ExecSandbox(r.sandboxId(), r.executionId(), r.providerResourceId(), r.code(),
        r.language(), r.command(), r.args(), r.env(), r.cwd(), r.timeoutSecs(), r.outputLimitBytes(), r.keepStdin(),
        Addresses.recorder(nodeId), r.subscriberAddress());
    return request(runnerAddress(runner), recorded, action(Addresses.START, CONTROL_TIMEOUT_MS), runner.backend(),
        "execute");
  }

  @Override
  public Future<Void> attach(Runner runner, String executionId, Subscription subscription, long after) {
    return this.<Object>request(runnerAddress(runner), new AttachExec(executionId, subscription.address(), after),
        action(Addresses.ATTACH, CONTROL_TIMEOUT_MS), runner.backend(), "attach").mapEmpty();
  }

  @Override
  public void detach(Runner runner, String executionId, Subscription subscription) {
    vertx.eventBus().send(runnerAddress(runner), new DetachExec(executionId, subscription.address()),
        new DeliveryOptions().addHeader(Addresses.ACTION, Addresses.DETACH));
  }

  @Override
  public Future<Void> stdin(Runner runner, StdinExec request) {
    return this.<Object>request(runnerAddress(runner), request, action(Addresses.STDIN, CONTROL_TIMEOUT_MS),
        runner.backend(), "stdin").mapEmpty();
  }

  @Override
  public Future<Void> signal(Runner runner, SignalExec request) {
    return this.<Object>request(runnerAddress(runner), request, action(Addresses.SIGNAL, CONTROL_TIMEOUT_MS),
        runner.backend(), "signal").mapEmpty();
  }

  @Override
  public Subscription subscribe(boolean textOutput, Consumer<Delivery> events) {
    String address = Addresses.subscriber(textOutput, Ids.newId("sub"));
    MessageConsumer<StreamEvent> consumer = vertx.eventBus().consumer(address,
        msg -> events.accept(new BusDelivery(msg)));
    return new Subscription() {
      @Override
      public String address() {
        return address;
      }

      @Override
      public Future<Void> ready() {
        return consumer.completion();
      }

      @Override
      public Future<Void> close() {
        return consumer.unregister();
      }
    };
  }

  @Override
  public Future<Void> receiveResults(Function<ExecFinished, Future<Void>> store) {
    return vertx.eventBus().<ExecFinished>consumer(Addresses.recorder(nodeId), msg -> {
      Future<Void> stored;
      try {
        stored = store.apply(msg.body());
      } catch (RuntimeException e) {
        stored = Future.failedFuture(e);
      }
      stored.onSuccess(v -> msg.reply(null))
          .onFailure(e -> BusFailures.fail(msg, new ApiException(500, "the result could not be stored")));
    }).completion();
  }

  /** An event on the bus: its reply is the adapter's credit for the next one. */
  private record BusDelivery(Message<StreamEvent> msg) implements Delivery {
    @Override
    public StreamEvent event() {
      return msg.body();
    }

    @Override
    public void ack() {
      msg.reply(null);
    }

    @Override
    public void refuse() {
      BusFailures.fail(msg, new ApiException(410, "subscriber is gone"));
    }
  }
}
