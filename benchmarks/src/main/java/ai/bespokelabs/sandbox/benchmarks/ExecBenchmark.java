package ai.bespokelabs.sandbox.benchmarks;

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
 * <p>Each round also times a second bare spawn, a {@code GET /healthz} and one committed insert on the
 * gateway's database, under the same load: the per-pair difference of the two bare spawns is what the
 * machine's own noise puts into a per-pair figure, and round trip + committed write (summed per round) is the
 * least any execute can add, since it is a request whose result is made durable before it is answered.
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
      new ExecBenchmark.Run(gw.port, gw.key, gw.sandbox, gw::commitOnce).run(iterations, seconds, clients);
    }
    System.exit(0);
  }

  /** {@code commit}: makes one committed write on the gateway's database and answers its microseconds. */
  private record Run(int port, String key, String sandbox, java.util.concurrent.Callable<Long> commit) {
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
      long[] noise = new long[iterations];
      long[] healthz = new long[iterations];
      long[] commits = new long[iterations];
      long[] floor = new long[iterations];
      for (int i = 0; i < iterations; i++) {
        long t0 = System.nanoTime();
        spawn();
        long t1 = System.nanoTime();
        call(http1, execute);
        long t2 = System.nanoTime();
        spawn();
        long t3 = System.nanoTime();
        call(http1, health);
        long t4 = System.nanoTime();
        bare[i] = t1 - t0;
        gateway[i] = t2 - t1;
        diff[i] = gateway[i] - bare[i];
        noise[i] = (t3 - t2) - bare[i];
        healthz[i] = t4 - t3;
        commits[i] = commit.call() * 1000;
        floor[i] = healthz[i] + commits[i];
      }
      System.out.printf("%nSequential, %d iterations (after %d warm-up), microseconds:%n", iterations, warmup);
      System.out.printf("  %-34s %10s %10s%n", "", "p50", "p99");
      row("bare ProcessBuilder spawn of true", bare);
      row("POST /execute of true (local)", gateway);
      row("added by the gateway (per pair)", diff);
      row("bare spawn against bare (per pair)", noise);
      row("GET /healthz (HTTP round trip only)", healthz);
      row("one committed write", commits);
      row("floor: round trip + committed write", floor);
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
