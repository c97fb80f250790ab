package ai.bespokelabs.sandbox.adapters.http;

import ai.bespokelabs.sandbox.adapters.spi.FileReader;
import io.vertx.core.Future;
import io.vertx.core.MultiMap;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpClientRequest;
import io.vertx.core.http.HttpClientResponse;
import io.vertx.core.http.RequestOptions;
import java.io.IOException;
import java.util.ArrayDeque;
import java.util.concurrent.TimeoutException;

/**
 * One file download over a provider's HTTP {@code GET}, its response paused and pulled on demand. At most
 * {@link #WINDOW} response chunks are asked for ahead of the reader, and one more each time the reader took
 * one, so a file of any size passes through a small, fixed amount of memory. A response that stalls for the
 * stall time while the reader waits fails the read, and so does one that delivers more or fewer bytes than
 * its known size. Used on the HTTP client's context only.
 */
public final class WindowedDownload implements FileReader {
  /** Response chunks a download reads ahead of its reader. */
  public static final int WINDOW = 16;

  /** How a backend names a download's failures in the error contract. */
  public interface Failures {
    /** No answer, a stall or a broken connection. */
    Throwable transport(Throwable cause);

    /** The bytes received disagree with the file's size (the transfer is retryable). */
    Throwable sizeMismatch();

    static Failures of(java.util.function.Function<Throwable, Throwable> transport,
        java.util.function.Supplier<Throwable> sizeMismatch) {
      return new Failures() {
        @Override
        public Throwable transport(Throwable cause) {
          return transport.apply(cause);
        }

        @Override
        public Throwable sizeMismatch() {
          return sizeMismatch.get();
        }
      };
    }
  }

  /** A refusal (any status but 200), its small body drained and kept for the caller to map. */
  public static final class Refused extends RuntimeException {
    public final int status;
    public final MultiMap headers;
    public final Buffer body;

    Refused(int status, MultiMap headers, Buffer body) {
      super(null, null, false, false);
      this.status = status;
      this.headers = headers;
      this.body = body;
    }
  }

  private final Vertx vertx;
  private final long stallMs;
  private final Failures failures;
  private final ArrayDeque<Buffer> queue = new ArrayDeque<>();
  private HttpClientRequest request;
  private HttpClientResponse response;
  private long size = -1;
  private long received;
  private boolean complete;
  private boolean closed;
  private Throwable failure;
  /** A read waiting for the network, its size and its stall timer. */
  private Promise<Buffer> waiting;
  private int waitingMax;
  private long stallTimer = -1;

  private WindowedDownload(Vertx vertx, long stallMs, Failures failures) {
    this.vertx = vertx;
    this.stallMs = stallMs;
    this.failures = failures;
  }

  /**
   * Sends the request; completes once the headers arrived, with the declared size (Content-Length of an
   * unencoded answer) or -1 when the answer declared none. A refusal fails it with {@link Refused}; no answer
   * within {@code stallMs} fails it with the backend's transport error.
   */
  public static Future<WindowedDownload> open(Vertx vertx, HttpClient http, RequestOptions options, long stallMs,
      Failures failures) {
    WindowedDownload d = new WindowedDownload(vertx, stallMs, failures);
    Promise<WindowedDownload> head = Promise.promise();
    long timer = vertx.setTimer(stallMs, id -> {
      if (head.tryFail(failures.transport(new TimeoutException("no answer")))) {
        d.close();
      }
    });
    http.request(options)
        .compose(req -> {
          d.request = req;
          return req.send();
        })
        .onComplete(ar -> {
          vertx.cancelTimer(timer);
          if (ar.failed()) {
            head.tryFail(failures.transport(ar.cause()));
            return;
          }
          HttpClientResponse resp = ar.result();
          resp.pause();
          if (resp.statusCode() != 200) {
            // the (small) error body is drained so the connection can be reused
            int status = resp.statusCode();
            MultiMap headers = resp.headers();
            resp.resume();
            resp.body().onComplete(b -> head.tryFail(new Refused(status, headers, b.succeeded() ? b.result() : null)));
            return;
          }
          d.size = declaredSize(resp);
          if (!head.tryComplete(d)) {
            d.request.reset(); // given up on meanwhile
            return;
          }
          d.answered(resp);
        });
    return head.future();
  }

  private static long declaredSize(HttpClientResponse resp) {
    String length = resp.getHeader("Content-Length");
    String encoding = resp.getHeader("Content-Encoding");
    if (length != null && (encoding == null || encoding.equalsIgnoreCase("identity"))) {
      try {
        return Long.parseLong(length.trim());
      } catch (NumberFormatException ignored) {
        // unknown
      }
    }
    return -1;
  }

  private void answered(HttpClientResponse resp) {
    response = resp;
    resp.handler(chunk -> {
      if (!closed) {
        queue.add(chunk);
        serve();
      }
    });
    resp.exceptionHandler(t -> {
      if (failure == null) {
        failure = t;
      }
      serve();
    });
    resp.endHandler(v -> {
      complete = true;
      serve();
    });
    resp.fetch(WINDOW);
  }

  /** The size found another way (a stat, a listing) when the answer declared none. */
  public void sized(long size) {
    this.size = size;
  }

  @Override
  public long size() {
    return size;
  }

  @Override
  public Future<Buffer> read(int max) {
    if (closed) {
      return Future.failedFuture(new IOException("download closed"));
    }
    if (waiting != null) {
      return Future.failedFuture(new IllegalStateException("a read is already waiting"));
    }
    Promise<Buffer> read = Promise.promise();
    waiting = read;
    waitingMax = max;
    serve();
    if (waiting == read) {
      stallTimer = vertx.setTimer(stallMs, id -> {
        stallTimer = -1;
        if (waiting == read) {
          fail(failures.transport(new TimeoutException("download stalled")));
        }
      });
    }
    return read.future();
  }

  /** Answers a waiting read from what arrived: chunks up to its size, the end, or the failure. */
  private void serve() {
    if (waiting == null) {
      return;
    }
    if (!queue.isEmpty()) {
      Buffer out = Buffer.buffer();
      int taken = 0;
      while (!queue.isEmpty() && out.length() < waitingMax) {
        Buffer chunk = queue.peek();
        int n = Math.min(waitingMax - out.length(), chunk.length());
        if (n == chunk.length()) {
          out.appendBuffer(queue.poll());
          taken++;
        } else {
          out.appendBuffer(chunk, 0, n);
          queue.poll();
          queue.addFirst(chunk.getBuffer(n, chunk.length()));
        }
      }
      received += out.length();
      if (size >= 0 && received > size) {
        fail(failures.sizeMismatch());
        return;
      }
      answer(out);
      if (taken > 0 && !complete && !closed) {
        response.fetch(taken); // may hand over queued chunks at once: the read is answered first
      }
      return;
    }
    if (failure != null) {
      fail(failures.transport(failure));
    } else if (complete) {
      if (size >= 0 && received != size) {
        fail(failures.sizeMismatch());
      } else {
        answer(null);
      }
    }
  }

  private void answer(Buffer chunk) {
    Promise<Buffer> p = waiting;
    waiting = null;
    if (stallTimer >= 0) {
      vertx.cancelTimer(stallTimer);
      stallTimer = -1;
    }
    p.complete(chunk);
  }

  /** Fails the waiting read and ends the download. */
  private void fail(Throwable t) {
    Promise<Buffer> p = waiting;
    waiting = null;
    close();
    if (p != null) {
      p.fail(t);
    }
  }

  /** Chunks read ahead and not yet taken (for tests). */
  public int queued() {
    return queue.size();
  }

  /** Ends the download; a response not read to its end is reset, so its connection is not reused. */
  @Override
  public Future<Void> close() {
    if (closed) {
      return Future.succeededFuture();
    }
    closed = true;
    if (stallTimer >= 0) {
      vertx.cancelTimer(stallTimer);
      stallTimer = -1;
    }
    if (request != null && !complete) {
      request.reset();
    }
    queue.clear();
    if (waiting != null) {
      Promise<Buffer> p = waiting;
      waiting = null;
      p.fail(new IOException("download closed"));
    }
    return Future.succeededFuture();
  }
}
