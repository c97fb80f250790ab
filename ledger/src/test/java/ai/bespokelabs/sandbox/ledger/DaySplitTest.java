package ai.bespokelabs.sandbox.ledger;

import static org.assertj.core.api.Assertions.assertThat;

import java.math.BigDecimal;
import java.time.OffsetDateTime;
import java.util.List;
import org.junit.jupiter.api.Test;

class DaySplitTest {
  @Test
  void a_window_across_midnight_splits_1800_and_3600_seconds() {
    List<DaySplit.Segment> s = DaySplit.split(OffsetDateTime.parse("2026-03-29T01:00:00Z"), BigDecimal.valueOf(5400));
    assertThat(s).hasSize(2);
    assertThat(s.get(0).start()).isEqualTo(OffsetDateTime.parse("2026-03-28T23:30:00Z"));
    assertThat(s.get(0).seconds()).isEqualByComparingTo("1800");
    assertThat(s.get(1).start()).isEqualTo(OffsetDateTime.parse("2026-03-29T00:00:00Z"));
    assertThat(s.get(1).seconds()).isEqualByComparingTo("3600");
  }

  @Test
  void a_window_within_one_day_is_one_segment_and_nothing_is_nothing() {
    assertThat(DaySplit.split(OffsetDateTime.parse("2026-03-29T12:00:00Z"), new BigDecimal("10.5")))
        .containsExactly(new DaySplit.Segment(OffsetDateTime.parse("2026-03-29T11:59:49.5Z"), new BigDecimal("10.5")));
    assertThat(DaySplit.split(OffsetDateTime.parse("2026-03-29T12:00:00Z"), BigDecimal.ZERO)).isEmpty();
  }

  @Test
  void several_days_are_cut_at_each_midnight() {
    List<DaySplit.Segment> s = DaySplit.split(OffsetDateTime.parse("2026-03-31T00:00:00Z"),
        BigDecimal.valueOf(3 * 86400));
    assertThat(s).extracting(DaySplit.Segment::seconds).allSatisfy(v -> assertThat(v).isEqualByComparingTo("86400"));
    assertThat(s).hasSize(3);
  }
}
