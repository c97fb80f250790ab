package ai.bespokelabs.sandbox.adapters.local;

import ai.bespokelabs.sandbox.core.bus.Messages.ExecResult;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * Runs one {@link ProcessSpec} to completion on the host: as the leader of its own process group (through
 * {@code setsid}), with exactly the spec's environment, stdin closed, both output pipes drained
 * concurrently up to the cap, and the whole group killed on timeout (exit code 124). Blocking; call it
 * off the event loop.
 */
public final class ProcessRunner {
  /** The exit code of a run killed by its timeout, as {@code timeout(1)} reports it. */
  public static final int TIMEOUT_EXIT_CODE = 124;
  /** How long output may still be collected after the program exits (background children may hold the pipes). */
  static final Duration DRAIN_GRACE = Duration.ofMillis(200);

  /*
   * Platform daemon threads, not virtual ones: a blocking pipe read pins a virtual thread's carrier, and a
   * background process holding a pipe would keep it pinned, starving the adapter's virtual threads.
   */
  private static final ExecutorService READERS =
      Executors.newCachedThreadPool(Thread.ofPlatform().daemon().name("process-output-", 0).factory());

  private final String backend;

  /** @param backend the backend named in provider errors */
  public ProcessRunner(String backend) {
    this.backend = Objects.requireNonNull(backend, "backend");
  }

  /** Observes one run. A streaming output callback would join this interface. */
  @FunctionalInterface
  public interface Listener {
    /** The program started as the leader of process group {@code pgid}; called before waiting on it. */
    void started(long pgid);
  }

  /**
   * Runs {@code spec} and returns its exit code, capped output and duration.
   *
   * @throws ApiException 422 when the working directory does not exist
   * @throws ProviderException {@code execution_failed} when the program cannot be started (outcome failed)
   *     or the waiting thread is interrupted (the group is killed; outcome unknown)
   */
  public ExecResult run(ProcessSpec spec, Listener listener) {
    Path setsid = ProcessGroups.setsid()
        .orElseThrow(() -> failure(ErrorCode.BACKEND_NOT_INSTALLED, ProviderError.Outcome.FAILED, null));
    if (!Files.isDirectory(spec.cwd())) {
      throw new ApiException(422, "cwd must be an existing directory");
    }
    if (!programExists(spec)) {
      throw failure(ErrorCode.EXECUTION_FAILED, ProviderError.Outcome.FAILED, null);
    }
    long started = System.nanoTime();
    Process process = start(setsid, spec);
    long pgid = process.pid();
    listener.started(pgid);
    try {
      process.getOutputStream().close();
    } catch (IOException ignored) {
      // the child is already gone; its exit status tells the rest
    }
    OutputCapture out = new OutputCapture(process.getInputStream(), spec.outputLimitBytes());
    OutputCapture err = new OutputCapture(process.getErrorStream(), spec.outputLimitBytes());
    Future<?> outReader = READERS.submit(out);
    Future<?> errReader = READERS.submit(err);
    boolean timedOut;
    try {
      timedOut = !process.waitFor(spec.timeoutSecs(), TimeUnit.SECONDS);
      if (timedOut) {
        ProcessGroups.kill(List.of(pgid));
      }
      awaitReaders(outReader, errReader);
    } catch (InterruptedException e) {
      ProcessGroups.kill(List.of(pgid));
      Thread.currentThread().interrupt();
      throw failure(ErrorCode.EXECUTION_FAILED, ProviderError.Outcome.UNKNOWN, e);
    }
    long durationMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
    String stdout = out.finish();
    String stderr = err.finish();
    return new ExecResult(timedOut ? TIMEOUT_EXIT_CODE : process.exitValue(), stdout, stderr,
        out.truncated(), err.truncated(), timedOut, durationMs);
  }

  private Process start(Path setsid, ProcessSpec spec) {
    List<String> argv = new ArrayList<>(spec.argv().size() + 1);
    argv.add(setsid.toString());
    argv.addAll(spec.argv());
    try {
      ProcessBuilder pb = new ProcessBuilder(argv).directory(spec.cwd().toFile());
      pb.environment().clear();
      pb.environment().putAll(spec.env());
      return pb.start();
    } catch (IOException | IllegalArgumentException e) {
      throw failure(ErrorCode.EXECUTION_FAILED, ProviderError.Outcome.FAILED, e);
    }
  }

  /** Whether argv[0] names an executable file: a path (relative to the cwd) or a name on the spec's PATH. */
  private static boolean programExists(ProcessSpec spec) {
    String program = spec.argv().isEmpty() ? "" : spec.argv().get(0);
    if (program.isEmpty()) {
      return false;
    }
    try {
      if (program.contains("/")) {
        return isExecutableFile(spec.cwd().resolve(program));
      }
      return Stream.of(spec.env().getOrDefault("PATH", "").split(":"))
          .filter(dir -> !dir.isEmpty())
          .anyMatch(dir -> isExecutableFile(spec.cwd().resolve(dir).resolve(program)));
    } catch (InvalidPathException e) {
      return false;
    }
  }

  private static boolean isExecutableFile(Path p) {
    return Files.isRegularFile(p) && Files.isExecutable(p);
  }

  /** Waits for both readers together for at most {@link #DRAIN_GRACE}; stragglers keep reading alone. */
  private static void awaitReaders(Future<?>... readers) throws InterruptedException {
    long deadline = System.nanoTime() + DRAIN_GRACE.toNanos();
    for (Future<?> reader : readers) {
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        return;
      }
      try {
        reader.get(left, TimeUnit.NANOSECONDS);
      } catch (ExecutionException | TimeoutException e) {
        // a reader that failed or is still blocked keeps what it captured so far
      }
    }
  }

  private ProviderException failure(ErrorCode code, ProviderError.Outcome outcome, Throwable cause) {
    return new ProviderException(ProviderError.of(code, backend, "execute", false, outcome), cause);
  }
}
