package ai.bespokelabs.sandbox.client;

import com.fasterxml.jackson.databind.JsonNode;
import java.net.URI;
import java.net.http.WebSocket;
import java.net.http.WebSocketHandshakeException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Queue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The events of one execution over the gateway's WebSocket attach route, as a {@link Flow.Publisher} for a
 * single subscriber. When the connection drops before the exit event it reconnects with {@code ?after=} the
 * last sequence number delivered, so every output chunk arrives exactly once and in order (the gateway's
 * journal holds what was printed meanwhile; output that already left it arrives as one {@link StreamEvent.Gap}).
 * The socket is read only as fast as the subscriber requests events, so a slow subscriber slows the program
 * rather than filling memory.
 */
public final class ExecutionStream implements Flow.Publisher<StreamEvent> {
  private static final int HIGH_WATER = 64;
  private static final int LOW_WATER = 16;

  private final Transport transport;
  private final String path;
  private final int maxReconnects;
  private final Queue<StreamEvent> queue = new ConcurrentLinkedQueue<>();
  private final AtomicInteger queued = new AtomicInteger();
  private final AtomicLong demand = new AtomicLong();
  private final AtomicInteger wip = new AtomicInteger();
  private final CompletableFuture<ExecutionResult> result = new CompletableFuture<>();
  private final AtomicInteger connections = new AtomicInteger();
  private volatile long lastSeq;
  private volatile Flow.Subscriber<? super StreamEvent> subscriber;
  private volatile WebSocket socket;
  private volatile WebSocket paused;
  private volatile boolean done;
  private volatile boolean cancelled;
  private volatile Throwable failure;
  private int failedTries;

  ExecutionStream(Transport transport, String sandboxId, String executionId, long after, int maxReconnects) {
    this.transport = transport;
    this.path = "/v1/sandboxes/" + Transport.segment(sandboxId) + "/executions/" + Transport.segment(executionId)
        + "/ws";
    this.lastSeq = after;
    this.maxReconnects = maxReconnects;
  }

  /**
   * Completes with the stored result once the exit event was handed to the subscriber (so after every output
   * chunk), exceptionally when the stream failed.
   */
  public CompletableFuture<ExecutionResult> result() {
    return result;
  }

  /** The sequence number of the last event received (the resume point of the next connection). */
  public long lastSeq() {
    return lastSeq;
  }

  /** How many WebSocket connections this stream has opened (1 without a drop). */
  public int connections() {
    return connections.get();
  }

  @Override
  public void subscribe(Flow.Subscriber<? super StreamEvent> s) {
    synchronized (this) {
      if (subscriber != null) {
        s.onSubscribe(new Flow.Subscription() {
          @Override
          public void request(long n) {
          }

          @Override
          public void cancel() {
          }
        });
        s.onError(new IllegalStateException("an ExecutionStream takes a single subscriber"));
        return;
      }
      subscriber = s;
    }
    s.onSubscribe(new Flow.Subscription() {
      @Override
      public void request(long n) {
        if (n <= 0) {
          fail(new IllegalArgumentException("request must be positive (rule 3.9)"));
          return;
        }
        demand.getAndAccumulate(n, (a, b) -> a + b < 0 ? Long.MAX_VALUE : a + b);
        drain();
      }

      @Override
      public void cancel() {
        cancelled = true;
        result.completeExceptionally(new java.util.concurrent.CancellationException("the subscriber cancelled"));
        WebSocket ws = socket;
        if (ws != null) {
          ws.abort();
        }
      }
    });
    connect();
  }

  private void connect() {
    if (cancelled || done) {
      return;
    }
    connections.incrementAndGet();
    URI http = transport.request(path, java.util.Map.of("after", lastSeq)).build().uri();
    URI ws = URI.create(http.toString().replaceFirst("^http", "ws"));
    WebSocket.Builder b = transport.http.newWebSocketBuilder().connectTimeout(transport.timeout);
    if (transport.apiKey != null) {
      b.header("Authorization", "Bearer " + transport.apiKey);
    }
    b.buildAsync(ws, new Listener()).whenComplete((s, e) -> {
      if (e != null) {
        Throwable cause = e instanceof CompletionException ? e.getCause() : e;
        if (cause instanceof WebSocketHandshakeException h && h.getResponse().statusCode() < 500) {
          Object body = h.getResponse().body();
          byte[] bytes = body instanceof String str ? str.getBytes(StandardCharsets.UTF_8) : new byte[0];
          fail(SandboxException.of(h.getResponse().statusCode(), bytes));
        } else {
          reconnect(cause);
        }
      }
    });
  }

  private synchronized void reconnect(Throwable cause) {
    if (done || cancelled) {
      return;
    }
    if (++failedTries > maxReconnects) {
      fail(new java.io.UncheckedIOException("the stream dropped and did not come back after " + maxReconnects
          + " tries: " + cause, cause instanceof java.io.IOException io ? io : new java.io.IOException(cause)));
      return;
    }
    long delay = Math.min(2000, 100L << Math.min(failedTries - 1, 5));
    CompletableFuture.delayedExecutor(delay, TimeUnit.MILLISECONDS).execute(this::connect);
  }

  /** Handles one complete JSON frame of the connection that is current. */
  private synchronized void frame(JsonNode f) {
    failedTries = 0;
    String type = f.path("type").asText();
    long seq = f.path("seq").asLong(-1);
    switch (type) {
      case "stdout", "stderr" -> {
        if (seq > lastSeq) {
          lastSeq = seq;
          byte[] data = f.has("data_b64") ? Base64.getDecoder().decode(f.get("data_b64").asText())
              : f.path("data").asText().getBytes(StandardCharsets.UTF_8);
          enqueue(new StreamEvent.OutputChunk(type, seq, data));
        }
      }
      case "notice" -> {
        if (seq > lastSeq) {
          lastSeq = seq;
          enqueue(new StreamEvent.Notice(seq, f.path("message").asText()));
        }
      }
      case "gap" -> {
        if (seq > lastSeq || f.path("to_seq").asLong() > lastSeq) {
          lastSeq = Math.max(seq, f.path("to_seq").asLong());
          enqueue(new StreamEvent.Gap(seq, f.path("from_seq").asLong(), f.path("to_seq").asLong(),
              f.path("bytes").isNumber() ? f.get("bytes").asLong() : null, f.path("message").asText()));
        }
      }
      case "exit" -> {
        ExecutionResult r = Json.convert(f, ExecutionResult.class);
        done = true;
        enqueue(new StreamEvent.Exit(r));
      }
      case "error" -> {
        if (seq < 0) {
          fail(new SandboxException(0, f.path("message").asText("stream error"), "stream_error", false, f));
        }
        // with a seq the gateway dropped this client for reading too slowly: the close that follows resumes
      }
      default -> {
        // started and future event types carry nothing a subscriber needs
      }
    }
  }

  private void enqueue(StreamEvent event) {
    queue.add(event);
    queued.incrementAndGet();
    drain();
  }

  private void fail(Throwable t) {
    synchronized (this) {
      if (done) {
        return;
      }
      done = true;
      failure = t;
    }
    result.completeExceptionally(t);
    WebSocket ws = socket;
    if (ws != null) {
      ws.abort();
    }
    drain();
  }

  private void drain() {
    if (wip.getAndIncrement() != 0) {
      return;
    }
    Flow.Subscriber<? super StreamEvent> s = subscriber;
    do {
      while (!cancelled && demand.get() > 0) {
        StreamEvent e = queue.poll();
        if (e == null) {
          break;
        }
        queued.decrementAndGet();
        demand.decrementAndGet();
        s.onNext(e);
        if (e instanceof StreamEvent.Exit x) {
          cancelled = true;
          s.onComplete();
          result.complete(x.result());
        }
      }
      WebSocket p = paused;
      if (p != null && queued.get() < LOW_WATER) {
        paused = null;
        p.request(1);
      }
      Throwable t = failure;
      if (t != null && !cancelled && queue.isEmpty()) {
        cancelled = true;
        s.onError(t);
      }
    } while (wip.decrementAndGet() != 0);
  }

  private final class Listener implements WebSocket.Listener {
    private final StringBuilder text = new StringBuilder();

    @Override
    public void onOpen(WebSocket ws) {
      socket = ws;
      if (cancelled) {
        ws.abort();
        return;
      }
      ws.request(1);
    }

    @Override
    public CompletionStage<?> onText(WebSocket ws, CharSequence data, boolean last) {
      text.append(data);
      if (last && ws == socket) {
        JsonNode f = Json.tree(text.toString());
        text.setLength(0);
        frame(f);
      }
      more(ws);
      return null;
    }

    @Override
    public CompletionStage<?> onBinary(WebSocket ws, ByteBuffer data, boolean last) {
      more(ws);
      return null;
    }

    @Override
    public CompletionStage<?> onClose(WebSocket ws, int statusCode, String reason) {
      if (ws == socket && !done) {
        reconnect(new java.io.IOException("closed with " + statusCode + " " + reason));
      }
      return null;
    }

    @Override
    public void onError(WebSocket ws, Throwable error) {
      if (ws == socket && !done) {
        reconnect(error);
      }
    }

    private void more(WebSocket ws) {
      if (done || cancelled) {
        return;
      }
      if (queued.get() < HIGH_WATER) {
        ws.request(1);
      } else {
        paused = ws;
        if (queued.get() < LOW_WATER && paused == ws) {
          paused = null;
          ws.request(1);
        }
      }
    }
  }
}
