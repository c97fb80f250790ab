package ai.bespokelabs.sandbox.core.log;

import io.vertx.core.Context;
import io.vertx.core.MultiMap;
import io.vertx.core.Vertx;
import io.vertx.core.eventbus.EventBus;
import io.vertx.core.internal.ContextInternal;
import io.vertx.core.internal.VertxBootstrap;
import io.vertx.core.spi.VertxServiceProvider;
import io.vertx.core.spi.context.storage.ContextLocal;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * What a log line is about: the request, organization, sandbox and execution, kept on the Vert.x duplicated
 * context of the work (one per HTTP request and per event-bus message), so concurrent requests on one event
 * loop never mix theirs, unlike a thread-local MDC. Carried across the event bus in message headers, so an
 * adapter's lines name the request that caused them. Values are ids the gateway made or validated; nothing
 * else (and never a secret) may be put here.
 */
public final class LogContext implements VertxServiceProvider {
  public static final String REQUEST_ID = "request_id";
  public static final String ORGANIZATION_ID = "organization_id";
  public static final String SANDBOX_ID = "sandbox_id";
  public static final String EXECUTION_ID = "execution_id";
  public static final List<String> FIELDS = List.of(REQUEST_ID, ORGANIZATION_ID, SANDBOX_ID, EXECUTION_ID);
  private static final String HEADER_PREFIX = "log-";
  private static final Pattern SAFE = Pattern.compile("[A-Za-z0-9_.:-]{1,128}");

  /** Registered when Vert.x discovers this provider, before any instance captures the known locals. */
  @SuppressWarnings({"unchecked", "rawtypes"})
  private static final ContextLocal<Map<String, String>> LOCAL =
      (ContextLocal) ContextLocal.registerLocal(Map.class, m -> new LinkedHashMap<>((Map<String, String>) m));

  @Override
  public void init(VertxBootstrap bootstrap) {
    // nothing: loading this class registered the local
  }

  /** Names {@code value} for {@code field} in the current work's context; ignored outside one. */
  public static void put(String field, String value) {
    Map<String, String> fields = fields(true);
    if (fields != null && value != null && SAFE.matcher(value).matches()) {
      fields.put(field, value);
    }
  }

  /** The current work's fields (empty outside a request or message). */
  public static Map<String, String> current() {
    Map<String, String> fields = fields(false);
    return fields == null ? Map.of() : fields;
  }

  private static Map<String, String> fields(boolean create) {
    Context c = Vertx.currentContext();
    // only a duplicated context belongs to one request or message; an event loop's own is shared by all
    if (!(c instanceof ContextInternal ctx) || !ctx.isDuplicate()) {
      return null;
    }
    return create ? ctx.getLocal(LOCAL, LinkedHashMap::new) : ctx.getLocal(LOCAL);
  }

  /**
   * Carries the fields across {@code bus}: a message sent from a request's work takes them as headers, and
   * its handler's context gets them back (without overwriting what the receiver already knows).
   */
  public static void carryOver(EventBus bus) {
    bus.addOutboundInterceptor(dc -> {
      Map<String, String> fields = current();
      if (!fields.isEmpty()) {
        MultiMap headers = dc.message().headers();
        fields.forEach((k, v) -> {
          if (!headers.contains(HEADER_PREFIX + k)) {
            headers.add(HEADER_PREFIX + k, v);
          }
        });
      }
      dc.next();
    });
    bus.addInboundInterceptor(dc -> {
      MultiMap headers = dc.message().headers();
      for (String field : FIELDS) {
        String v = headers.get(HEADER_PREFIX + field);
        if (v != null && !current().containsKey(field)) {
          put(field, v);
        }
      }
      dc.next();
    });
  }
}
