package ai.bespokelabs.sandbox.supervisor;

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
import ai.bespokelabs.sandbox.core.bus.RuntimeClient;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import java.util.function.Consumer;
import java.util.function.Function;

/**
 * A runtime with adapters of one backend on one node: each destroy of a sandbox hosted there goes to
 * {@code onDestroy}, answered when the test completes its promise; anything else fails.
 */
final class FakeRuntime implements RuntimeClient {
  /** A destroy the fake was asked for, and the answer the test gives. */
  record Destroy(DestroySandbox request, Promise<SandboxDestroyed> answer) {}

  private final String backend;
  private final String nodeId;
  private final Consumer<Destroy> onDestroy;

  FakeRuntime(String backend, String nodeId, Consumer<Destroy> onDestroy) {
    this.backend = backend;
    this.nodeId = nodeId;
    this.onDestroy = onDestroy;
  }

  private static <T> Future<T> unexpected(String op) {
    return Future.failedFuture(new IllegalStateException("unexpected " + op));
  }

  @Override
  public Future<SandboxDestroyed> destroy(String backend, String nodeId, DestroySandbox request) {
    if (!this.backend.equals(backend) || !this.nodeId.equals(nodeId)) {
      return unexpected("destroy on " + backend + "/" + nodeId);
    }
    // answered on the asking context, whichever thread the test answers on, as a reply on the bus would be
    Context asking = Vertx.currentContext();
    Promise<SandboxDestroyed> answer = Promise.promise();
    Promise<SandboxDestroyed> answered = Promise.promise();
    answer.future().onComplete(ar -> asking.runOnContext(v -> answered.handle(ar)));
    onDestroy.accept(new Destroy(request, answer));
    return answered.future();
  }

  @Override
  public Future<SandboxCreated> create(CreateSandbox request) {
    return unexpected("create");
  }

  @Override
  public Future<SandboxCreated> adopt(CreateSandbox request, String providerResourceId) {
    return unexpected("adopt");
  }

  @Override
  public Future<SnapshotTaken> snapshot(String backend, String nodeId, SnapshotSandbox request) {
    return unexpected("snapshot");
  }

  @Override
  public Future<Void> setTimeout(String backend, String nodeId, SetTimeout request) {
    return unexpected("set_timeout");
  }

  @Override
  public Future<SandboxMetrics> metrics(String backend, String nodeId, MetricsRequest request) {
    return unexpected("metrics");
  }

  @Override
  public Future<FileReply> files(String backend, String nodeId, String organizationId, FileOp op) {
    return unexpected("files");
  }

  @Override
  public Future<ResourceList> list(String backend, String nodeId, ListResources request) {
    return unexpected("list");
  }

  @Override
  public Future<Void> health(String backend) {
    return unexpected("health");
  }

  @Override
  public Future<JsonObject> details(String backend) {
    return unexpected("details");
  }

  @Override
  public Runner runner(String backend, String sandboxNodeId) {
    return new Runner(backend, sandboxNodeId);
  }

  @Override
  public Future<ExecResult> exec(Runner runner, ExecSandbox request) {
    return unexpected("exec");
  }

  @Override
  public Future<ExecStarted> start(Runner runner, ExecSandbox request) {
    return unexpected("start");
  }

  @Override
  public Future<Void> attach(Runner runner, String executionId, Subscription subscription, long after) {
    return unexpected("attach");
  }

  @Override
  public void detach(Runner runner, String executionId, Subscription subscription) {
    throw new IllegalStateException("unexpected detach");
  }

  @Override
  public Future<Void> stdin(Runner runner, StdinExec request) {
    return unexpected("stdin");
  }

  @Override
  public Future<Void> signal(Runner runner, SignalExec request) {
    return unexpected("signal");
  }

  @Override
  public Subscription subscribe(boolean textOutput, Consumer<Delivery> events) {
    throw new IllegalStateException("unexpected subscribe");
  }

  @Override
  public Future<Void> receiveResults(Function<ExecFinished, Future<Void>> store) {
    return unexpected("receive results");
  }
}
