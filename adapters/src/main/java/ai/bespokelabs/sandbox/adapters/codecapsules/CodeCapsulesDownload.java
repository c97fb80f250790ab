package ai.bespokelabs.sandbox.adapters.codecapsules;

import ai.bespokelabs.sandbox.adapters.spi.FileReader;
import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError.Outcome;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClientRequest;
import io.vertx.core.http.HttpClientResponse;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.RequestOptions;
import java.io.IOException;
import java.util.ArrayDeque;
import java.util.concurrent.TimeoutException;

/**
 * One download: {@code GET /sandboxes/{id}/files}, its response paused and pulled on demand. At most {@link #WINDOW}
 * response chunks (of at most 8 KiB) are asked for ahead of the reader, and one more each time the reader
 * took one, so a file of any size passes through a small, fixed amount of memory. A response that stalls
 * for the request timeout while the reader waits fails the read.
 */
final class CodeCapsulesDownload implements FileReader {
  /** Response chunks a download reads ahead of its reader. */
  static final int WINDOW = 16;

  /** A refusal (its status, retry hint and error code), mapped by the caller. */
  static final class Refused extends RuntimeException {
    final int status;
    final String retryAfter;
    final Buffer body;

    Refused(int status, String retryAfter, Buffer body) {
      super(null, null, false, false);
      this.status = status;
      this.retryAfter = retryAfter;
      this.body = body;
    }
  }

  private final Vertx vertx;
  private final long stallMs;
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

  private CodeCapsulesDownload(Vertx vertx, long stallMs) {
    this.vertx = vertx;
    this.stallMs = stallMs;
  }

  /**
   * Sends the request; completes once the headers arrived, with the declared size or -1 when the answer
   * declared none. A refusal fails it with {@link Refused}.
   */
  static Future<CodeCapsulesDownload> open(CodeCapsulesClient client, String resourceId, String path) {
    CodeCapsulesDownload d = new CodeCapsulesDownload(client.vertx(), client.settings().requestTimeout().toMillis());
    RequestOptions options = client.options(HttpMethod.GET, CodeCapsulesWire.files(resourceId, path));
    Promise<CodeCapsulesDownload> head = Promise.promise();
    long timer = d.vertx.setTimer(d.stallMs, id -> {
      if (head.tryFail(CodeCapsulesClient.transport(new TimeoutException("no answer"), "download"))) {
        d.close();
      }
    });
    client.http().request(options)
        .compose(req -> {
          d.request = req;
          return req.send();
        })
        .onComplete(ar -> {
          d.vertx.cancelTimer(timer);
          if (ar.failed()) {
            head.tryFail(CodeCapsulesClient.transport(ar.cause(), "download"));
            return;
          }
          HttpClientResponse resp = ar.result();
          resp.pause();
          if (resp.statusCode() != 200) {
            // the (small) error body is drained so the connection can be reused; its text is not kept
            int status = resp.statusCode();
            String retryAfter = resp.getHeader(CodeCapsulesWire.RETRY_AFTER_HEADER);
            resp.resume();
            resp.body().onComplete(b -> head.tryFail(new Refused(status, retryAfter, b.succeeded() ? b.result() : null)));
            return;
          }
          d.sized(resp);
          if (!head.tryComplete(d)) {
            d.request.reset(); // given up on meanwhile
            return;
          }
          d.answered(resp);
        });
    return head.future();
  }

  /** The declared size, known before the download is handed out. */
  private void sized(HttpClientResponse resp) {
    String length = resp.getHeader("Content-Length");
    String encoding = resp.getHeader("Content-Encoding");
    if (length != null && (encoding == null || encoding.equalsIgnoreCase("identity"))) {
      try {
        size = Long.parseLong(length.trim());
      } catch (NumberFormatException ignored) {
        // unknown: -1
      }
    }
  }

  /** The size found by a listing when the answer declared none. */
  void sized(long size) {
    this.size = size;
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
          fail(CodeCapsulesClient.transport(new TimeoutException("download stalled"), "download"));
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
        fail(CodeCapsulesClient.of(ErrorCode.COMMAND_FAILED, "download", true, Outcome.FAILED));
        return;
      }
      answer(out);
      if (taken > 0 && !complete && !closed) {
        response.fetch(taken); // may hand over queued chunks at once: the read is answered first
      }
      return;
    }
    if (failure != null) {
      fail(CodeCapsulesClient.transport(failure, "download"));
    } else if (complete) {
      if (size >= 0 && received != size) {
        fail(CodeCapsulesClient.of(ErrorCode.COMMAND_FAILED, "download", true, Outcome.FAILED));
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
  int queued() {
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
