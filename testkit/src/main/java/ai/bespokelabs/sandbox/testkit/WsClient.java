package ai.bespokelabs.sandbox.testkit;

import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.http.WebSocket;
import io.vertx.core.http.WebSocketConnectOptions;
import io.vertx.core.json.JsonObject;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;

/**
 * A WebSocket client for tests and benchmarks on Vert.x's WebSocket client: text messages (JSON) are queued
 * for the caller's thread ({@link #nextJson}); binary messages go, whole, to a handler on the event loop; the
 * close status the server sent is kept ({@link #closeStatus}). Each text message is held to the
 * {@link StreamCheck}s on the class path as it is taken.
 */
public final class WsClient implements AutoCloseable {
  private static final Duration TIMEOUT = Duration.ofSeconds(30);

  private final String url;
  private final WebSocket webSocket;
  private final LinkedBlockingQueue<JsonObject> texts = new LinkedBlockingQueue<>();
  private final CompletableFuture<Integer> closed = new CompletableFuture<>();
  private final AtomicReference<Throwable> failure = new AtomicReference<>();

  private WsClient(String url, WebSocket webSocket, Consumer<Buffer> binary) {
    this.url = url;
    this.webSocket = webSocket;
    webSocket.textMessageHandler(text -> texts.add(new JsonObject(text)));
    webSocket.binaryMessageHandler(binary::accept);
    // a reset may follow the server's close frame (it closes while a message is still arriving): the status
    // decides when one came, else the failure
    webSocket.exceptionHandler(e -> failure.compareAndSet(null, e));
    webSocket.closeHandler(v -> {
      Short status = webSocket.closeStatusCode();
      if (status == null && failure.get() != null) {
        closed.completeExceptionally(failure.get());
      } else {
        closed.complete(status == null ? 1005 : status.intValue());
      }
    });
  }

  /** Connects to {@code url} (http or ws) with the bearer {@code key}; binary messages are dropped. */
  public static WsClient connect(String url, String key) {
    return connect(url, key, binary -> { });
  }

  /** Connects to {@code url} (http or ws) with the bearer {@code key}; binary messages go to {@code binary}. */
  public static WsClient connect(String url, String key, Consumer<Buffer> binary) {
    URI uri = URI.create(url);
    WebSocketConnectOptions options = new WebSocketConnectOptions().setHost(uri.getHost()).setPort(uri.getPort())
        .setURI(uri.getRawQuery() == null ? uri.getRawPath() : uri.getRawPath() + "?" + uri.getRawQuery())
        .putHeader(HttpHeaders.AUTHORIZATION, "Bearer " + key);
    return Clients.await(Clients.webSockets().connect(options).map(ws -> new WsClient(url, ws, binary)), TIMEOUT);
  }

  /** Sends a text message without waiting for it to be written (e.g. one the server will refuse). */
  public Future<Void> write(String text) {
    return webSocket.writeTextMessage(text);
  }

  /** Sends a text message and waits until it is written. */
  public void send(String text) {
    Clients.await(write(text), TIMEOUT);
  }

  /** The next text message, as JSON; fails when none arrives within 30 seconds. */
  public JsonObject nextJson() {
    try {
      JsonObject next = texts.poll(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
      if (next == null) {
        throw new AssertionError("no text message within " + TIMEOUT);
      }
      StreamChecks.webSocket(url, next);
      return next;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  /** The text messages received and not taken yet. */
  public List<JsonObject> pending() {
    List<JsonObject> pending = List.copyOf(texts);
    pending.forEach(message -> StreamChecks.webSocket(url, message));
    return pending;
  }

  /** The status of the server's close, once it came (waiting up to {@code timeout}). */
  public int closeStatus(Duration timeout) {
    try {
      return closed.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    } catch (ExecutionException e) {
      throw new IllegalStateException("the WebSocket failed", e.getCause());
    } catch (TimeoutException e) {
      throw new AssertionError("the WebSocket did not close within " + timeout, e);
    }
  }

  @Override
  public void close() {
    if (!closed.isDone()) {
      Clients.await(webSocket.close().otherwiseEmpty(), TIMEOUT);
    }
  }
}
