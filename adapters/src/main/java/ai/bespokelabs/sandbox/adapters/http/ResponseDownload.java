package ai.bespokelabs.sandbox.adapters.http;

import ai.bespokelabs.sandbox.adapters.spi.FileReader;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClientResponse;
import io.vertx.core.http.HttpConnection;
import java.io.IOException;
import java.util.ArrayDeque;

/**
 * A download read from a provider's HTTP answer as it arrives: the answer stays paused and is asked for one more buffer only
 * while a read still wants bytes, so nothing but a buffer or two is held whatever the file's size, and a
 * reader that stops reading stops the transfer (the provider waits on a full TCP window). Used on the
 * response's context only.
 */
public final class ResponseDownload implements FileReader {
  private final HttpClientResponse response;
  private final long size;
  private final ArrayDeque<Buffer> arrived = new ArrayDeque<>();
  private boolean ended;
  private boolean closed;
  private boolean serving;
  private Throwable failure;
  /** The read waiting for bytes, and what it gathered so far. */
  private Promise<Buffer> waiting;
  private int wanted;
  private Buffer gathered;

  public ResponseDownload(HttpClientResponse response, long size) {
    this.response = response;
    this.size = size;
    response.handler(b -> {
      arrived.add(b);
      serve();
    });
    response.endHandler(v -> {
      ended = true;
      serve();
    });
    response.exceptionHandler(t -> {
      failure = t;
      serve();
    });
  }

  @Override
  public long size() {
    return size;
  }

  @Override
  public Future<Buffer> read(int max) {
    if (waiting != null) {
      return Future.failedFuture(new IllegalStateException("a read is already waiting"));
    }
    if (closed) {
      return Future.failedFuture(new IOException("download closed"));
    }
    waiting = Promise.promise();
    wanted = max;
    gathered = Buffer.buffer(Math.min(max, 64 * 1024));
    Future<Buffer> f = waiting.future();
    serve();
    return f;
  }

  /**
   * Hands what arrived to the waiting read; asks for one more buffer while it wants more. Not re-entered: a
   * buffer that {@code fetch} delivers at once, or a read its completion starts, is served by the same loop.
   */
  private void serve() {
    if (serving) {
      return;
    }
    serving = true;
    try {
      while (waiting != null) {
        while (gathered.length() < wanted && !arrived.isEmpty()) {
          Buffer b = arrived.poll();
          int room = wanted - gathered.length();
          if (b.length() > room) {
            arrived.addFirst(b.slice(room, b.length()));
            b = b.slice(0, room);
          }
          gathered.appendBuffer(b);
        }
        Promise<Buffer> p = waiting;
        if (gathered.length() == wanted || (ended && arrived.isEmpty())) {
          waiting = null;
          p.complete(gathered.length() == 0 ? null : gathered);
        } else if (failure != null) {
          waiting = null;
          p.fail(new IOException("the download broke off", failure));
        } else {
          response.fetch(1);
          if (arrived.isEmpty() && !ended && failure == null) {
            return; // the handlers serve the rest as it arrives
          }
        }
      }
    } finally {
      serving = false;
    }
  }

  @Override
  public Future<Void> close() {
    if (!closed) {
      closed = true;
      if (waiting != null) {
        Promise<Buffer> p = waiting;
        waiting = null;
        p.fail(new IOException("download closed"));
      }
      if (!ended) {
        stop(response);
      }
    }
    return Future.succeededFuture();
  }

  /**
   * Stops an answer not read to its end: the request is reset and its connection closed, so the unread rest
   * never reaches a pooled connection's next request.
   */
  public static void stop(HttpClientResponse response) {
    HttpConnection connection = response.request().connection();
    response.request().reset();
    if (connection != null) {
      connection.close();
    }
  }
}
