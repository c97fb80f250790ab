package ai.bespokelabs.sandbox.testkit;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.PoolOptions;
import io.vertx.core.http.WebSocketClient;
import io.vertx.core.http.WebSocketClientOptions;
import java.time.Duration;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The Vert.x instance and clients behind {@link SseClient} and {@link WsClient}: one for the whole JVM, apart
 * from any gateway the JVM runs (so a test's client never shares the event loop of the server it measures).
 */
final class Clients {
  /** Frames and messages as large as the gateway sends or accepts, and a little more. */
  static final int MAX_WEBSOCKET_MESSAGE = 64 << 20;

  private static Vertx vertx;
  private static HttpClient http;
  private static HttpClient smallReceiveBuffer;
  private static WebSocketClient webSockets;

  private Clients() {}

  static synchronized Vertx vertx() {
    if (vertx == null) {
      vertx = Vertx.vertx(new VertxOptions().setEventLoopPoolSize(2).setWorkerPoolSize(1));
    }
    return vertx;
  }

  static synchronized HttpClient http() {
    if (http == null) {
      http = vertx().createHttpClient(new HttpClientOptions().setTcpNoDelay(true).setConnectTimeout(10_000)
          .setKeepAlive(false), new PoolOptions().setHttp1MaxSize(1024));
    }
    return http;
  }

  /**
   * A client whose sockets keep a fixed 256 KiB receive buffer: for readers that fall behind on purpose, so that
   * the kernel's receive-buffer autotuning (up to {@code tcp_rmem}'s maximum, 32 MiB on some hosts) does not
   * hide what the gateway itself holds back.
   */
  static synchronized HttpClient smallReceiveBuffer() {
    if (smallReceiveBuffer == null) {
      smallReceiveBuffer = vertx().createHttpClient(new HttpClientOptions().setTcpNoDelay(true)
          .setConnectTimeout(10_000).setKeepAlive(false).setReceiveBufferSize(256 << 10), new PoolOptions());
    }
    return smallReceiveBuffer;
  }

  static synchronized WebSocketClient webSockets() {
    if (webSockets == null) {
      webSockets = vertx().createWebSocketClient(new WebSocketClientOptions().setConnectTimeout(10_000)
          .setMaxFrameSize(MAX_WEBSOCKET_MESSAGE).setMaxMessageSize(MAX_WEBSOCKET_MESSAGE));
    }
    return webSockets;
  }

  /** Waits (on the caller's thread, never an event loop) for {@code future}; its failure is rethrown. */
  static <T> T await(Future<T> future, Duration timeout) {
    try {
      return future.toCompletionStage().toCompletableFuture().get(timeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    } catch (ExecutionException e) {
      throw e.getCause() instanceof RuntimeException r ? r : new IllegalStateException(e.getCause());
    } catch (TimeoutException e) {
      throw new IllegalStateException("no answer within " + timeout, e);
    }
  }
}
