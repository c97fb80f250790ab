package ai.bespokelabs.sandbox.adapters;

import ai.bespokelabs.sandbox.core.bus.Messages.CreateSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.DestroySandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecResult;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.SandboxDestroyed;

/**
 * The adapter SPI: one implementation per backend. Methods block (process pipes, sockets, SDK-free HTTP
 * calls made synchronously) and are only ever called off the event loop by {@link AdapterVerticle}.
 * Failures are {@link ai.bespokelabs.sandbox.core.error.ProviderException}s carrying the error contract;
 * anything else is normalized to an outcome-unknown error by the verticle.
 */
public interface SandboxProvider extends AutoCloseable {

  /** The backend name clients pass, e.g. {@code local}. */
  String backend();

  /**
   * True when a sandbox's runtime lives on the node that created it (local processes, containers on the
   * node's engine); such sandboxes are created and operated through the node's own address.
   */
  boolean nodeBound();

  /**
   * Whether this node has what creating a sandbox needs (the isolation tool, the engine's socket, the
   * credentials): false when a create would answer {@code backend_not_installed}. Cheap: no network call.
   */
  default boolean installed() {
    return true;
  }

  /** Creates the sandbox and returns the provider's id for it (its "provider resource id"). */
  String create(CreateSandbox request);

  /**
   * Starts one program inside the sandbox and returns at once; its output and end go to {@code sink}.
   * Stdin stays open only when {@code request.keepStdin()}.
   */
  ExecHandle start(ExecSandbox request, ExecSink sink);

  /** Runs one program to completion and returns its capped result (a convenience over {@link #start}). */
  default ExecResult exec(ExecSandbox request) {
    CapturingSink sink = new CapturingSink(request.outputLimitBytes());
    start(request, sink);
    return sink.await();
  }

  /** Destroys the sandbox from its provider resource id; succeeds when it is already gone. */
  SandboxDestroyed destroy(DestroySandbox request);

  /**
   * A real, cheap check that the backend can serve (local: spawn a process; cloud: an authenticated call).
   * Returns normally when healthy; throws when not. The reason never leaves the adapter.
   */
  void checkHealth();

  /**
   * The provider's resources that carry our marks, for reconciliation and orphan cleanup; node-bound
   * providers list the resources of this node.
   */
  java.util.List<ai.bespokelabs.sandbox.core.bus.Messages.Resource> list();

  /**
   * Snapshots the sandbox's file system and returns an id that {@code snapshot_id} accepts at create.
   * Backends without snapshots answer {@code feature_not_supported}.
   */
  default String snapshot(ai.bespokelabs.sandbox.core.bus.Messages.SnapshotSandbox request) {
    throw unsupported("snapshot");
  }

  /**
   * The sandbox's deadline was just set to {@code request.timeoutSecs()} from now. Backends whose provider
   * keeps its own lifetime for the sandbox move it along; the default does nothing, since the supervisor
   * enforces the gateway's deadline for every backend.
   */
  default void setTimeout(ai.bespokelabs.sandbox.core.bus.Messages.SetTimeout request) {}

  /**
   * The entries of a directory inside the sandbox ({@code op.path()}: relative to the sandbox's working
   * directory, or absolute inside the sandbox).
   *
   * @throws ai.bespokelabs.sandbox.core.error.ApiException 404 for a missing path, 422 for one that escapes
   */
  default java.util.List<ai.bespokelabs.sandbox.adapters.spi.FileEntry> listFiles(
      ai.bespokelabs.sandbox.core.bus.Messages.FileOp op) {
    throw unsupported("files");
  }

  /** Opens a file for download; 404 when missing, 422 for a directory or an escaping path. */
  default ai.bespokelabs.sandbox.adapters.files.ReadableFile openRead(ai.bespokelabs.sandbox.core.bus.Messages.FileOp op) {
    throw unsupported("files");
  }

  /** Starts an upload to {@code op.path()} (parents are created; {@code op.executable()} sets the x bits). */
  default ai.bespokelabs.sandbox.adapters.files.WritableFile openWrite(ai.bespokelabs.sandbox.core.bus.Messages.FileOp op) {
    throw unsupported("files");
  }

  /**
   * The directory at {@code op.path()} as a gzip-compressed tar of its tree (size unknown: -1). By default
   * built from {@link #listFiles} and {@link #openRead} (files and directories only).
   */
  default ai.bespokelabs.sandbox.adapters.files.ReadableFile openArchiveRead(
      ai.bespokelabs.sandbox.core.bus.Messages.FileOp op) {
    return ai.bespokelabs.sandbox.adapters.files.TreeTransfer.read(this, op);
  }

  /**
   * Receives a gzip-compressed tar to extract into the directory at {@code op.path()} at commit, once it
   * arrived whole and was checked: a broken archive (422) extracts nothing. By default each file is written
   * with {@link #openWrite} (links and empty directories are skipped).
   */
  default ai.bespokelabs.sandbox.adapters.files.WritableFile openArchiveWrite(
      ai.bespokelabs.sandbox.core.bus.Messages.FileOp op) {
    return ai.bespokelabs.sandbox.adapters.files.TreeTransfer.write(this, op);
  }

  /** Deletes a file, or a directory when empty or {@code op.recursive()}; 404 when missing. */
  default void deleteFile(ai.bespokelabs.sandbox.core.bus.Messages.FileOp op) {
    throw unsupported("files");
  }

  /**
   * A live sample of a running sandbox's resource use (cpu, memory, disk, processes); fields the backend
   * cannot tell are null. Backends without metrics answer {@code feature_not_supported}.
   */
  default ai.bespokelabs.sandbox.core.bus.Messages.SandboxMetrics metrics(
      ai.bespokelabs.sandbox.core.bus.Messages.MetricsRequest request) {
    throw unsupported("metrics");
  }

  /** The {@code feature_not_supported} answer for {@code op}. */
  default ai.bespokelabs.sandbox.core.error.ProviderException unsupported(String op) {
    return new ai.bespokelabs.sandbox.core.error.ProviderException(ai.bespokelabs.sandbox.core.error.ProviderError.of(
        ai.bespokelabs.sandbox.core.error.ErrorCode.FEATURE_NOT_SUPPORTED, backend(), op, false,
        ai.bespokelabs.sandbox.core.error.ProviderError.Outcome.FAILED));
  }

  /**
   * Attaches this node to a sandbox's still-running provider resource (after a restart, or from another
   * node) and returns its resource id; {@code request.config()} is the stored configuration (env values
   * are never stored, so they are not restored). {@code not_found} when the resource is gone.
   */
  default String adopt(CreateSandbox request, String providerResourceId) {
    throw unsupported("adopt");
  }

  @Override
  default void close() {}
}
