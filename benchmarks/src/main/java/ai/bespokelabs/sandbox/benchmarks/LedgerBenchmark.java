package ai.bespokelabs.sandbox.benchmarks;

import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Tuple;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Ledger throughput: lifecycle events (provider observations of priced sandboxes, each one a full lifecycle
 * cost update) are committed to the outbox at a steady offered rate while the gateway's ledger verticle
 * prices them; prints the events priced per second and the lag from commit to priced (p50/p99), against
 * the rate at which this process can only insert the same events (the baseline).
 *
 * <p>Usage: {@code bin/benchmark ledger [--rate EVENTS_PER_S] [--seconds S]}
 */
public final class LedgerBenchmark {
  private LedgerBenchmark() {}

  public static void main(String[] args) throws Exception {
    int rate = 10_000;
    int seconds = 5;
    for (int i = 0; i + 1 < args.length; i += 2) {
      switch (args[i]) {
        case "--rate" -> rate = Integer.parseInt(args[i + 1]);
        case "--seconds" -> seconds = Integer.parseInt(args[i + 1]);
        default -> throw new IllegalArgumentException("unknown argument " + args[i]);
      }
    }
    try (BenchGateway bench = BenchGateway.start()) {
      var gw = bench.gateway();
      Pool pool = gw.pool();
      String org = await(pool.preparedQuery("SELECT organization_id FROM sandboxes WHERE id = $1")
          .execute(Tuple.of(bench.sandbox))).iterator().next().getString(0);
      int sandboxes = 1000;
      await(pool.preparedQuery("""
              INSERT INTO sandboxes (id, organization_id, backend, status, config, created_at, create_token, node_id,
                provisioning_at, hourly_rate_usd, pricing_source)
              SELECT 'sbx_bench' || lpad(g::text, 23, '0'), $1, 'daytona', 'running', '{}'::jsonb,
                     now() - interval '1 hour', 'ctk', 'bench', now() - interval '1 hour', 0.054, 'bench'
              FROM generate_series(1, $2) g""").execute(Tuple.of(org, sandboxes)));

      String insert = """
          INSERT INTO lifecycle_events (id, organization_id, sandbox_id, type, status, occurred_at, data)
          SELECT 'evt_bench_' || $2 || '_' || g, $1, 'sbx_bench' || lpad((1 + g % $4)::text, 23, '0'),
                 'sandbox.observed', 'running', now(), jsonb_build_object('observation_id', 'bench:' || $2 || ':' || g)
          FROM generate_series(1, $3) g RETURNING seq""";

      // baseline: how fast the events alone can be committed, one batch per round trip
      int batch = Math.max(1, rate / 50);
      long b0 = System.nanoTime();
      int baselineEvents = 0;
      List<Long> ignored = new ArrayList<>();
      while (System.nanoTime() - b0 < TimeUnit.SECONDS.toNanos(1)) {
        ignored.add(lastSeq(await(pool.preparedQuery(insert).execute(Tuple.of(org, "base" + baselineEvents, batch,
            sandboxes)))));
        baselineEvents += batch;
      }
      double baselineRate = baselineEvents / ((System.nanoTime() - b0) / 1e9);
      awaitCaughtUp(pool, ignored.get(ignored.size() - 1), 300);

      // sustained load: one batch every 20 ms, lag measured per batch
      int batches = seconds * 50;
      long[] committedAt = new long[batches];
      long[] seqs = new long[batches];
      long[] lag = new long[batches];
      long start = System.nanoTime();
      int next = 0;
      int caught = 0;
      while (caught < batches) {
        long now = System.nanoTime();
        if (next < batches && now - start >= next * 20_000_000L) {
          seqs[next] = lastSeq(await(pool.preparedQuery(insert).execute(Tuple.of(org, "load" + next, batch,
              sandboxes))));
          committedAt[next] = System.nanoTime();
          next++;
        }
        long offset = offset(pool);
        while (caught < next && offset >= seqs[caught]) {
          lag[caught] = System.nanoTime() - committedAt[caught];
          caught++;
        }
        if (System.nanoTime() - start > TimeUnit.SECONDS.toNanos(seconds + 300L)) {
          throw new IllegalStateException("the ledger did not catch up");
        }
        Thread.sleep(2);
      }
      double elapsed = (System.nanoTime() - start) / 1e9;
      double priced = (double) batches * batch / elapsed;
      Arrays.sort(lag);
      System.out.printf("%nLedger, %d events offered at %d/s for %d s (%d priced sandboxes):%n", batches * batch,
          rate, seconds, sandboxes);
      System.out.printf("  inserting events only (baseline)   %10.0f events/s%n", baselineRate);
      System.out.printf("  priced by the ledger              %10.0f events/s  (%.2f of baseline)%n", priced,
          priced / baselineRate);
      System.out.printf("  lag commit -> priced              p50 %6.1f ms   p99 %6.1f ms%n", lag[batches / 2] / 1e6,
          lag[(int) Math.ceil(batches * 0.99) - 1] / 1e6);
    }
    System.exit(0);
  }

  private static long lastSeq(io.vertx.sqlclient.RowSet<io.vertx.sqlclient.Row> rows) {
    long max = 0;
    for (var r : rows) {
      max = Math.max(max, r.getLong(0));
    }
    return max;
  }

  private static long offset(Pool pool) throws Exception {
    var rows = await(pool.query("SELECT last_seq FROM outbox_offsets WHERE consumer = 'ledger'").execute());
    return rows.size() == 0 ? 0 : rows.iterator().next().getLong(0);
  }

  private static void awaitCaughtUp(Pool pool, long seq, int seconds) throws Exception {
    long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
    while (offset(pool) < seq) {
      if (System.nanoTime() > until) {
        throw new IllegalStateException("the ledger did not catch up with the baseline events");
      }
      Thread.sleep(10);
    }
  }

  private static <T> T await(io.vertx.core.Future<T> f) throws Exception {
    return f.toCompletionStage().toCompletableFuture().get(60, TimeUnit.SECONDS);
  }
}
