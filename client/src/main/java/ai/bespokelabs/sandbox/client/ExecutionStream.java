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
import java.util.concurrent.atomic.AtomicBoolean;
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
  private final java.time.Duration heartbeat;
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

  ExecutionStream(Transport transport, String sandboxId, String executionId, long after, int maxReconnects,
      java.time.Duration heartbeat) {
    this.transport = transport;
    this.path = "/v1/sandboxes/" + Transport.segment(sandboxId) + "/executions/" + Transport.segment(executionId)
        + "/ws";
    this.lastSeq = after;
    this.maxReconnects = maxReconnects;
    this.heartbeat = heartbeat;
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
          fail(new SandboxException(0, f.path("message").asText("stream error"), null, false, f));
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

  /**
   * One connection. It ends once (by a close, an error, a failed ping or silence) and then asks for the next:
   * pings every heartbeat find a connection that died without a word (a cut cable, a proxy that dropped it),
   * which the JDK's WebSocket does not always report.
   */
  private final class Listener implements WebSocket.Listener {
    private final StringBuilder text = new StringBuilder();
    private final AtomicBoolean gone = new AtomicBoolean();
    private volatile long lastHeard = System.nanoTime();
    private volatile CompletableFuture<WebSocket> ping = CompletableFuture.completedFuture(null);
    private WebSocket ws;

    @Override
    public void onOpen(WebSocket webSocket) {
      ws = webSocket;
      socket = webSocket;
      if (cancelled) {
        webSocket.abort();
        return;
      }
      webSocket.request(1);
      later(this::beat);
    }

    @Override
    public CompletionStage<?> onText(WebSocket webSocket, CharSequence data, boolean last) {
      lastHeard = System.nanoTime();
      text.append(data);
      if (last) {
        JsonNode f = Json.tree(text.toString());
        text.setLength(0);
        if (!gone.get()) {
          frame(f);
        }
      }
      more(webSocket);
      return null;
    }

    @Override
    public CompletionStage<?> onBinary(WebSocket webSocket, ByteBuffer data, boolean last) {
      lastHeard = System.nanoTime();
      more(webSocket);
      return null;
    }

    @Override
    public CompletionStage<?> onPong(WebSocket webSocket, ByteBuffer message) {
      lastHeard = System.nanoTime();
      more(webSocket);
      return null;
    }

    @Override
    public CompletionStage<?> onClose(WebSocket webSocket, int statusCode, String reason) {
      drop(new java.io.IOException("closed with " + statusCode + " " + reason));
      return null;
    }

    @Override
    public void onError(WebSocket webSocket, Throwable error) {
      drop(error);
    }

    private void beat() {
      if (gone.get() || done || cancelled) {
        return;
      }
      if (paused == ws) {
        lastHeard = System.nanoTime(); // not reading on purpose: the subscriber is behind
      } else if (System.nanoTime() - lastHeard > 3 * heartbeat.toNanos()) {
        drop(new java.io.IOException("no answer from the gateway for " + 3 * heartbeat.toMillis() + " ms"));
        return;
      }
      if (ping.isDone()) {
        ping = ws.sendPing(ByteBuffer.allocate(0)).whenComplete((w, e) -> {
          if (e != null) {
            drop(e);
          }
        });
      }
      later(this::beat);
    }

    private void later(Runnable task) {
      CompletableFuture.delayedExecutor(heartbeat.toMillis(), TimeUnit.MILLISECONDS).execute(task);
    }

    /** Ends this connection, once, and resumes on a new one unless the stream is over. */
    private void drop(Throwable cause) {
      if (!gone.compareAndSet(false, true)) {
        return;
      }
      if (ws != null) {
        ws.abort();
      }
      if (!done && !cancelled) {
        reconnect(cause);
      }
    }

    private void more(WebSocket webSocket) {
      if (done || cancelled || gone.get()) {
        return;
      }
      if (queued.get() < HIGH_WATER) {
        webSocket.request(1);
      } else {
        paused = webSocket;
        if (queued.get() < LOW_WATER && paused == webSocket) {
          paused = null;
          webSocket.request(1);
        }
      }
    }
  }
}
