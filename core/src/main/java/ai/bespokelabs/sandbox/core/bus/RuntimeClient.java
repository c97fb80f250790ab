package ai.bespokelabs.sandbox.core.bus;

import ai.bespokelabs.sandbox.core.bus.Messages.AttachExec;
import ai.bespokelabs.sandbox.core.bus.Messages.CreateSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.DestroySandbox;
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
import ai.bespokelabs.sandbox.core.error.ProviderException;
import io.vertx.core.Future;
import io.vertx.core.eventbus.ReplyException;
import io.vertx.core.eventbus.ReplyFailure;
import io.vertx.core.json.JsonObject;
import java.util.function.Consumer;
import java.util.function.Function;

/**
 * The operations of the adapters ({@code AdapterVerticle} serves them), one typed method each: the only way the
 * gateway, the supervisor and the reconciler reach a backend. Operations on a sandbox name its backend and the
 * node that hosts it (as the sandbox row records it): a node-bound backend is asked on that node, any other on
 * whichever node serves it. Operations on an execution go to the node that runs it ({@link Runner}).
 *
 * <p>Every failure arrives decoded, as the error contract's {@link ai.bespokelabs.sandbox.core.error.ApiException}
 * or {@link ProviderException}; {@link #unreachable} tells when no adapter was there to answer.
 */
public interface RuntimeClient {
  /** How long a destroy may take, whoever asks for it: a provider's slowest delete, waited for in full. */
  long DESTROY_TIMEOUT_MS = 5 * 60_000L;

  /** The backend of an execution and the node that runs it. */
  record Runner(String backend, String nodeId) {}

  /** Creates a sandbox (a node-bound backend's on this node). */
  Future<SandboxCreated> create(CreateSandbox request);

  /** Attaches this node to the still-running provider resource of a sandbox (as a create would place it). */
  Future<SandboxCreated> adopt(CreateSandbox request, String providerResourceId);

  Future<SandboxDestroyed> destroy(String backend, String nodeId, DestroySandbox request);

  Future<SnapshotTaken> snapshot(String backend, String nodeId, SnapshotSandbox request);

  /** Tells the backend the sandbox's new deadline (a backend without a lifetime of its own just answers). */
  Future<Void> setTimeout(String backend, String nodeId, SetTimeout request);

  Future<SandboxMetrics> metrics(String backend, String nodeId, MetricsRequest request);

  /** One step of a file operation; the adapters share their file capacity by {@code organizationId}. */
  Future<FileReply> files(String backend, String nodeId, String organizationId, FileOp op);

  /** The backend's resources carrying our marks (a node-bound backend's on {@code nodeId}). */
  Future<ResourceList> list(String backend, String nodeId, ListResources request);

  /** The backend's own health check, asked on this node. */
  Future<Void> health(String backend);

  /** The backend's public setup facts, a JSON object (null when it has none), asked on this node. */
  Future<JsonObject> details(String backend);

  /** The node that runs the executions of a sandbox of {@code backend} hosted by {@code sandboxNodeId}. */
  Runner runner(String backend, String sandboxNodeId);

  /** Runs a program; answered with its result once it exits. */
  Future<ExecResult> exec(Runner runner, ExecSandbox request);

  /**
   * Starts a program; answered once it runs. Its result goes to this node's {@link #receiveResults receiver}
   * when it ends.
   */
  Future<ExecStarted> start(Runner runner, ExecSandbox request);

  /** Attaches {@code subscription} to a running (or recently finished) execution, from the event after {@code after}. */
  Future<Void> attach(Runner runner, String executionId, Subscription subscription, long after);

  /** Tells the runner the subscriber went away (nothing is answered). */
  void detach(Runner runner, String executionId, Subscription subscription);

  Future<Void> stdin(Runner runner, StdinExec request);

  Future<Void> signal(Runner runner, SignalExec request);

  /**
   * A new subscription for one client: {@code events} gets each event of the executions it is attached to, on the
   * caller's context; the adapter sends the next one only as earlier ones are {@link Delivery#ack acknowledged}.
   * {@code textOutput}: the client takes output as JSON text, which the adapter then encodes once for all of them.
   */
  Subscription subscribe(boolean textOutput, Consumer<Delivery> events);

  /**
   * Receives the results of the executions this node {@link #start started}, on the caller's context, and answers
   * each when {@code store} completes (the adapter tells watchers the execution ended only after that).
   */
  Future<Void> receiveResults(Function<ExecFinished, Future<Void>> store);

  /** One client's subscription to executions. */
  interface Subscription {
    /** Where the adapter sends the events ({@link ExecSandbox#subscriberAddress}); opaque to the caller. */
    String address();

    /** Completes once the subscription is registered (cluster-wide), before an adapter may send to it. */
    Future<Void> ready();

    /** Stops receiving. */
    Future<Void> close();
  }

  /** One event delivered to a subscription; its credit goes back with {@link #ack}. */
  interface Delivery {
    StreamEvent event();

    /** The client took the event: the adapter may send the next one. */
    void ack();

    /** The subscriber is gone: the adapter learns at once instead of waiting for an answer. */
    void refuse();
  }

  /** Whether {@code failure} (from this client) means no adapter was there to answer (its node went away). */
  static boolean unreachable(Throwable failure) {
    return failure instanceof ProviderException && failure.getCause() instanceof ReplyException re
        && re.failureType() == ReplyFailure.NO_HANDLERS;
  }
}
