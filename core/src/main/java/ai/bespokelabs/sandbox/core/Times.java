package ai.bespokelabs.sandbox.core;

import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;

/** The wire form of timestamps: ISO-8601 in UTC with {@code +00:00}, microsecond precision. */
public final class Times {
  private static final DateTimeFormatter ISO = DateTimeFormatter.ofPattern("uuuu-MM-dd'T'HH:mm:ss.SSSSSSxxx");

  private Times() {}

  public static String iso(OffsetDateTime t) {
    return t == null ? null : ISO.format(t.withOffsetSameInstant(ZoneOffset.UTC));
  }
}
