package ai.bespokelabs.sandbox.adapters.local;

import ai.bespokelabs.sandbox.adapters.exec.Timeouts;
import ai.bespokelabs.sandbox.adapters.host.CapturingSink;
import ai.bespokelabs.sandbox.adapters.host.ExecHandle;
import ai.bespokelabs.sandbox.adapters.host.ExecSink;
import ai.bespokelabs.sandbox.adapters.spi.OutputSink.Stream;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecResult;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecSandbox;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError;
import ai.bespokelabs.sandbox.core.model.SandboxConfig;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongConsumer;

/**
 * Programs of a host backend's sandboxes: started through the wrapper, as the sandbox's uid when the gateway is
 * root, in their own process group, which is recorded (durably, {@link ProcessRecords}) and tracked by the
 * sandbox's runtime so destroy can kill it.
 */
final class LocalExecutions {
  private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(LocalExecutions.class);
  private static final java.util.concurrent.atomic.AtomicBoolean WARNED = new java.util.concurrent.atomic.AtomicBoolean();
  private final String backend;
  private final HostWrapper wrapper;
  private final HostUsers users;
  private final Workdirs workdirs;
  private final ProcessRunner runner;
  private final ProcessRecords records;
  private final ConcurrentMap<String, SandboxRuntime> runtimes;
  private final Path root;
  /** Where environments wait for the programs they belong to ({@link EnvHandOff}); private to the gateway. */
  private final Path runDir;

  LocalExecutions(String backend, HostWrapper wrapper, HostUsers users, Workdirs workdirs, ProcessRunner runner,
      ProcessRecords records, ConcurrentMap<String, SandboxRuntime> runtimes, Path root, Path runDir) {
    this.backend = backend;
    this.wrapper = wrapper;
    this.users = users;
    this.workdirs = workdirs;
    this.runner = runner;
    this.records = records;
    this.runtimes = runtimes;
    this.root = root;
    this.runDir = runDir;
  }

  /**
   * Starts the request in its sandbox. The process group stays tracked after the run while it still has
   * members (background processes), so destroy can kill it.
   *
   * @throws ApiException 409 when this node holds no runtime for the sandbox (e.g. after a restart)
   */
  ExecHandle start(ExecSandbox request, ExecSink sink) {
    SandboxRuntime runtime = runtimes.get(request.sandboxId());
    if (runtime == null) {
      throw new ApiException(409, "sandbox runtime is unavailable after a control-plane restart");
    }
    workdirs.requireUnchanged(runtime);
    ProcessSpec plain = ProcessSpec.of(runtime.dir, runtime.env, request);
    if (wrapper.runsPlainCommandsDirectly() && request.code() == null && request.command() != null
        && (request.args() == null || request.args().isEmpty())) {
      plain = PlainCommand.direct(plain, request.command(), !supervised() && wrapper.envThroughFile(users.dropping()));
    }
    if (users.dropping() && wrapper == HostWrapper.NONE && ProcessRunner.program(plain).isEmpty()) {
      // started by a shell after the drop, a missing program would only exit 127: fail as a direct start does
      throw runner.failure(ErrorCode.EXECUTION_FAILED, ProviderError.Outcome.FAILED, null);
    }
    AtomicLong group = new AtomicLong();
    ExecSink pruning = new ExecSink() {
      @Override
      public void output(Stream stream, byte[] data) throws InterruptedException {
        sink.output(stream, data);
      }

      @Override
      public void exited(int exitCode, boolean timedOut, boolean cancelled, long durationMs) {
        if (wrapper.endsWithProgram() && group.get() > 0) {
          runtime.untrack(group.get());
        } else {
          runtime.prune();
        }
        if (!timedOut && exitCode != 0 && runtime.expired()) {
          // killed because the sandbox's time ran out: a timeout, as the program's own would be
          try {
            sink.output(Stream.STDERR, Timeouts.sandboxMessage(durationMs));
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
          sink.exited(Timeouts.EXIT_CODE, true, false, durationMs);
          return;
        }
        sink.exited(exitCode, timedOut, cancelled, durationMs);
      }
    };
    return launch(runtime, plain, request.keepStdin(), pruning, pgid -> {
      group.set(pgid);
      String previous = records.record(request.sandboxId(), pgid);
      SandboxRuntime earlier = previous == null ? null : runtimes.get(previous);
      if (earlier != null) {
        earlier.untrack(pgid); // its group with this id has ended: the id is this execution's now
      }
      if (!runtime.track(pgid)) {
        ProcessGroups.kill(List.of(pgid));
      }
    });
  }

  /** Whether executions go through the sandbox's resident supervisor ({@link SupervisorBinary}). */
  private boolean supervised() {
    return wrapper == HostWrapper.NONE && LocalProvider.supervised();
  }

  /**
   * Starts {@code plain} through the sandbox's supervisor when it has one, else as {@link #launch(ProcessSpec, Path,
   * SandboxConfig, int, boolean, ExecSink, LongConsumer)} does. A supervisor that cannot be started leaves its
   * sandbox on that path, with one warning; one that ended is started again first.
   */
  private ExecHandle launch(SandboxRuntime runtime, ProcessSpec plain, boolean keepStdin, ExecSink sink,
      LongConsumer started) {
    if (supervised()) {
      java.util.Optional<Supervisor> supervisor;
      try {
        supervisor = runtime.supervisor(() -> Supervisor.start(SupervisorBinary.path().get(), users.dropTo(runtime.uid),
            runtime.dir));
      } catch (IOException | RuntimeException e) {
        if (WARNED.compareAndSet(false, true)) {
          LOG.warn("A sandbox supervisor could not be started ({}): such sandboxes start each execution on its own",
              e.toString());
        }
        supervisor = java.util.Optional.empty();
      }
      if (supervisor.isPresent()) {
        if (!Files.isDirectory(plain.cwd()) || !plain.cwd().toAbsolutePath().normalize()
            .startsWith(runtime.dir.toAbsolutePath().normalize())) {
          throw new ApiException(422, "cwd must be an existing directory");
        }
        Path program = ProcessRunner.program(plain)
            .orElseThrow(() -> runner.failure(ErrorCode.EXECUTION_FAILED, ProviderError.Outcome.FAILED, null));
        try {
          return supervisor.get().run(program, plain, keepStdin, sink, started);
        } catch (IOException e) {
          throw runner.failure(ErrorCode.EXECUTION_FAILED, ProviderError.Outcome.FAILED, e);
        }
      }
    }
    return launch(plain, runtime.dir, runtime.config, runtime.uid, keepStdin, sink, started);
  }

  /**
   * Starts {@code plain} through the wrapper as {@code uid} (when the gateway is root), its environment handed
   * over by {@link EnvHandOff} where the wrapper takes it so; a handed-over file that no program took is
   * removed.
   */
  private ExecHandle launch(ProcessSpec plain, Path dir, SandboxConfig config, int uid, boolean keepStdin,
      ExecSink sink, LongConsumer started) {
    Path envFile = wrapper.envThroughFile(users.dropping())
        ? EnvHandOff.write(runDir, wrapper.environment(plain.env(), dir), uid) : null;
    try {
      return runner.start(wrapper.wrap(plain, new HostWrapper.HostSandbox(dir, config, users.dropTo(uid), envFile)),
          keepStdin, sink, started);
    } catch (RuntimeException e) {
      if (envFile != null) {
        EnvHandOff.discard(envFile);
      }
      throw e;
    }
  }

  /** Spawns {@code true} in its own process group, as every execution does, within five seconds. */
  void checkHealth() {
    CapturingSink sink = new CapturingSink(1024);
    wrapper.check();
    users.check(backend);
    try {
      Files.createDirectories(root);
    } catch (IOException e) {
      throw new IllegalStateException("the sandboxes directory cannot be created", e);
    }
    launch(new ProcessSpec(List.of("true"), root, ProcessSpec.environment(root, Map.of(), Map.of()), 5, 1024), root,
        null, HostUsers.PROBE_UID, false, sink, pgid -> { });
    ExecResult r = sink.await();
    if (r.exitCode() != 0) {
      throw new IllegalStateException("a test process exited with " + r.exitCode());
    }
  }
}
