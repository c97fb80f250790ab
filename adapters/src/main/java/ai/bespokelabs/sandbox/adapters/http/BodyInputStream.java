package ai.bespokelabs.sandbox.adapters.http;

import io.vertx.core.Context;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClientResponse;
import java.io.IOException;
import java.io.InputStream;
import java.io.InterruptedIOException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A response body read as a blocking stream by a worker thread. The response is paused and asked for one
 * buffer at a time, the next only once the reader used up the previous one, so at most a buffer or two
 * wait in memory whatever the body's size. Build it on the response's context (where the headers arrive).
 */
public final class BodyInputStream extends InputStream {
  private static final Object END = new Object();
  private static final long IDLE_SECS = 120;

  private final HttpClientResponse response;
  private final Context context;
  private final LinkedBlockingQueue<Object> queue = new LinkedBlockingQueue<>();
  private Buffer current;
  private int pos;
  private boolean ended;
  /** The response ended on its context (read and written there only). */
  private boolean complete;

  public BodyInputStream(HttpClientResponse response, Context context) {
    this(response, context, false);
  }

  /** @param closeAtEnd close the connection once the body ended, so it is never reused */
  public BodyInputStream(HttpClientResponse response, Context context, boolean closeAtEnd) {
    this.response = response;
    this.context = context;
    response.pause();
    response.handler(queue::add);
    response.endHandler(v -> {
      complete = true;
      queue.add(END);
      if (closeAtEnd && response.request().connection() != null) {
        response.request().connection().close();
      }
    });
    response.exceptionHandler(queue::add);
    response.fetch(1);
  }

  @Override
  public int read() throws IOException {
    byte[] one = new byte[1];
    return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
  }

  @Override
  public int read(byte[] b, int off, int len) throws IOException {
    if (len == 0) {
      return 0;
    }
    while (current == null || pos >= current.length()) {
      if (ended) {
        return -1;
      }
      Object next;
      try {
        next = queue.poll(IDLE_SECS, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new InterruptedIOException("interrupted while reading a response");
      }
      if (next == null) {
        throw new IOException("the server stopped sending");
      }
      if (next == END) {
        ended = true;
        return -1;
      }
      if (next instanceof Throwable t) {
        ended = true;
        throw new IOException("the response broke off", t);
      }
      current = (Buffer) next;
      pos = 0;
      context.runOnContext(v -> response.fetch(1));
    }
    int n = Math.min(len, current.length() - pos);
    current.getBytes(pos, pos + n, b, off);
    pos += n;
    return n;
  }

  /** Stops the transfer: the stream is reset and its connection closed (the rest of the body is not wanted). */
  @Override
  public void close() {
    if (!ended) {
      ended = true;
      context.runOnContext(v -> {
        if (complete) {
          // the whole answer arrived: its connection may already serve another request, leave it alone
          return;
        }
        // the unread rest must not reach a pooled connection's next request: close the connection itself
        io.vertx.core.http.HttpConnection connection = response.request().connection();
        response.request().reset();
        if (connection != null) {
          connection.close();
        }
      });
    }
  }
}
