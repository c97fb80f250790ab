package ai.bespokelabs.sandbox.core.bus;

import ai.bespokelabs.sandbox.core.bus.Messages.AttachExec;
import ai.bespokelabs.sandbox.core.bus.Messages.CreateSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.DestroySandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.DetachExec;
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
import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;

/**
 * What one adapter serves, the other end of {@link RuntimeClient}: {@link AdapterEndpoint} binds it to the bus
 * and answers each request when its future completes. A failure should be in the error contract already
 * ({@link ai.bespokelabs.sandbox.core.error.ApiException}, {@link ai.bespokelabs.sandbox.core.error.ProviderException});
 * anything else is answered as a normalized provider error.
 */
public interface RuntimeServer {
  /** Why a request for {@code operation} is refused before it is looked at (null: it is served). */
  Throwable refusal(String operation);

  Future<SandboxCreated> create(CreateSandbox request);

  Future<SandboxCreated> adopt(CreateSandbox request, String providerResourceId);

  Future<SandboxDestroyed> destroy(DestroySandbox request);

  Future<Void> health();

  Future<JsonObject> details();

  Future<ResourceList> list(ListResources request);

  /** @param organizationId the organization the operation is for (null: unknown) */
  Future<FileReply> files(String organizationId, FileOp op);

  Future<SnapshotTaken> snapshot(SnapshotSandbox request);

  Future<Void> setTimeout(SetTimeout request);

  Future<SandboxMetrics> metrics(MetricsRequest request);

  /** Runs a program; completes with its result once it exits. */
  Future<ExecResult> exec(ExecSandbox request);

  /** Starts a program; completes once it runs (its result goes to {@link ExecSandbox#recorderAddress}). */
  Future<ExecStarted> start(ExecSandbox request);

  Future<Void> attach(AttachExec request);

  Future<Void> detach(DetachExec request);

  Future<Void> stdin(StdinExec request);

  Future<Void> signal(SignalExec request);
}
