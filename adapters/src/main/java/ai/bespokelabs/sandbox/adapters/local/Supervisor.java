package ai.bespokelabs.sandbox.adapters.local;

import ai.bespokelabs.sandbox.adapters.exec.Timeouts;
import ai.bespokelabs.sandbox.adapters.exec.Utf8;
import ai.bespokelabs.sandbox.adapters.host.ExecHandle;
import ai.bespokelabs.sandbox.adapters.host.ExecSink;
import ai.bespokelabs.sandbox.adapters.spi.OutputSink.Stream;
import ai.bespokelabs.sandbox.core.error.ApiException;
import java.io.BufferedOutputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.LongConsumer;

/**
 * One sandbox's resident supervisor ({@link SupervisorBinary}): a process started once in the sandbox's identity
 * (through the same {@code setpriv} drop as every program) that runs each execution on request and streams its
 * output back in frames over its stdin and stdout, pipes that only the gateway holds.
 *
 * <p>One platform thread per supervisor reads its frames and hands output to the executions' sinks; a sink that
 * blocks (its journal is full) stops the reading, so the supervisor blocks on its full pipe and its programs on
 * theirs. A supervisor that ends (killed by the sandbox's own code, for instance) ends its running executions as
 * failed, saying so on stderr, and kills their groups; {@link #alive()} turns false and the next execution starts
 * a new one.
 */
final class Supervisor implements AutoCloseable {
  static final int REQ_START = 1;
  static final int REQ_STDIN = 2;
  static final int REQ_CLOSE_STDIN = 3;
  static final int REQ_SIGNAL = 4;
  static final int EV_READY = 1;
  static final int EV_STARTED = 2;
  static final int EV_FAILED = 3;
  static final int EV_STDOUT = 4;
  static final int EV_STDERR = 5;
  static final int EV_EXIT = 6;
  /** The exit code of an execution whose supervisor ended under it. */
  static final int LOST_EXIT_CODE = 137;
  static final String LOST_MESSAGE = "execution failed: the sandbox's supervisor ended while the program ran"
      + " (killed or crashed); the next execution starts a new one\n";
  private static final Map<String, Integer> SIGNALS = Map.of("TERM", 15, "KILL", 9, "INT", 2);
  private static final long START_TIMEOUT_MS = 10_000;

  /* Programs whose parent-death signal is set are started from a thread that never ends (see ProcessRunner). */
  private static final ExecutorService STARTER =
      Executors.newSingleThreadExecutor(Thread.ofPlatform().daemon().name("supervisor-starter").factory());

  private final Process process;
  private final DataOutputStream out;
  private final Map<Integer, Exec> execs = new ConcurrentHashMap<>();
  private final AtomicInteger ids = new AtomicInteger();
  private final CompletableFuture<Void> ready = new CompletableFuture<>();
  private volatile boolean alive = true;
  /** Set by {@link #close}: its executions end as killed programs do, not as lost ones. */
  private volatile boolean closing;

  private final Path dir;

  private Supervisor(Process process, Path dir) {
    this.process = process;
    this.dir = dir.toAbsolutePath().normalize();
    this.out = new DataOutputStream(new BufferedOutputStream(process.getOutputStream(), 64 * 1024));
    Thread.ofPlatform().daemon().name("supervisor-" + process.pid()).start(this::read);
  }

  /**
   * Starts a supervisor in the sandbox directory {@code dir} (entered before the drop) as {@code dropTo} says (the
   * {@code setpriv} prefix; empty when the gateway is not root).
   *
   * @throws IOException when it cannot be started or does not answer
   */
  static Supervisor start(Path binary, List<String> dropTo, Path dir) throws IOException {
    List<String> argv = new ArrayList<>(dropTo);
    argv.add(binary.toString());
    argv.add(Long.toString(ProcessHandle.current().pid()));
    ProcessBuilder pb = new ProcessBuilder(argv).redirectError(ProcessBuilder.Redirect.DISCARD)
        .directory(dir.toFile());
    pb.environment().clear();
    pb.environment().put("PATH", ProcessSpec.BASE_PATH);
    Process process;
    try {
      process = STARTER.submit(pb::start).get();
    } catch (ExecutionException e) {
      throw e.getCause() instanceof IOException io ? io : new IOException(e.getCause());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException("interrupted while starting the supervisor", e);
    }
    Supervisor s = new Supervisor(process, dir);
    try {
      s.ready.get(START_TIMEOUT_MS, TimeUnit.MILLISECONDS);
    } catch (ExecutionException | TimeoutException e) {
      s.close();
      throw new IOException("the supervisor did not start", e);
    } catch (InterruptedException e) {
      s.close();
      Thread.currentThread().interrupt();
      throw new IOException("interrupted while starting the supervisor", e);
    }
    return s;
  }

  /** Whether it still runs; a dead one is replaced by the next execution. */
  boolean alive() {
    return alive && process.isAlive();
  }

  /** The supervisor's pid (also its process group). */
  long pid() {
    return process.pid();
  }

  /**
   * Runs {@code program} with {@code spec}'s argv, working directory (inside the sandbox directory), environment and
   * timeout; {@code started}
   * receives the process group before any output is delivered.
   *
   * @throws IOException when the supervisor is gone or did not start the program; {@code errno} in the message
   */
  ExecHandle run(Path program, ProcessSpec spec, boolean keepStdin, ExecSink sink, LongConsumer started)
      throws IOException {
    int id = ids.incrementAndGet();
    Exec exec = new Exec(id, sink, spec.timeoutSecs(), started);
    execs.put(id, exec);
    try {
      send(REQ_START, id, startPayload(program, spec, keepStdin, dir));
      exec.started.get(START_TIMEOUT_MS, TimeUnit.MILLISECONDS);
    } catch (ExecutionException | TimeoutException | IOException e) {
      execs.remove(id);
      Throwable cause = e instanceof ExecutionException ? e.getCause() : e;
      throw cause instanceof IOException io ? io : new IOException(cause);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException("interrupted while starting", e);
    }
    return exec;
  }

  private static byte[] startPayload(Path program, ProcessSpec spec, boolean keepStdin, Path dir)
      throws IOException {
    ByteArrayOutputStream b = new ByteArrayOutputStream();
    DataOutputStream d = new DataOutputStream(b);
    d.writeByte(keepStdin ? 1 : 0);
    d.writeInt(Math.max(1, spec.timeoutSecs()));
    cString(d, program.toString());
    String cwd = dir.relativize(spec.cwd().toAbsolutePath().normalize()).toString();
    cString(d, cwd.isEmpty() ? "." : cwd);
    d.writeInt(spec.argv().size());
    for (String a : spec.argv()) {
      cString(d, a);
    }
    d.writeInt(spec.env().size());
    for (Map.Entry<String, String> e : spec.env().entrySet()) {
      cString(d, e.getKey() + "=" + e.getValue());
    }
    return b.toByteArray();
  }

  private static void cString(DataOutputStream d, String s) throws IOException {
    byte[] bytes = s.getBytes(StandardCharsets.UTF_8);
    for (byte x : bytes) {
      if (x == 0) {
        throw new ApiException(422, "arguments and environment values may not contain NUL");
      }
    }
    d.write(bytes);
    d.writeByte(0);
  }

  private void send(int type, int id, byte[] payload) throws IOException {
    synchronized (out) {
      out.writeInt(5 + payload.length);
      out.writeByte(type);
      out.writeInt(id);
      out.write(payload);
      out.flush();
    }
  }

  /** Reads frames until the supervisor ends, then fails whatever still runs. */
  private void read() {
    try (DataInputStream in = new DataInputStream(new java.io.BufferedInputStream(process.getInputStream(), 1 << 16))) {
      while (true) {
        int len = in.readInt();
        if (len < 5 || len > (64 << 20) + 5) {
          break;
        }
        int type = in.readUnsignedByte();
        int id = in.readInt();
        byte[] payload = new byte[len - 5];
        in.readFully(payload);
        if (type == EV_READY) {
          ready.complete(null);
          continue;
        }
        Exec exec = execs.get(id);
        if (exec != null) {
          exec.event(type, payload);
        }
      }
    } catch (IOException e) {
      // the supervisor ended
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } finally {
      alive = false;
      ready.completeExceptionally(new IOException("the supervisor ended"));
      process.destroyForcibly();
      for (Exec exec : List.copyOf(execs.values())) {
        exec.lost();
      }
    }
  }

  /** Kills the supervisor and, with its end, the groups of every execution it runs. */
  @Override
  public void close() {
    closing = true;
    alive = false;
    for (Exec exec : execs.values()) {
      if (exec.pgid > 1) {
        ProcessGroups.kill(List.of(exec.pgid));
      }
    }
    ProcessGroups.kill(List.of(process.pid()));
    process.destroyForcibly();
  }

  /** One execution the supervisor runs. */
  private final class Exec implements ExecHandle {
    final int id;
    final ExecSink sink;
    final int timeoutSecs;
    final LongConsumer onStart;
    final CompletableFuture<Void> started = new CompletableFuture<>();
    final long t0 = System.nanoTime();
    volatile long pgid;
    private final byte[][] carry = {new byte[0], new byte[0]};
    private boolean stdinClosed;
    private volatile boolean signalled;
    private boolean ended;

    Exec(int id, ExecSink sink, int timeoutSecs, LongConsumer onStart) {
      this.id = id;
      this.sink = sink;
      this.timeoutSecs = timeoutSecs;
      this.onStart = onStart;
    }

    void event(int type, byte[] payload) throws InterruptedException {
      switch (type) {
        case EV_STARTED -> {
          pgid = ByteBuffer32.get(payload, 0);
          try {
            onStart.accept(pgid);
          } finally {
            started.complete(null);
          }
        }
        case EV_FAILED -> {
          execs.remove(id);
          started.completeExceptionally(new IOException("the program could not be started (errno "
              + ByteBuffer32.get(payload, 0) + ")"));
        }
        case EV_STDOUT -> output(0, Stream.STDOUT, payload);
        case EV_STDERR -> output(1, Stream.STDERR, payload);
        case EV_EXIT -> {
          boolean timedOut = payload.length > 4 && payload[4] != 0;
          flushCarry();
          if (timedOut) {
            sink.output(Stream.STDERR, Timeouts.message(timeoutSecs));
          }
          int code = timedOut ? Timeouts.EXIT_CODE : ByteBuffer32.get(payload, 0);
          end(code, timedOut, signalled && !timedOut && code != 0);
        }
        default -> { }
      }
    }

    private void output(int index, Stream stream, byte[] data) throws InterruptedException {
      byte[] joined = carry[index].length == 0 ? data : concat(carry[index], data);
      int cut = Utf8.completePrefix(joined, joined.length);
      carry[index] = Arrays.copyOfRange(joined, cut, joined.length);
      if (cut > 0) {
        sink.output(stream, cut == joined.length ? joined : Arrays.copyOf(joined, cut));
      }
    }

    private void flushCarry() throws InterruptedException {
      for (int i = 0; i < 2; i++) {
        if (carry[i].length > 0) {
          byte[] rest = carry[i];
          carry[i] = new byte[0];
          sink.output(i == 0 ? Stream.STDOUT : Stream.STDERR, rest);
        }
      }
    }

    private void end(int code, boolean timedOut, boolean cancelled) {
      execs.remove(id);
      synchronized (this) {
        if (ended) {
          return;
        }
        ended = true;
        stdinClosed = true;
      }
      sink.exited(code, timedOut, cancelled, TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0));
    }

    /** The supervisor ended under this execution: its group is killed and it ends as failed. */
    void lost() {
      boolean running = started.isDone() && !started.isCompletedExceptionally();
      started.completeExceptionally(new IOException("the sandbox's supervisor ended"));
      if (!running) {
        return; // run() reports it to its caller
      }
      ProcessGroups.kill(List.of(pgid));
      try {
        flushCarry();
        if (!closing) {
          sink.output(Stream.STDERR, LOST_MESSAGE.getBytes(StandardCharsets.UTF_8));
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      end(LOST_EXIT_CODE, false, false);
    }

    @Override
    public void writeStdin(byte[] data) {
      synchronized (this) {
        if (stdinClosed) {
          throw ApiException.conflict("stdin is closed");
        }
      }
      try {
        send(REQ_STDIN, id, data);
      } catch (IOException e) {
        throw ApiException.conflict("stdin is closed");
      }
    }

    @Override
    public void closeStdin() {
      synchronized (this) {
        if (stdinClosed) {
          return;
        }
        stdinClosed = true;
      }
      try {
        send(REQ_CLOSE_STDIN, id, new byte[0]);
      } catch (IOException ignored) {
        // the supervisor is gone, and with it the program's stdin
      }
    }

    @Override
    public void signal(String signal) {
      Integer number = SIGNALS.get(signal);
      if (number == null) {
        return;
      }
      signalled = true;
      try {
        send(REQ_SIGNAL, id, new byte[] {(byte) (int) number});
      } catch (IOException e) {
        ProcessGroups.signal(SessionSpawner.available(), pgid, signal);
      }
    }
  }

  private static byte[] concat(byte[] a, byte[] b) {
    byte[] out = Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, out, a.length, b.length);
    return out;
  }

  /** Big-endian 32-bit integers of frames. */
  private static final class ByteBuffer32 {
    static int get(byte[] b, int at) {
      return ((b[at] & 0xff) << 24) | ((b[at + 1] & 0xff) << 16) | ((b[at + 2] & 0xff) << 8) | (b[at + 3] & 0xff);
    }
  }
}
