package ai.bespokelabs.sandbox.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.gateway.TestGateway.Resp;
import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.classic.spi.IThrowableProxy;
import ch.qos.logback.classic.spi.StackTraceElementProxy;
import ch.qos.logback.core.read.ListAppender;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.slf4j.LoggerFactory;

/**
 * What a backend's gateway test keeps to show that a provider credential never leaves the gateway: every
 * response body the test saw and every log event while it ran, the gateway's own at debug level. At the end
 * ({@link #assertNeverLeaked}) the credentials are in none of them and in no database row.
 */
final class SecretWatch {
  private static final Logger ROOT = (Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
  private static final Logger OURS = (Logger) LoggerFactory.getLogger("ai.bespokelabs");
  private static final org.slf4j.Logger CANARY = LoggerFactory.getLogger("ai.bespokelabs.sandbox.test.SecretWatch");

  private final ListAppender<ILoggingEvent> logs = new ListAppender<>();
  private final List<String> bodies = new CopyOnWriteArrayList<>();
  private final Level oursBefore;

  private SecretWatch() {
    logs.start();
    ROOT.addAppender(logs);
    oursBefore = OURS.getLevel();
    OURS.setLevel(Level.DEBUG);
    // what the final check reads of an event, shown to reach it
    org.slf4j.MDC.put("canary", "canary-mdc");
    try {
      CANARY.debug("watching for provider credentials {}", "canary-argument",
          new IllegalStateException("outer", new IllegalStateException("canary-cause")));
    } finally {
      org.slf4j.MDC.remove("canary");
    }
  }

  /** Starts capturing every log event, ours at debug level. */
  static SecretWatch start() {
    return new SecretWatch();
  }

  /** Keeps {@code r}'s body for the final check and hands {@code r} back. */
  Resp seen(Resp r) {
    bodies.add(r.body());
    return r;
  }

  /** Keeps a body read some other way (a file download, a raw HTTP response). */
  void seen(String body) {
    bodies.add(body);
  }

  /**
   * None of {@code secrets} is in a response body the test saw, a log event (message, arguments, MDC, every
   * throwable of its chain with its stack) or a row of {@code gw}'s database, which holds {@code backend}'s
   * sandboxes; and there was something to look at in each.
   */
  void assertNeverLeaked(TestGateway gw, String backend, String... secrets) {
    String db = DatabaseDump.of(gw);
    assertThat(db).as("the dump holds the sandboxes").contains(backend);
    assertThat(bodies).as("response bodies were kept").isNotEmpty();
    List<String> events = logs.list.stream().map(SecretWatch::logText).toList();
    assertThat(events).as("the gateway's log events were captured")
        .anyMatch(t -> t.startsWith("INFO ai.bespokelabs.sandbox.gateway."));
    assertThat(events).as("a debug event is captured with its MDC, arguments and stack").anyMatch(t -> t.startsWith(
        "DEBUG " + CANARY.getName()) && t.contains("canary-mdc") && t.contains("canary-argument")
        && t.contains("canary-cause") && t.contains(SecretWatch.class.getName() + ".<init>"));
    for (String secret : secrets) {
      assertThat(db).as("the provider credential is in no database row").doesNotContain(secret);
      assertThat(bodies).as("the provider credential never reaches a client").noneMatch(b -> b.contains(secret));
      assertThat(events).as("the provider credential is in no log event").noneMatch(t -> t.contains(secret));
    }
  }

  /** Stops capturing and puts our log level back. */
  void stop() {
    ROOT.detachAppender(logs);
    OURS.setLevel(oursBefore);
  }

  /**
   * A log event as text: level, logger, message, arguments, MDC and every throwable in its chain with their
   * stack frames and suppressed ones.
   */
  static String logText(ILoggingEvent e) {
    StringBuilder b = new StringBuilder().append(e.getLevel()).append(' ').append(e.getLoggerName()).append('\n')
        .append(e.getFormattedMessage()).append('\n').append(e.getMDCPropertyMap());
    if (e.getArgumentArray() != null) {
      for (Object a : e.getArgumentArray()) {
        b.append('\n').append(a);
      }
    }
    for (IThrowableProxy t = e.getThrowableProxy(); t != null; t = t.getCause()) {
      b.append('\n').append(t.getClassName()).append(": ").append(t.getMessage());
      for (StackTraceElementProxy f : t.getStackTraceElementProxyArray()) {
        b.append('\n').append(f.getSTEAsString());
      }
      for (IThrowableProxy s : t.getSuppressed()) {
        b.append('\n').append(s.getClassName()).append(": ").append(s.getMessage());
      }
    }
    return b.toString();
  }
}
