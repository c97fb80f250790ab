package ai.bespokelabs.sandbox.gateway.ops;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import org.junit.jupiter.api.Test;

/** A flood of failed cluster connections leaves one warning a minute, and says how many it left out. */
class ClusterLogLimitTest {
  @Test
  void a_flood_of_transport_warnings_passes_once_a_minute_with_the_count_of_the_rest() {
    LoggerContext context = new LoggerContext();
    ClusterLogLimit limit = new ClusterLogLimit();
    limit.setNanos(1_000_000_000_000L);
    context.addTurboFilter(limit);
    ListAppender<ILoggingEvent> out = new ListAppender<>();
    out.setContext(context);
    out.start();
    Logger root = context.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
    root.addAppender(out);
    Logger tcp = context.getLogger("org.jgroups.protocols.TCP");
    for (int i = 0; i < 1000; i++) {
      tcp.warn("JGRP000006: 10.0.0.1:7800: failed accepting connection from peer SSLSocket[port=" + i + "]");
    }
    tcp.warn("JGRP000032: something else the transport says");
    context.getLogger("ai.bespokelabs.sandbox.gateway").warn("JGRP000006 in a line of ours");
    tcp.info("JGRP000006: below WARN, left to the level");
    assertThat(out.list).extracting(ILoggingEvent::getFormattedMessage).containsExactly(
        "JGRP000006: 10.0.0.1:7800: failed accepting connection from peer SSLSocket[port=0]",
        "JGRP000032: something else the transport says", "JGRP000006 in a line of ours",
        "JGRP000006: below WARN, left to the level");

    out.list.clear();
    limit.setNanos(1_000_000_000_000L + ClusterLogLimit.EVERY_NANOS);
    tcp.warn("JGRP000006: 10.0.0.1:7800: failed accepting connection from peer SSLSocket[port=2000]");
    assertThat(out.list).extracting(ILoggingEvent::getFormattedMessage).containsExactly(
        "999 more JGRP000006 warnings of the cluster transport were left out since the last one",
        "JGRP000006: 10.0.0.1:7800: failed accepting connection from peer SSLSocket[port=2000]");
    assertThat(out.list).extracting(ILoggingEvent::getLevel).containsOnly(Level.WARN);
  }
}
