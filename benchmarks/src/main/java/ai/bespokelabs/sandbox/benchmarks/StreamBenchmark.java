package ai.bespokelabs.sandbox.benchmarks;

import ai.bespokelabs.sandbox.adapters.local.ProcessSpec;
import com.sun.management.UnixOperatingSystemMXBean;
import io.vertx.core.json.JsonObject;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Measures streaming a program's output through the gateway, against the same program's pipe read directly by
 * {@code ProcessBuilder} in this process where there is one:
 * <ol>
 *   <li>{@code --streams} idle SSE streams attached to one running execution, held {@code --hold} seconds:
 *       the heap they cost the gateway. Their clients run in a separate JVM ({@link IdleSseClients}), so
 *       this process's heap and file descriptors hold only the gateway's side. Runs first, while no finished
 *       execution is retained (the adapter keeps those for a minute), so the heap baseline is clean.
 *   <li>throughput of {@code --mib} MiB from {@code head -c}: WebSocket binary frames, SSE of NUL bytes (as
 *       {@code data_b64}: JSON would escape each to six characters) and SSE of printable bytes ({@code | tr '\0' a});
 *   <li>latency from a program writing a line to the client reading it: {@code python3} prints its
 *       {@code time.time_ns()} every 20 ms, the client subtracts it from its own clock (same machine).
 * </ol>
 * Starts its own gateway on an embedded PostgreSQL, so every client shares the machine with it. The stream
 * clients ({@link SocketClients}) parse only framing, as a pipe's reader does, so the figures are the
 * gateway's rather than an HTTP library's.
 *
 * <p>Usage: {@code bin/benchmark stream [--mib N] [--streams K] [--hold S] [--warmup S]}
 */
public final class StreamBenchmark {
  private static final long MIB = 1 << 20;
  private static final int ROUNDS = 3;
  private static final int LINES = 500;
  /** A shell command line printing its wall-clock time in nanoseconds every 20 ms, {@link #LINES} times. */
  private static final String TIMESTAMPS = "python3 -c '" + String.join("\n",
      "import sys, time",
      "for _ in range(" + LINES + "):",
      "    sys.stdout.write(\"%d\\n\" % time.time_ns())",
      "    sys.stdout.flush()",
      "    time.sleep(0.02)") + "'";
  /** File descriptors kept free for the gateway's own work (database, processes, logs) beside the streams. */
  private static final int FD_RESERVE = 500;
  /** How long a closed stream's subscription lingers before it unregisters (StreamSubscriber), plus a margin. */
  private static final long UNREGISTER_WAIT_MS = 6_000;
  private static final UnixOperatingSystemMXBean OS =
      (UnixOperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();

  private final BenchGateway gw;
  /**
   * How long each throughput case runs before it is measured. The JIT needs seconds of a case to compile its
   * hot paths with C2 (Base64's vectorized intrinsics only come with it); a gateway that has been up for a
   * while runs those.
   */
  private final long warmupNanos;

  private StreamBenchmark(BenchGateway gw, int warmupSeconds) {
    this.gw = gw;
    this.warmupNanos = TimeUnit.SECONDS.toNanos(warmupSeconds);
  }

  public static void main(String[] args) throws Exception {
    int mib = 256;
    int streams = 10_000;
    int hold = 21;
    int warmup = 12;
    for (int i = 0; i < args.length; i += 2) {
      if (i + 1 == args.length) {
        throw new IllegalArgumentException(args[i] + " needs a value");
      }
      int value;
      try {
        value = Integer.parseInt(args[i + 1]);
      } catch (NumberFormatException e) {
        value = 0;
      }
      if (value <= 0) {
        throw new IllegalArgumentException(args[i] + " needs a positive whole number, not " + args[i + 1]);
      }
      switch (args[i]) {
        case "--mib" -> mib = value;
        case "--streams" -> streams = value;
        case "--hold" -> hold = value;
        case "--warmup" -> warmup = value;
        default -> throw new IllegalArgumentException("unknown argument " + args[i]
            + " (expected --mib N, --streams K, --hold S, --warmup S)");
      }
    }
    int status = 0;
    try (BenchGateway gw = BenchGateway.start()) {
      System.out.printf("%n%d cores, load average %.1f at the start (other processes share the machine)%n",
          OS.getAvailableProcessors(), OS.getSystemLoadAverage());
      StreamBenchmark bench = new StreamBenchmark(gw, warmup);
      bench.idleStreams(streams, hold);
      bench.throughput(mib);
      bench.latency();
    } catch (Exception e) {
      System.err.println("stream benchmark failed: " + e);
      e.printStackTrace();
      status = 1;
    }
    System.exit(status);
  }

  /** Receives output bytes (the buffer's remaining ones) that arrived at {@code at} (epoch nanoseconds). */
  @FunctionalInterface
  private interface Output {
    void accept(ByteBuffer data, long at);
  }

  /** Moves the stdout of a shell command line to this process until the command exits. */
  @FunctionalInterface
  private interface Transport {
    void run(String command, Output out) throws Exception;
  }

  // ---- idle streams -------------------------------------------------------------------------------

  private void idleStreams(int requested, int holdSecs) throws Exception {
    int spare = (int) (OS.getMaxFileDescriptorCount() - OS.getOpenFileDescriptorCount() - FD_RESERVE);
    int streams = Math.min(requested, spare);
    String exec = gw.call("POST", gw.sandboxPath("/executions"), new JsonObject().put("command", "sleep 600"), 202)
        .getString("id");
    Process clients = null;
    try {
      long heap0 = usedHeapAfterGc();
      long fds0 = OS.getOpenFileDescriptorCount();
      clients = new ProcessBuilder(ProcessHandle.current().info().command().orElse("java"), "-cp",
          System.getProperty("java.class.path"), IdleSseClients.class.getName(), String.valueOf(gw.port),
          gw.sandboxPath("/executions/" + exec + "/stream"), gw.key, String.valueOf(streams),
          String.valueOf(holdSecs)).redirectError(ProcessBuilder.Redirect.INHERIT).start();
      Process watched = clients;
      Thread.ofPlatform().daemon().start(() -> {
        try {
          if (!watched.waitFor(180 + holdSecs, TimeUnit.SECONDS)) {
            System.err.println("the idle SSE clients did not finish in time; stopping them");
            watched.destroyForcibly();
          }
        } catch (InterruptedException ignored) {
          // the benchmark is ending
        }
      });
      clients.getOutputStream().close();
      long[] opened;
      long[] held;
      long heap1;
      long fds1;
      try (BufferedReader report = clients.inputReader()) {
        opened = numbers(report.readLine(), clients); // opened, failed, closed, millis
        heap1 = usedHeapAfterGc();
        fds1 = OS.getOpenFileDescriptorCount();
        held = numbers(report.readLine(), clients); // alive, heartbeats
      }
      if (clients.waitFor() != 0) {
        throw new IllegalStateException("the idle SSE clients exited with " + clients.exitValue());
      }
      Thread.sleep(UNREGISTER_WAIT_MS);
      long heap2 = usedHeapAfterGc();
      long fds2 = OS.getOpenFileDescriptorCount();

      long open = opened[0];
      System.out.printf("%nIdle SSE streams on one running execution (sleep 600); clients in a separate JVM:%n");
      if (streams < requested) {
        System.out.printf("  (%d requested; this process has %d spare file descriptors of %d, keeping %d in reserve)%n",
            requested, spare + FD_RESERVE, OS.getMaxFileDescriptorCount(), FD_RESERVE);
      }
      System.out.printf("  %-22s %d of %d in %.1f s (%.0f/s), %d failed, %d closed by the gateway%n", "opened",
          open, streams, opened[3] / 1000.0, open * 1000.0 / opened[3], opened[1], opened[2]);
      double perStream = open == 0 ? 0 : (heap1 - heap0) / (double) open;
      System.out.printf("  %-22s %.1f MiB before, %.1f MiB with them open: +%.1f MiB, %.1f KiB per stream%n",
          "heap used after GC", heap0 / (double) MIB, heap1 / (double) MIB, (heap1 - heap0) / (double) MIB,
          perStream / 1024);
      System.out.printf("  %-22s %.0f MiB for 10,000 streams; target <= 512 MiB: %s%n", "", 10_000 * perStream / MIB,
          open > 0 && 10_000 * perStream <= 512 * MIB ? "met" : "MISSED");
      System.out.printf("  %-22s +%d in this process (%.2f per stream; limit %d)%n", "file descriptors",
          fds1 - fds0, open == 0 ? 0 : (fds1 - fds0) / (double) open, OS.getMaxFileDescriptorCount());
      System.out.printf("  %-22s %d still open, %d got a heartbeat comment (sent after 15 s idle)%n",
          "held " + holdSecs + " s", held[0], held[1]);
      System.out.printf("  %-22s heap %+.1f MiB and file descriptors %+d against before (the database pool"
          + " grows under the attach burst)%n", "closed, " + UNREGISTER_WAIT_MS / 1000 + " s later",
          (heap2 - heap0) / (double) MIB, fds2 - fds0);
    } finally {
      if (clients != null) {
        clients.destroyForcibly();
      }
      gw.call("POST", gw.sandboxPath("/executions/" + exec + "/signal"), new JsonObject().put("signal", "KILL"), 204);
    }
  }

  /** The values of a report line of {@link IdleSseClients}: {@code name value name value ...}. */
  private static long[] numbers(String line, Process clients) throws InterruptedException {
    if (line == null) {
      throw new IllegalStateException("the idle SSE clients exited (" + clients.waitFor() + ") before reporting");
    }
    String[] words = line.trim().split(" ");
    long[] values = new long[words.length / 2];
    for (int i = 0; i < values.length; i++) {
      values[i] = Long.parseLong(words[2 * i + 1]);
    }
    return values;
  }

  private static long usedHeapAfterGc() {
    System.gc();
    System.gc();
    return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
  }

  // ---- throughput ---------------------------------------------------------------------------------

  private void throughput(int mib) throws Exception {
    record Case(String name, Transport transport, boolean printable, int targetPercent) {}
    List<Case> cases = List.of(
        new Case("pipe (ProcessBuilder, this JVM)", StreamBenchmark::pipe, false, 0),
        new Case("WebSocket, binary frames", webSocket("binary"), false, 40),
        new Case("SSE, NUL bytes (base64)", this::sse, false, 25),
        new Case("pipe, printable (| tr '\\0' a)", StreamBenchmark::pipe, true, 0),
        new Case("SSE, printable bytes", this::sse, true, 0));
    for (Case c : cases) {
      long t0 = System.nanoTime();
      do {
        transfer(c.name(), c.transport(), mib * MIB, c.printable());
      } while (System.nanoTime() - t0 < warmupNanos);
    }
    double[][] rates = new double[cases.size()][ROUNDS];
    double[][] whole = new double[cases.size()][ROUNDS];
    double[][] exits = new double[cases.size()][ROUNDS];
    double[][] cores = new double[cases.size()][ROUNDS];
    for (int r = 0; r < ROUNDS; r++) {
      for (int i = 0; i < cases.size(); i++) {
        Case c = cases.get(i);
        long cpu = OS.getProcessCpuTime();
        long t0 = System.nanoTime();
        Timing t = transfer(c.name(), c.transport(), mib * MIB, c.printable());
        long wall = System.nanoTime() - t0;
        rates[i][r] = mib / ((t.lastByte() - t.firstByte()) / 1e9);
        whole[i][r] = mib / (wall / 1e9);
        exits[i][r] = (t.end() - t.lastByte()) / 1e6;
        cores[i][r] = (OS.getProcessCpuTime() - cpu) / (double) wall;
      }
    }
    System.out.printf("%nThroughput: %d MiB from head -c %d /dev/zero, median of %d interleaved runs (after each ran"
        + " %d s to warm up).%nMiB/s from the first output byte to the last as the client receives them (ratios to the"
        + " plain pipe);%nwhole = from the request to the end, exit = from the last byte to the end of the request (the"
        + " result is stored%nfirst: up to the 1 MiB output cap, NUL bytes take 6 MiB of JSON); JVM CPU = cores busy in"
        + " this process%n(gateway and client):%n", mib, mib * MIB, ROUNDS, TimeUnit.NANOSECONDS.toSeconds(warmupNanos));
    System.out.printf("  %-34s %7s %8s  %-13s %7s %8s %8s%n", "", "MiB/s", "of pipe", "target", "whole", "exit ms",
        "JVM CPU");
    double pipe = median(rates[0]);
    for (int i = 0; i < cases.size(); i++) {
      Case c = cases.get(i);
      double percent = 100 * median(rates[i]) / pipe;
      System.out.printf("  %-34s %7.0f %8s  %-13s %7.0f %8.1f %8.2f%n", c.name(), median(rates[i]),
          i == 0 ? "" : String.format("%.1f %%", percent), c.targetPercent() == 0 ? ""
          : ">= " + c.targetPercent() + " %: " + (percent >= c.targetPercent() ? "met" : "MISSED"),
          median(whole[i]), median(exits[i]), median(cores[i]));
    }
    System.out.printf("  SSE printable is %.1f %% of the printable pipe (same command, tr included); the targets"
        + " apply to the%n  command of the plain pipe, head alone, whose NUL bytes SSE carries as base64%n",
        100 * median(rates[4]) / median(rates[3]));
  }

  /** When a transfer's first and last output bytes reached the client and when it ended (epoch nanoseconds). */
  private record Timing(long firstByte, long lastByte, long end) {}

  /** Runs one transfer of {@code bytes} within a deadline and checks that every byte arrived. */
  private static Timing transfer(String name, Transport transport, long bytes, boolean printable) throws Exception {
    String command = "head -c " + bytes + " /dev/zero" + (printable ? " | tr '\\0' a" : "");
    long[] received = {0, 0, 0};
    within(Duration.ofSeconds(60 + bytes / MIB), name, () -> {
      transport.run(command, (data, at) -> {
        if (received[0] == 0) {
          received[1] = at;
        }
        received[0] += data.remaining();
        received[2] = at;
      });
      return null;
    });
    long end = epochNanos();
    if (received[0] != bytes) {
      throw new IllegalStateException(name + " delivered " + received[0] + " of " + bytes + " bytes");
    }
    return new Timing(received[1], received[2], end);
  }

  /**
   * The bare baseline: {@code sh -c command} (with a sandbox's {@code PATH}) read with {@code ProcessBuilder}
   * in 64 KiB reads, as the local backend reads it.
   */
  private static void pipe(String command, Output out) throws IOException, InterruptedException {
    ProcessBuilder pb = new ProcessBuilder("/bin/sh", "-c", command).redirectError(ProcessBuilder.Redirect.INHERIT);
    pb.environment().put("PATH", ProcessSpec.BASE_PATH);
    Process p = pb.start();
    p.getOutputStream().close();
    byte[] buf = new byte[64 * 1024];
    try (InputStream in = p.getInputStream()) {
      for (int n; (n = in.read(buf)) >= 0; ) {
        out.accept(ByteBuffer.wrap(buf, 0, n), epochNanos());
      }
    }
    if (p.waitFor() != 0) {
      throw new IllegalStateException("'" + command + "' exited with " + p.exitValue());
    }
  }

  // ---- latency ------------------------------------------------------------------------------------

  private void latency() throws Exception {
    long[] pipe = lineLatencies("pipe", StreamBenchmark::pipe);
    long[] sse = lineLatencies("SSE", this::sse);
    long[] ws = lineLatencies("WebSocket", webSocket("text"));
    System.out.printf("%nLatency: %d lines, python3 printing time.time_ns() every 20 ms; milliseconds from the"
        + " write to the client:%n", LINES);
    System.out.printf("  %-34s %9s %8s  %s%n", "", "p50", "p99", "target p50");
    System.out.printf("  %-34s %9.3f %8.3f%n", "pipe (ProcessBuilder, this JVM)", pct(pipe, 50) / 1e6,
        pct(pipe, 99) / 1e6);
    latencyRow("SSE (POST /execute)", sse, pipe);
    latencyRow("WebSocket, text frames", ws, pipe);
  }

  private static void latencyRow(String name, long[] nanos, long[] pipe) {
    double p50 = pct(nanos, 50) / 1e6;
    double pipe50 = pct(pipe, 50) / 1e6;
    System.out.printf("  %-34s %9.3f %8.3f  <= 2 ms: %s (%.1fx the pipe, +%.2f ms)%n", name, p50,
        pct(nanos, 99) / 1e6, p50 <= 2 ? "met" : "MISSED", p50 / pipe50, p50 - pipe50);
  }

  /** Runs {@link #TIMESTAMPS} over a transport and returns, per line, arrival minus the time printed in it. */
  private static long[] lineLatencies(String name, Transport transport) throws Exception {
    long[] latencies = new long[LINES];
    int[] count = {0};
    StringBuilder line = new StringBuilder();
    within(Duration.ofSeconds(60), name + " latency", () -> {
      transport.run(TIMESTAMPS, (data, at) -> {
        while (data.hasRemaining()) {
          char c = (char) data.get();
          if (c != '\n') {
            line.append(c);
          } else if (count[0] < LINES) {
            latencies[count[0]++] = at - Long.parseLong(line.toString());
            line.setLength(0);
          }
        }
      });
      return null;
    });
    if (count[0] != LINES) {
      throw new IllegalStateException(name + " delivered " + count[0] + " of " + LINES + " lines");
    }
    return latencies;
  }

  // ---- clients ------------------------------------------------------------------------------------

  /** {@code POST .../execute} with {@code Accept: text/event-stream}: stdout to {@code out} until the exit event. */
  private void sse(String command, Output out) throws Exception {
    completed(SocketClients.sse(gw.port, gw.key, gw.sandboxPath("/execute"),
        new JsonObject().put("command", command).encode(),
        (buf, off, len, at) -> out.accept(ByteBuffer.wrap(buf, off, len), at)));
  }

  /** {@code .../executions/ws?mode=<mode>}: starts the command, stdout to {@code out} until the socket closes. */
  private Transport webSocket(String mode) {
    return (command, out) -> completed(SocketClients.webSocket(gw.port, gw.key,
        gw.sandboxPath("/executions/ws?mode=" + mode),
        new JsonObject().put("type", "start").put("command", command).encode(),
        (buf, off, len, at) -> out.accept(ByteBuffer.wrap(buf, off, len), at)));
  }

  private static void completed(JsonObject exit) {
    if (!"completed".equals(exit.getString("status")) || exit.getInteger("exit_code", -1) != 0) {
      throw new IllegalStateException("the execution did not complete: " + exit.encode());
    }
  }

  // ---- helpers ------------------------------------------------------------------------------------

  /** Runs {@code task} on a thread of its own; fails with a clear message when it takes longer than {@code limit}. */
  private static void within(Duration limit, String name, Callable<Void> task) throws Exception {
    FutureTask<Void> f = new FutureTask<>(task);
    Thread.ofPlatform().daemon().name("bench-" + name).start(f);
    try {
      f.get(limit.toMillis(), TimeUnit.MILLISECONDS);
    } catch (TimeoutException e) {
      f.cancel(true);
      throw new TimeoutException(name + " did not finish within " + limit.toSeconds() + " s");
    } catch (ExecutionException e) {
      throw e.getCause() instanceof Exception cause ? cause : e;
    }
  }

  /** Wall-clock time in nanoseconds since the epoch: the clock python's {@code time.time_ns()} reads. */
  static long epochNanos() {
    Instant now = Instant.now();
    return now.getEpochSecond() * 1_000_000_000L + now.getNano();
  }

  private static double median(double[] values) {
    double[] sorted = values.clone();
    Arrays.sort(sorted);
    return sorted[sorted.length / 2];
  }

  private static long pct(long[] values, int p) {
    long[] sorted = values.clone();
    Arrays.sort(sorted);
    return sorted[Math.min(sorted.length - 1, (int) Math.ceil(p / 100.0 * sorted.length) - 1)];
  }
}
