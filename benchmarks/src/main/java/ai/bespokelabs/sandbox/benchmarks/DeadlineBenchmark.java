package ai.bespokelabs.sandbox.benchmarks;

import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * Deadline accuracy: N sandboxes (default 500) with timeouts staggered over 1–10 s, nobody connected; prints
 * p50/p99/max of {@code terminated_at - expires_at}, against a baseline of plain Vert.x timers set for the
 * same number of deadlines in this process (the scheduling floor of the machine).
 *
 * <p>Usage: {@code bin/benchmark deadlines [--sandboxes N]}
 */
public final class DeadlineBenchmark {
  private DeadlineBenchmark() {}

  public static void main(String[] args) throws Exception {
    int n = 500;
    for (int i = 0; i + 1 < args.length; i += 2) {
      if (args[i].equals("--sandboxes")) {
        n = Integer.parseInt(args[i + 1]);
      } else {
        throw new IllegalArgumentException("unknown argument " + args[i]);
      }
    }
    long[] baseline = timerBaseline(n);
    try (BenchGateway gw = BenchGateway.start()) {
      List<String> ids = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        ids.add(gw.call("POST", "/v1/sandboxes", new JsonObject().put("backend", "local")
            .put("timeout_secs", 1 + i % 10), 201).getString("id"));
      }
      long[] late = new long[n];
      int done = 0;
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
      while (done < n && System.nanoTime() < deadline) {
        Thread.sleep(500);
        done = 0;
        JsonArray all = new JsonArray(gw.http.send(java.net.http.HttpRequest.newBuilder(
                java.net.URI.create(gw.base + "/v1/sandboxes")).header("Authorization", "Bearer " + gw.key).build(),
            java.net.http.HttpResponse.BodyHandlers.ofString()).body());
        for (Object o : all) {
          JsonObject s = (JsonObject) o;
          if ("destroyed".equals(s.getString("status")) && ids.contains(s.getString("id"))) {
            late[done++] = Duration.between(OffsetDateTime.parse(s.getString("expires_at")),
                OffsetDateTime.parse(s.getString("terminated_at"))).toMillis();
          }
        }
      }
      if (done < n) {
        throw new IllegalStateException("only " + done + " of " + n + " sandboxes were terminated");
      }
      System.out.printf("%nDeadline accuracy, %d sandboxes with 1-10 s timeouts, milliseconds late:%n", n);
      System.out.printf("  %-36s %8s %8s %8s%n", "", "p50", "p99", "max");
      row("Vert.x timers (baseline)", baseline);
      row("terminated_at - expires_at", late);
    }
    System.exit(0);
  }

  private static void row(String name, long[] values) {
    long[] v = values.clone();
    Arrays.sort(v);
    System.out.printf("  %-36s %8d %8d %8d%n", name, v[v.length / 2], v[(int) Math.ceil(v.length * 0.99) - 1],
        v[v.length - 1]);
  }

  /** Lateness of {@code n} one-shot Vert.x timers due over the same 1-10 s spread. */
  private static long[] timerBaseline(int n) throws InterruptedException {
    Vertx vertx = Vertx.vertx();
    long[] late = new long[n];
    CountDownLatch fired = new CountDownLatch(n);
    long start = System.nanoTime();
    for (int i = 0; i < n; i++) {
      int idx = i;
      long dueMs = 1000L * (1 + i % 10);
      vertx.setTimer(dueMs, t -> {
        late[idx] = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start) - dueMs;
        fired.countDown();
      });
    }
    fired.await(30, TimeUnit.SECONDS);
    vertx.close();
    return late;
  }
}
