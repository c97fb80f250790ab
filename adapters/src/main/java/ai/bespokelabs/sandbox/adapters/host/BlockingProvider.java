package ai.bespokelabs.sandbox.adapters.host;

import ai.bespokelabs.sandbox.adapters.files.ReadableFile;
import ai.bespokelabs.sandbox.adapters.files.WritableFile;
import ai.bespokelabs.sandbox.adapters.spi.Capability;
import ai.bespokelabs.sandbox.core.model.FileEntry;
import ai.bespokelabs.sandbox.core.bus.Messages.CreateSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.DestroySandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecResult;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.FileOp;
import ai.bespokelabs.sandbox.core.bus.Messages.MetricsRequest;
import ai.bespokelabs.sandbox.core.bus.Messages.Resource;
import ai.bespokelabs.sandbox.core.bus.Messages.SandboxDestroyed;
import ai.bespokelabs.sandbox.core.bus.Messages.SandboxMetrics;
import ai.bespokelabs.sandbox.core.bus.Messages.SetTimeout;
import ai.bespokelabs.sandbox.core.bus.Messages.SnapshotSandbox;
import java.util.List;
import java.util.Set;

/**
 * A backend whose work blocks a thread: host processes, pipes and the host file system. It is served through
 * {@link BlockingBackend}, which runs every call on a named, bounded worker pool and exposes the asynchronous
 * {@link ai.bespokelabs.sandbox.adapters.spi.Backend}. Operations outside the declared {@link #capabilities()}
 * are never called. Failures are {@link ai.bespokelabs.sandbox.core.error.ProviderException}s or
 * {@link ai.bespokelabs.sandbox.core.error.ApiException}s.
 */
public interface BlockingProvider extends AutoCloseable {

  /** The backend name clients pass, e.g. {@code local}. */
  String backend();

  /** See {@link ai.bespokelabs.sandbox.adapters.spi.Backend#nodeBound()}. */
  boolean nodeBound();

  /** What it offers beyond lifecycle and executions. */
  Set<Capability> capabilities();

  /** See {@link ai.bespokelabs.sandbox.adapters.spi.Backend#placement()}. */
  default ai.bespokelabs.sandbox.adapters.spi.PlacementFacts placement() {
    return ai.bespokelabs.sandbox.adapters.spi.PlacementFacts.NONE;
  }

  /** See {@link ai.bespokelabs.sandbox.adapters.spi.Backend#unavailable()}. */
  default java.util.Optional<String> unavailable() {
    return java.util.Optional.empty();
  }

  /** Creates the sandbox and returns the provider's id for it. */
  String create(CreateSandbox request);

  /** Starts one program and returns once it runs; its output and end go to {@code sink}. */
  ExecHandle start(ExecSandbox request, ExecSink sink);

  /** Runs one program to completion and returns its capped result. */
  default ExecResult exec(ExecSandbox request) {
    CapturingSink sink = new CapturingSink(request.outputLimitBytes());
    start(request, sink);
    return sink.await();
  }

  /** Destroys the sandbox from its provider resource id; succeeds when it is already gone. */
  SandboxDestroyed destroy(DestroySandbox request);

  /** Returns normally when the backend can serve; throws when not. */
  void checkHealth();

  /** The provider's resources that carry our marks (this node's, for node-bound providers). */
  List<Resource> list();

  /** {@link Capability#SNAPSHOT}. */
  default String snapshot(SnapshotSandbox request) {
    throw new UnsupportedOperationException("snapshot");
  }

  /** {@link Capability#PROVIDER_TIMEOUT}. */
  default void setTimeout(SetTimeout request) {
    throw new UnsupportedOperationException("provider_timeout");
  }

  /** {@link Capability#ADOPT}. */
  default String adopt(CreateSandbox request, String providerResourceId) {
    throw new UnsupportedOperationException("adopt");
  }

  /** {@link Capability#METRICS}. */
  default SandboxMetrics metrics(MetricsRequest request) {
    throw new UnsupportedOperationException("metrics");
  }

  // ---- Capability.FILES -------------------------------------------------------------------------

  /** The entries of a directory; 404 missing, 422 escaping. */
  default List<FileEntry> listFiles(FileOp op) {
    throw new UnsupportedOperationException("files");
  }

  /** Opens a file for download; 404 missing, 422 for a directory or an escaping path. */
  default ReadableFile openRead(FileOp op) {
    throw new UnsupportedOperationException("files");
  }

  /** Starts an upload (parents are created; {@code op.executable()} sets the x bits). */
  default WritableFile openWrite(FileOp op) {
    throw new UnsupportedOperationException("files");
  }

  /** Deletes a file, or a directory when empty or {@code op.recursive()}; 404 when missing. */
  default void deleteFile(FileOp op) {
    throw new UnsupportedOperationException("files");
  }

  /** The directory at {@code op.path()} as a tar.gz. */
  default ReadableFile openArchiveRead(FileOp op) {
    throw new UnsupportedOperationException("archives");
  }

  /** Receives a tar.gz to extract at commit, once it arrived whole and was checked. */
  default WritableFile openArchiveWrite(FileOp op) {
    throw new UnsupportedOperationException("archives");
  }

  @Override
  default void close() {}
}
