package ai.bespokelabs.sandbox.gateway.ops;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.turbo.TurboFilter;
import ch.qos.logback.core.spi.FilterReply;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Marker;

/**
 * Keeps anyone who can open a connection to a cluster port from filling the log: JGroups warns once for every
 * connection it could not accept (a failed TLS handshake: {@code JGRP000006}) and every packet of a foreign
 * protocol version ({@code JGRP000010}). Each of those passes at most once a minute; the next one that passes
 * is followed by a line saying how many were left out.
 */
public final class ClusterLogLimit extends TurboFilter {
  static final long EVERY_NANOS = TimeUnit.MINUTES.toNanos(1);
  static final List<String> LIMITED = List.of("JGRP000006", "JGRP000010");

  private final ConcurrentHashMap<String, long[]> seen = new ConcurrentHashMap<>();
  private final AtomicLong clock = new AtomicLong(-1);

  @Override
  public FilterReply decide(Marker marker, Logger logger, Level level, String format, Object[] params, Throwable t) {
    if (format == null || level == null || !level.isGreaterOrEqual(Level.WARN) || logger == null
        || !logger.getName().startsWith("org.jgroups")) {
      return FilterReply.NEUTRAL;
    }
    String code = code(format, params);
    if (code == null) {
      return FilterReply.NEUTRAL;
    }
    long now = now();
    long[] state = seen.computeIfAbsent(code, k -> new long[] {now - EVERY_NANOS, 0});
    long suppressed;
    synchronized (state) {
      if (now - state[0] < EVERY_NANOS) {
        state[1]++;
        return FilterReply.DENY;
      }
      state[0] = now;
      suppressed = state[1];
      state[1] = 0;
    }
    if (suppressed > 0) {
      logger.getLoggerContext().getLogger(ClusterLogLimit.class).warn(
          "{} more {} warnings of the cluster transport were left out since the last one", suppressed, code);
    }
    return FilterReply.NEUTRAL;
  }

  /** The limited code the message starts with (JGroups may pass it pre-formatted or as an argument). */
  private static String code(String format, Object[] params) {
    for (String c : LIMITED) {
      if (format.startsWith(c) || format.startsWith("%s") && params != null && params.length > 0
          && String.valueOf(params[0]).startsWith(c)) {
        return c;
      }
    }
    return null;
  }

  /** The time in nanoseconds; tests set it. */
  long now() {
    long fixed = clock.get();
    return fixed >= 0 ? fixed : System.nanoTime();
  }

  void setNanos(long nanos) {
    clock.set(nanos);
  }
}
