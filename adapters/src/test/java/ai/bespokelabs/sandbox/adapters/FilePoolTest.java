package ai.bespokelabs.sandbox.adapters;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.testkit.Waits;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class FilePoolTest {
  @Test
  void one_organization_with_stuck_operations_never_starves_another() throws Exception {
    FilePool pool = new FilePool("files-test-", 4, 2);
    CountDownLatch release = new CountDownLatch(1);
    AtomicInteger started = new AtomicInteger();
    List<CompletableFuture<String>> stuck = new ArrayList<>();
    try {
      for (int i = 0; i < 10; i++) {
        stuck.add(pool.submit("org-a", () -> {
          started.incrementAndGet();
          try {
            release.await();
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
          return "a";
        }));
      }
      // org-a holds its share (two threads); the rest of its operations wait in its own queue
      assertThat(pool.submit("org-b", () -> "b").get(5, TimeUnit.SECONDS)).isEqualTo("b");
      assertThat(pool.submit("org-c", () -> "c").get(5, TimeUnit.SECONDS)).isEqualTo("c");
      // its two threads start when the pool gets to them; no third one ever does
      Waits.upTo(5).until(() -> started.get() >= 2);
      Waits.upTo(1).during(Duration.ofMillis(100)).untilAsserted(() -> assertThat(started.get()).isEqualTo(2));
      assertThat(pool.running("org-a")).isEqualTo(2);
      release.countDown();
      for (CompletableFuture<String> f : stuck) {
        assertThat(f.get(5, TimeUnit.SECONDS)).isEqualTo("a");
      }
      assertThat(started.get()).isEqualTo(10);
      // the slot is given back just after the operation's result is
      Waits.upTo(5).untilAsserted(() -> assertThat(pool.running("org-a")).isZero());
    } finally {
      release.countDown();
      pool.shutdownNow();
    }
  }

  @Test
  void a_failure_is_reported_and_frees_the_slot() throws Exception {
    FilePool pool = new FilePool("files-test-", 2, 1);
    try {
      CompletableFuture<String> failed = pool.submit("org", () -> {
        throw new IllegalStateException("boom");
      });
      assertThat(failed).failsWithin(5, TimeUnit.SECONDS);
      assertThat(pool.submit("org", () -> "next").get(5, TimeUnit.SECONDS)).isEqualTo("next");
    } finally {
      pool.shutdownNow();
    }
  }
}
