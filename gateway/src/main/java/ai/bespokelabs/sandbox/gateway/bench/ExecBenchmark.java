package ai.bespokelabs.sandbox.gateway.bench;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Measures what the gateway adds to running a program: the round trip of {@code POST .../execute} running
 * {@code true} on the local backend against a bare {@code ProcessBuilder} spawn of {@code true} in this
 * process, interleaved so both see the same machine load. Prints p50/p99 of both and of the per-pair
 * difference, then requests/s with 16 concurrent clients. Starts its own gateway on an embedded PostgreSQL.
 *
 * <p>Usage: {@code bin/benchmark [exec] [--iterations N] [--seconds S] [--clients C]}
 */
public final class ExecBenchmark {
  private ExecBenchmark() {}

  public static void main(String[] args) throws Exception {
    int iterations = 2000;
    int seconds = 10;
    int clients = 16;
    for (int i = 0; i + 1 < args.length; i += 2) {
      switch (args[i]) {
        case "--iterations" -> iterations = Integer.parseInt(args[i + 1]);
        case "--seconds" -> seconds = Integer.parseInt(args[i + 1]);
        case "--clients" -> clients = Integer.parseInt(args[i + 1]);
        default -> throw new IllegalArgumentException("unknown argument " + args[i]);
      }
    }
    try (BenchGateway gw = BenchGateway.start()) {
      new ExecBenchmark.Run(gw.port, gw.key, gw.sandbox, gw.commitLatencies(iterations))
          .run(iterations, seconds, clients);
    }
    System.exit(0);
  }

  /** {@code commits}: sorted microseconds of single committed writes, measured before the run. */
  private record Run(int port, String key, String sandbox, long[] commits) {
    void run(int iterations, int seconds, int clients) throws Exception {
      byte[] execute = KeepAliveClient.request("POST", "/v1/sandboxes/" + sandbox + "/execute", key,
          "{\"command\":\"true\",\"args\":[]}");
      byte[] health = KeepAliveClient.request("GET", "/healthz", null, null);
      KeepAliveClient http1 = new KeepAliveClient(port);

      int warmup = Math.max(200, iterations / 5);
      for (int i = 0; i < warmup; i++) {
        spawn();
        call(http1, execute);
        call(http1, health);
      }
      long[] bare = new long[iterations];
      long[] gateway = new long[iterations];
      long[] diff = new long[iterations];
      long[] healthz = new long[iterations];
      for (int i = 0; i < iterations; i++) {
        long t0 = System.nanoTime();
        spawn();
        long t1 = System.nanoTime();
        call(http1, execute);
        long t2 = System.nanoTime();
        call(http1, health);
        long t3 = System.nanoTime();
        bare[i] = t1 - t0;
        gateway[i] = t2 - t1;
        diff[i] = gateway[i] - bare[i];
        healthz[i] = t3 - t2;
      }
      System.out.printf("%nSequential, %d iterations (after %d warm-up), microseconds:%n", iterations, warmup);
      System.out.printf("  %-34s %10s %10s%n", "", "p50", "p99");
      row("bare ProcessBuilder spawn of true", bare);
      row("POST /execute of true (local)", gateway);
      row("added by the gateway (per pair)", diff);
      row("GET /healthz (HTTP round trip only)", healthz);
      long commit = commits[commits.length / 2];
      System.out.printf("  %-34s %10d %10d%n", "one committed write", commit,
          commits[Math.min(commits.length - 1, (int) Math.ceil(0.99 * commits.length) - 1)]);
      // the least an execute can add: its request, and its result made durable before it is answered
      System.out.printf("  %-34s %10.0f             (round trip + committed write, at their p50)%n",
          "floor of the gateway's path", pct(healthz, 50) / 1000.0 + commit);
      System.out.printf("  ratio gateway/bare at p50: %.2f%n", (double) pct(gateway, 50) / pct(bare, 50));

      double bareRate = throughput(clients, seconds, () -> spawn());
      ThreadLocal<KeepAliveClient> conn = ThreadLocal.withInitial(() -> new KeepAliveClient(port));
      double gwRate = throughput(clients, seconds, () -> call(conn.get(), execute));
      System.out.printf("%n%d concurrent clients, %d s each:%n", clients, seconds);
      System.out.printf("  bare spawns/s            %10.0f%n", bareRate);
      System.out.printf("  gateway executions/s    %10.0f  (%.2f of bare)%n", gwRate, gwRate / bareRate);
    }

    private static void row(String name, long[] nanos) {
      System.out.printf("  %-34s %10.0f %10.0f%n", name, pct(nanos, 50) / 1000.0, pct(nanos, 99) / 1000.0);
    }

    private static long pct(long[] values, int p) {
      long[] sorted = values.clone();
      Arrays.sort(sorted);
      return sorted[Math.min(sorted.length - 1, (int) Math.ceil(p / 100.0 * sorted.length) - 1)];
    }

    private static double throughput(int clients, int seconds, Runnable op) throws InterruptedException {
      AtomicBoolean stop = new AtomicBoolean();
      AtomicLong done = new AtomicLong();
      List<Thread> threads = new ArrayList<>();
      for (int c = 0; c < clients; c++) {
        threads.add(Thread.ofPlatform().start(() -> {
          while (!stop.get()) {
            op.run();
            done.incrementAndGet();
          }
        }));
      }
      long start = System.nanoTime();
      Thread.sleep(seconds * 1000L);
      stop.set(true);
      for (Thread t : threads) {
        t.join();
      }
      return done.get() / ((System.nanoTime() - start) / 1e9);
    }

    private static void spawn() {
      try {
        Process p = new ProcessBuilder("true").start();
        p.getOutputStream().close();
        p.waitFor();
      } catch (IOException e) {
        throw new IllegalStateException(e);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException(e);
      }
    }

    private static void call(KeepAliveClient client, byte[] request) {
      int status = client.send(request);
      if (status != 200) {
        throw new IllegalStateException("the gateway answered " + status);
      }
    }
  }
}
