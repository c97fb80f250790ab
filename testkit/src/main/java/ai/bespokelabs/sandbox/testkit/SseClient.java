package ai.bespokelabs.sandbox.testkit;

import io.vertx.core.Context;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpClientResponse;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.json.JsonObject;
import io.vertx.core.parsetools.RecordParser;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A Server-Sent Events client for tests and benchmarks on Vert.x's HTTP client: the caller's thread takes one
 * event at a time ({@link #next}) while the event loop parses lines into a bounded queue, pausing the
 * response when the caller falls behind (so a slow reader exerts back-pressure, as a real client does).
 * Comments are skipped; several {@code data:} lines of one event are joined with a newline. Each event is held to
 * the {@link StreamCheck}s on the class path as it is taken.
 */
public final class SseClient implements AutoCloseable {
  /** One event: its id (or null), name and JSON data. */
  public record Event(String id, String name, JsonObject data) {
    /** The output bytes of a stdout/stderr event. */
    public byte[] bytes() {
      return data.containsKey("data") ? data.getString("data").getBytes(StandardCharsets.UTF_8)
          : Base64.getDecoder().decode(data.getString("data_b64"));
    }

    public boolean isOutput() {
      return "stdout".equals(name) || "stderr".equals(name);
    }
  }

  private static final Duration TIMEOUT = Duration.ofSeconds(120);
  /** The queue length at which the response is paused, and the one at which it is resumed. */
  private static final int HIGH = 32;
  private static final int LOW = 8;
  private static final Object END = new Object();

  public final int status;
  public final String contentType;
  private final String method;
  private final String url;
  private final HttpClientResponse response;
  private final Context context;
  private final BlockingQueue<Object> events = new LinkedBlockingQueue<>();
  private final RecordParser lines;
  private volatile boolean paused;
  private boolean ended;
  // the event being read (event loop only)
  private String id;
  private String name = "message";
  private StringBuilder data;

  /** Runs on the event loop as the response arrives, so no byte of the body is missed. */
  private SseClient(String method, String url, HttpClientResponse response) {
    this.method = method;
    this.url = url;
    this.response = response;
    this.context = Vertx.currentContext();
    this.status = response.statusCode();
    this.contentType = response.getHeader(HttpHeaders.CONTENT_TYPE) == null ? ""
        : response.getHeader(HttpHeaders.CONTENT_TYPE);
    this.lines = RecordParser.newDelimited("\n", response);
    lines.handler(this::line);
    lines.endHandler(v -> events.add(END));
    lines.exceptionHandler(events::add);
  }

  /**
   * Sends {@code method url} with {@code Accept: text/event-stream}, the bearer {@code key} and {@code body}
   * (JSON, or none when null), plus {@code headers} as name-value pairs; returns once the response head is in.
   */
  public static SseClient open(String url, String key, String method, String body, String... headers) {
    return open(Clients.http(), url, key, method, body, headers);
  }

  /**
   * As {@link #open}, for a reader that falls behind on purpose: its socket's receive buffer is fixed and small,
   * so bytes in flight measure the gateway's buffering, not the kernel's autotuned window on the client side.
   */
  public static SseClient openSlowReader(String url, String key, String method, String body, String... headers) {
    return open(Clients.smallReceiveBuffer(), url, key, method, body, headers);
  }

  private static SseClient open(HttpClient client, String url, String key, String method, String body,
      String... headers) {
    RequestOptions options = new RequestOptions().setAbsoluteURI(url).setMethod(HttpMethod.valueOf(method))
        .putHeader(HttpHeaders.AUTHORIZATION, "Bearer " + key).putHeader(HttpHeaders.ACCEPT, "text/event-stream");
    for (int i = 0; i < headers.length; i += 2) {
      options.putHeader(headers[i], headers[i + 1]);
    }
    if (body != null) {
      options.putHeader(HttpHeaders.CONTENT_TYPE, "application/json");
    }
    return Clients.await(client.request(options)
        .compose(request -> body == null ? request.send() : request.send(body))
        .map(response -> new SseClient(method, url, response)), TIMEOUT);
  }

  /** The next event; null at the end of the stream. */
  public Event next() {
    if (ended) {
      return null;
    }
    Object next;
    try {
      next = events.poll(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
    if (paused && events.size() <= LOW) {
      context.runOnContext(v -> {
        if (paused) {
          paused = false;
          lines.resume();
        }
      });
    }
    if (next == null) {
      throw new IllegalStateException("no event within " + TIMEOUT);
    }
    if (next instanceof Throwable t) {
      throw new IllegalStateException("the event stream failed", t);
    }
    if (next == END) {
      ended = true;
      return null;
    }
    Event event = (Event) next;
    StreamChecks.sse(method, url, event);
    return event;
  }

  private void line(Buffer buffer) {
    String line = buffer.toString(StandardCharsets.UTF_8);
    if (line.endsWith("\r")) {
      line = line.substring(0, line.length() - 1);
    }
    if (line.isEmpty()) {
      if (data != null) {
        if (events.size() + 1 >= HIGH) {
          paused = true;
          lines.pause();
        }
        events.add(new Event(id, name, new JsonObject(data.toString())));
      }
      id = null;
      name = "message";
      data = null;
    } else if (line.startsWith("id: ")) {
      id = line.substring(4);
    } else if (line.startsWith("event: ")) {
      name = line.substring(7);
    } else if (line.startsWith("data: ")) {
      data = (data == null ? new StringBuilder() : data.append('\n')).append(line.substring(6));
    }
    // a comment (":" ...) is skipped
  }

  /** Closes the connection (the server sees the client go), unless the stream already ended. */
  @Override
  public void close() {
    if (!ended) {
      Clients.await(response.request().connection().close().otherwiseEmpty(), Duration.ofSeconds(10));
    }
  }
}
