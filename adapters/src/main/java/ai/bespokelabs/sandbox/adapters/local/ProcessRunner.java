package ai.bespokelabs.sandbox.adapters.local;

import ai.bespokelabs.sandbox.adapters.host.ExecHandle;
import ai.bespokelabs.sandbox.adapters.host.ExecSink;
import ai.bespokelabs.sandbox.adapters.exec.Timeouts;
import ai.bespokelabs.sandbox.adapters.exec.Utf8;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.function.LongConsumer;
import java.util.stream.Stream;

/**
 * Runs one {@link ProcessSpec} on the host as the leader of its own process group (a new session, see
 * {@link SessionSpawner}), with exactly the spec's environment, streaming both output pipes to an
 * {@link ExecSink} and killing the whole group on timeout (exit code 124, and a last stderr line saying so).
 * Nothing blocks the caller: the program is watched by pool threads.
 */
public final class ProcessRunner {
  /**
   * After the program exits, a pipe that stays open without delivering anything for this long is held by a
   * background child; the run ends without waiting for it.
   */
  static final Duration DRAIN_GRACE = Duration.ofMillis(200);
  static final int CHUNK = 256 * 1024;
  static final int FIRST_READ = 16 * 1024;

  /*
   * Platform daemon threads, not virtual ones: a blocking pipe read pins a virtual thread's carrier, and a
   * background process holding a pipe would keep it pinned.
   */
  private static final ExecutorService THREADS =
      Executors.newCachedThreadPool(Thread.ofPlatform().daemon().name("process-", 0).factory());

  /*
   * Programs that the kernel kills when their parent ends (bwrap --die-with-parent) are started from these
   * threads, which never end: for the kernel the parent is the thread that started the process, and a virtual
   * thread's carrier or an idle pool thread may end while the program still runs. Tasks are submitted, so a
   * failed start cannot end a thread either.
   */
  private static final ExecutorService STARTERS =
      Executors.newFixedThreadPool(2, Thread.ofPlatform().daemon().name("process-starter-", 0).factory());

  /**
   * Ends programs that outlive their timeout, for programs whose end is reported by their reaper. A deadline
   * cancelled by the program's end leaves the queue at once: it holds the run (and its sink's output) until then.
   */
  private static final java.util.concurrent.ScheduledThreadPoolExecutor DEADLINES = deadlines();

  /** Deadlines waiting (programs still running under one), for tests. */
  static int pendingDeadlines() {
    return DEADLINES.getQueue().size();
  }

  private static java.util.concurrent.ScheduledThreadPoolExecutor deadlines() {
    var timer = new java.util.concurrent.ScheduledThreadPoolExecutor(1,
        Thread.ofPlatform().daemon().name("process-deadline").factory());
    timer.setRemoveOnCancelPolicy(true);
    return timer;
  }

  private final String backend;
  private final boolean startOnLastingThreads;
  private final Optional<SessionSpawner> spawner;

  /** @param backend the backend named in provider errors */
  public ProcessRunner(String backend) {
    this(backend, false);
  }

  /**
   * @param backend the backend named in provider errors
   * @param startOnLastingThreads start programs from threads that never end (see {@link HostWrapper#diesWithStartingThread})
   */
  public ProcessRunner(String backend, boolean startOnLastingThreads) {
    this(backend, startOnLastingThreads, SessionSpawner.available());
  }

  /** @param spawner the native session spawner, or empty to start every program through {@code setsid} */
  ProcessRunner(String backend, boolean startOnLastingThreads, Optional<SessionSpawner> spawner) {
    this.backend = Objects.requireNonNull(backend, "backend");
    this.startOnLastingThreads = startOnLastingThreads;
    this.spawner = spawner;
  }

  /**
   * Starts {@code spec}; {@code started} receives the process group id before any output is read.
   *
   * @throws ApiException 422 when the working directory does not exist
   * @throws ProviderException {@code execution_failed} when the program cannot be started
   */
  public ExecHandle start(ProcessSpec spec, boolean keepStdin, ExecSink sink, LongConsumer started) {
    Path setsid = spawner.isPresent() ? null : ProcessGroups.setsid()
        .orElseThrow(() -> new ProviderException(ProviderError.unavailable(backend, "execute",
            "setsid is not installed on this host (Debian/Ubuntu: apt-get install util-linux)")));
    if (!Files.isDirectory(spec.cwd())) {
      throw new ApiException(422, "cwd must be an existing directory");
    }
    Path program = program(spec)
        .orElseThrow(() -> failure(ErrorCode.EXECUTION_FAILED, ProviderError.Outcome.FAILED, null));
    long t0 = System.nanoTime();
    Process process = launch(setsid, program, spec);
    if (setsid != null) {
      awaitOwnGroup(process);
    }
    Run run = new Run(process, keepStdin, sink, t0);
    started.accept(run.pgid);
    if (!keepStdin) {
      run.closeStdin();
    }
    Object progress = new Object();
    Reader out = new Reader(process.getInputStream(), ai.bespokelabs.sandbox.adapters.spi.OutputSink.Stream.STDOUT, sink, progress);
    Reader err = new Reader(process.getErrorStream(), ai.bespokelabs.sandbox.adapters.spi.OutputSink.Stream.STDERR, sink, progress);
    THREADS.execute(out);
    THREADS.execute(err);
    if (spawner.isPresent()) {
      run.finishOnExit(spec.timeoutSecs(), progress, out, err);
    } else {
      THREADS.execute(() -> run.watch(spec.timeoutSecs(), progress, out, err));
    }
    return run;
  }

  /** One running program: its stdin, its group, and the thread that waits for its end. */
  private final class Run implements ExecHandle {
    final Process process;
    final long pgid;
    final ExecSink sink;
    final long t0;
    private final OutputStream stdin;
    private boolean stdinClosed;
    private volatile boolean signalled;

    Run(Process process, boolean keepStdin, ExecSink sink, long t0) {
      this.process = process;
      this.pgid = process.pid();
      this.sink = sink;
      this.t0 = t0;
      this.stdin = process.getOutputStream();
      this.stdinClosed = false;
    }

    /**
     * Set once, under {@link #ending}: the program ended, or its deadline passed first. Not this run's own
     * monitor, which a stdin write blocked on a full pipe may hold.
     */
    private final Object ending = new Object();
    private boolean exited;
    private boolean deadlinePassed;

    /**
     * The end of a natively spawned program is reported by the thread that reaped it (one thread less to wake
     * per execution); the deadline is a timer that kills the group, whose end is then reported the same way.
     * Should the program have ended already, a pool thread reports it, never the thread calling start(): a
     * sink may wait in {@code exited} for start() to have returned.
     */
    void finishOnExit(int timeoutSecs, Object progress, Reader out, Reader err) {
      java.util.concurrent.ScheduledFuture<?> deadline = DEADLINES.schedule(() -> {
        synchronized (ending) {
          if (exited) {
            return;
          }
          deadlinePassed = true;
        }
        ProcessGroups.kill(spawner, List.of(pgid));
      }, timeoutSecs, TimeUnit.SECONDS);
      Runnable end = () -> {
        deadline.cancel(false);
        boolean timedOut;
        synchronized (ending) {
          exited = true;
          timedOut = deadlinePassed;
        }
        report(timedOut, timeoutSecs, progress, out, err);
      };
      Thread starting = Thread.currentThread();
      process.onExit().whenComplete((p, e) -> {
        if (Thread.currentThread() == starting) {
          THREADS.execute(end); // it had ended already: the sink may wait for start() to return
        } else {
          end.run();
        }
      });
    }

    /** Waits for the output to be read and reports the end. */
    private void report(boolean timedOut, int timeoutSecs, Object progress, Reader out, Reader err) {
      try {
        drain(progress, out, err);
        if (timedOut) {
          sink.output(ai.bespokelabs.sandbox.adapters.spi.OutputSink.Stream.STDERR, Timeouts.message(timeoutSecs));
        }
      } catch (InterruptedException e) {
        ProcessGroups.kill(spawner, List.of(pgid));
        Thread.currentThread().interrupt();
      }
      closeStdin();
      long durationMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
      int code = timedOut ? Timeouts.EXIT_CODE : process.exitValue();
      sink.exited(code, timedOut, signalled && !timedOut && code != 0, durationMs);
    }

    /** Waits for the program's end on a pool thread (programs started through {@code setsid}). */
    void watch(int timeoutSecs, Object progress, Reader out, Reader err) {
      boolean timedOut = false;
      try {
        timedOut = !process.waitFor(timeoutSecs, TimeUnit.SECONDS);
        if (timedOut) {
          ProcessGroups.kill(spawner, List.of(pgid));
          process.waitFor();
        }
      } catch (InterruptedException e) {
        ProcessGroups.kill(spawner, List.of(pgid));
        Thread.currentThread().interrupt();
      }
      report(timedOut, timeoutSecs, progress, out, err);
    }

    /**
     * Waits until both readers reached end of file, except a reader idle in {@code read} for the drain grace
     * (a background child holds its pipe). A reader blocked in the sink is delivering and is always awaited.
     */
    private void drain(Object progress, Reader... readers) throws InterruptedException {
      long exitedAt = System.nanoTime();
      synchronized (progress) {
        while (true) {
          boolean waiting = false;
          long wait = DRAIN_GRACE.toNanos();
          for (Reader r : readers) {
            long idleSince = Math.max(exitedAt, r.lastProgress);
            long left = DRAIN_GRACE.toNanos() - (System.nanoTime() - idleSince);
            if (!r.done && (r.inSink || left > 0)) {
              waiting = true;
              wait = Math.min(wait, r.inSink ? DRAIN_GRACE.toNanos() : left);
            }
          }
          if (!waiting) {
            for (Reader r : readers) {
              r.abandoned = true;
            }
            return;
          }
          // readers signal every chunk and their end, so the common case returns at once
          TimeUnit.NANOSECONDS.timedWait(progress, Math.max(1, wait));
        }
      }
    }

    @Override
    public synchronized void writeStdin(byte[] data) {
      if (stdinClosed) {
        throw ApiException.conflict("stdin is closed");
      }
      try {
        stdin.write(data);
        stdin.flush();
      } catch (IOException e) {
        closeStdin();
        throw ApiException.conflict("stdin is closed");
      }
    }

    @Override
    public synchronized void closeStdin() {
      if (!stdinClosed) {
        stdinClosed = true;
        try {
          stdin.close();
        } catch (IOException ignored) {
          // the program is gone; nothing to close
        }
      }
    }

    @Override
    public void signal(String signal) {
      signalled = true;
      ProcessGroups.signal(spawner, pgid, signal);
    }
  }

  /** Reads one pipe to its end in chunks that end on UTF-8 boundaries, handing each to the sink. */
  private static final class Reader implements Runnable {
    final InputStream in;
    final ai.bespokelabs.sandbox.adapters.spi.OutputSink.Stream stream;
    final ExecSink sink;
    volatile boolean done;
    volatile boolean inSink;
    volatile boolean abandoned;
    volatile long lastProgress = System.nanoTime();

    final Object progress;

    Reader(InputStream in, ai.bespokelabs.sandbox.adapters.spi.OutputSink.Stream stream, ExecSink sink, Object progress) {
      this.in = in;
      this.stream = stream;
      this.sink = sink;
      this.progress = progress;
    }

    private void signal() {
      synchronized (progress) {
        progress.notifyAll();
      }
    }

    @Override
    public void run() {
      // small at first (most programs print little); grows when output arrives in bursts
      byte[] buf = new byte[FIRST_READ + 4];
      int carried = 0;
      try (in) {
        int n;
        while ((n = in.read(buf, carried, buf.length - 4 - carried)) >= 0) {
          lastProgress = System.nanoTime();
          int len = carried + n;
          // a burst already waiting in the pipe joins this chunk: fewer, larger events at full speed
          int waiting;
          while (len < CHUNK && (waiting = in.available()) > 0) {
            if (len + waiting > buf.length - 4 && buf.length - 4 < CHUNK) {
              buf = Arrays.copyOf(buf, Math.min(CHUNK, Math.max(2 * (buf.length - 4), len + waiting)) + 4);
            }
            int m = in.read(buf, len, Math.min(waiting, buf.length - 4 - len));
            if (m <= 0) {
              break;
            }
            len += m;
          }
          int cut = Utf8.completePrefix(buf, len);
          deliver(Arrays.copyOf(buf, cut));
          carried = len - cut;
          System.arraycopy(buf, cut, buf, 0, carried);
        }
        if (carried > 0) {
          deliver(Arrays.copyOf(buf, carried));
        }
      } catch (IOException ignored) {
        // the pipe was closed under us: what was read so far is the output
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      } finally {
        done = true;
        signal();
      }
    }

    private void deliver(byte[] chunk) throws InterruptedException {
      if (chunk.length == 0 || abandoned) {
        return;
      }
      inSink = true;
      try {
        sink.output(stream, chunk);
      } finally {
        inSink = false;
        lastProgress = System.nanoTime();
        signal();
      }
    }
  }

  /** Starts the program as the leader of a new session: natively when possible, else through {@code setsid}. */
  private Process launch(Path setsid, Path program, ProcessSpec spec) {
    Callable<Process> start;
    Path handOff = spec.handOff();
    if (spawner.isPresent()) {
      SessionSpawner direct = spawner.get();
      start = () -> {
        try {
          return direct.start(program, spec.argv(), spec.cwd(), spec.env(), handOff);
        } finally {
          if (handOff != null) {
            EnvHandOff.discard(handOff); // open in the child by now, or never to be
          }
        }
      };
    } else {
      List<String> argv = new ArrayList<>(spec.argv().size() + 6);
      argv.add(setsid.toString());
      if (handOff != null) {
        argv.addAll(EnvHandOff.open(handOff)); // a shell opens it as descriptor 3 and removes its name
      }
      argv.addAll(spec.argv());
      ProcessBuilder pb = new ProcessBuilder(argv).directory(spec.cwd().toFile());
      pb.environment().clear();
      pb.environment().putAll(spec.env());
      start = pb::start;
    }
    try {
      return startOnLastingThreads ? STARTERS.submit(start).get() : start.call();
    } catch (ExecutionException e) {
      throw failure(ErrorCode.EXECUTION_FAILED, ProviderError.Outcome.FAILED, e.getCause());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw failure(ErrorCode.EXECUTION_FAILED, ProviderError.Outcome.FAILED, e);
    } catch (Exception e) { // IOException, IllegalArgumentException: the program could not be started
      throw failure(ErrorCode.EXECUTION_FAILED, ProviderError.Outcome.FAILED, e);
    }
  }

  /**
   * The executable file argv[0] names, as {@code execvp} in the program's cwd would find it: a path (relative
   * to the cwd), or the first match of a name on the spec's PATH.
   */
  /**
   * Waits until a program started through {@code setsid} leads its own process group: until then its group
   * does not exist, and a signal or kill sent to it right after start would be lost.
   */
  static void awaitOwnGroup(Process process) {
    Path stat = Path.of("/proc", Long.toString(process.pid()), "stat");
    long deadline = System.nanoTime() + 5_000_000_000L;
    while (process.isAlive() && System.nanoTime() < deadline) {
      try {
        String line = Files.readString(stat);
        String[] fields = line.substring(line.lastIndexOf(')') + 2).split(" ");
        if (Long.parseLong(fields[2]) == process.pid()) { // state ppid pgrp …
          return;
        }
      } catch (IOException | RuntimeException e) {
        return; // no /proc (the program's group cannot be checked), or it has ended
      }
      Thread.onSpinWait();
      java.util.concurrent.locks.LockSupport.parkNanos(50_000);
    }
  }

  static Optional<Path> program(ProcessSpec spec) {
    String program = spec.argv().isEmpty() ? "" : spec.argv().get(0);
    if (program.isEmpty()) {
      return Optional.empty();
    }
    try {
      if (program.contains("/")) {
        Path p = spec.cwd().resolve(program).toAbsolutePath();
        return isExecutableFile(p) ? Optional.of(p) : Optional.empty();
      }
      return Stream.of(spec.env().getOrDefault("PATH", "").split(":"))
          .filter(dir -> !dir.isEmpty())
          .map(dir -> spec.cwd().resolve(dir).resolve(program).toAbsolutePath())
          .filter(ProcessRunner::isExecutableFile)
          .findFirst();
    } catch (InvalidPathException e) {
      return Optional.empty();
    }
  }

  private static boolean isExecutableFile(Path p) {
    return Files.isRegularFile(p) && Files.isExecutable(p);
  }

  ProviderException failure(ErrorCode code, ProviderError.Outcome outcome, Throwable cause) {
    return new ProviderException(ProviderError.of(code, backend, "execute", false, outcome), cause);
  }
}
