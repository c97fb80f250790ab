package ai.bespokelabs.sandbox.ledger;

import java.math.BigDecimal;
import java.math.MathContext;
import java.time.Instant;
import java.time.LocalDate;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;

/** Cuts a billable interval ending at {@code end} at every UTC midnight it crosses. */
public final class DaySplit {
  /** One piece of the interval: its start and length in seconds. */
  public record Segment(OffsetDateTime start, BigDecimal seconds) {}

  private DaySplit() {}

  /** The segments of {@code [end - seconds, end]}, oldest first; none when {@code seconds <= 0}. */
  public static List<Segment> split(OffsetDateTime end, BigDecimal seconds) {
    List<Segment> out = new ArrayList<>();
    if (seconds.signum() <= 0) {
      return out;
    }
    Instant stop = end.toInstant();
    long nanos = seconds.movePointRight(9).setScale(0, java.math.RoundingMode.HALF_UP).longValueExact();
    Instant cursor = stop.minusNanos(nanos);
    BigDecimal left = seconds;
    while (left.signum() > 0) {
      Instant midnight = LocalDate.ofInstant(cursor, ZoneOffset.UTC).plusDays(1).atStartOfDay().toInstant(ZoneOffset.UTC);
      if (!midnight.isBefore(stop)) {
        out.add(new Segment(cursor.atOffset(ZoneOffset.UTC), left));
        break;
      }
      BigDecimal part = BigDecimal.valueOf(midnight.getEpochSecond() - cursor.getEpochSecond())
          .add(BigDecimal.valueOf(midnight.getNano() - cursor.getNano(), 9), MathContext.DECIMAL128)
          .stripTrailingZeros();
      out.add(new Segment(cursor.atOffset(ZoneOffset.UTC), part));
      left = left.subtract(part);
      cursor = midnight;
    }
    return out;
  }
}
