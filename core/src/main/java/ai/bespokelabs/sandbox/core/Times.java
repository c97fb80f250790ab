package ai.bespokelabs.sandbox.core;

import java.time.Clock;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.temporal.ChronoUnit;

/**
 * The wire form of timestamps: ISO-8601 in UTC with {@code +00:00}, microsecond precision; and the current time at
 * that precision.
 */
public final class Times {
  private static final DateTimeFormatter ISO = DateTimeFormatter.ofPattern("uuuu-MM-dd'T'HH:mm:ss.SSSSSSxxx");

  private Times() {}

  /** Now by {@code clock}, in UTC, at the microsecond precision PostgreSQL stores. */
  public static OffsetDateTime now(Clock clock) {
    return OffsetDateTime.now(clock).withOffsetSameInstant(ZoneOffset.UTC).truncatedTo(ChronoUnit.MICROS);
  }

  public static String iso(OffsetDateTime t) {
    return t == null ? null : ISO.format(t.withOffsetSameInstant(ZoneOffset.UTC));
  }
}
