package ai.bespokelabs.sandbox.adapters;

import static org.assertj.core.api.Assertions.assertThat;

import io.vertx.core.Future;
import io.vertx.core.Promise;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class FairShareTest {
  @Test
  void one_organization_with_stuck_operations_never_starves_another() {
    FairShare share = new FairShare(2);
    AtomicInteger started = new AtomicInteger();
    List<Promise<String>> held = new ArrayList<>();
    List<Future<String>> stuck = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      stuck.add(share.run("org-a", () -> {
        started.incrementAndGet();
        Promise<String> p = Promise.promise();
        held.add(p);
        return p.future();
      }));
    }
    // org-a holds its share (two operations); the rest of its operations wait in its own queue
    assertThat(started.get()).isEqualTo(2);
    assertThat(share.running("org-a")).isEqualTo(2);
    Future<String> b = share.run("org-b", () -> Future.succeededFuture("b"));
    assertThat(b.succeeded()).isTrue();
    assertThat(b.result()).isEqualTo("b");
    // releasing one admits the next waiting operation of org-a, never more than two at once
    held.get(0).complete("a");
    assertThat(started.get()).isEqualTo(3);
    assertThat(share.running("org-a")).isEqualTo(2);
    for (int i = 1; i < 10; i++) {
      held.get(i).complete("a");
    }
    assertThat(started.get()).isEqualTo(10);
    assertThat(stuck).allSatisfy(f -> assertThat(f.result()).isEqualTo("a"));
    assertThat(share.running("org-a")).isZero();
  }

  @Test
  void a_failure_is_reported_and_frees_the_slot() {
    FairShare share = new FairShare(1);
    Future<String> failed = share.run("org", () -> {
      throw new IllegalStateException("boom");
    });
    assertThat(failed.failed()).isTrue();
    Future<String> failedFuture = share.run("org", () -> Future.failedFuture(new IllegalStateException("boom")));
    assertThat(failedFuture.failed()).isTrue();
    assertThat(share.run("org", () -> Future.succeededFuture("next")).result()).isEqualTo("next");
    assertThat(share.running("org")).isZero();
  }
}
