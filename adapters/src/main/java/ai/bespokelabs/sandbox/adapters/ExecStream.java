package ai.bespokelabs.sandbox.adapters;

import ai.bespokelabs.sandbox.core.bus.AdapterEndpoint;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecResult;
import ai.bespokelabs.sandbox.core.bus.Messages.StreamEvent;
import ai.bespokelabs.sandbox.core.bus.OutputJson;
import ai.bespokelabs.sandbox.adapters.exec.CappedOutput;
import ai.bespokelabs.sandbox.adapters.spi.Execution;
import ai.bespokelabs.sandbox.adapters.spi.OutputSink;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.eventbus.EventBus;
import io.vertx.core.json.JsonObject;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The live side of one execution: a bounded journal of its sequenced output, its capped result, and the
 * subscribers it streams to. Output arrives on any thread ({@link #output}'s future stays pending while the
 * journal is full of events an attached subscriber has not acknowledged, which stops the provider reading
 * the stream); delivery runs on the adapter's context, each event a bus request whose reply is the credit
 * for the next, at most {@link #WINDOW} in flight per subscriber. Nothing relies on pausing a consumer.
 *
 * <p>A subscriber that resumes from events that already left the journal gets one {@code gap} event with
 * the sequence range and byte count it missed. Output beyond the stored cap keeps streaming; a
 * {@code notice} event marks where the stored result was truncated.
 *
 * <p>While a client that reads JSON text is attached, each output event is also encoded (its JSON string,
 * at most twice its size, not counted in the journal limit) as it is read, so the event loops only frame it.
 */
final class ExecStream implements OutputSink {
  static final int WINDOW = 16;
  static final long DELIVERY_TIMEOUT_MS = 120_000;
  private static final int MAX_TRACKED_SEQS = 4_000_000;

  final String executionId;
  private final boolean keepStdin;
  private final Context context;
  private final EventBus bus;
  private final long journalLimit;
  private final CappedOutput stdout;
  private final CappedOutput stderr;
  private final Map<String, Subscriber> subscribers = new LinkedHashMap<>();
  /** Subscribers that receive output as JSON text; while there are any, output is encoded as it is read. */
  private volatile int textSubscribers;

  // guarded by this
  private final Ring journal = new Ring();
  private long journalBytes;
  private long lastSeq;
  private long[] cumulative = new long[1024];
  private long floor = Long.MAX_VALUE;
  private boolean pumpScheduled;
  private ExecResult result;
  private boolean recorded;
  private boolean closed;

  private final java.util.ArrayDeque<Pending> pending = new java.util.ArrayDeque<>();
  private final Promise<Execution> started = Promise.promise();
  private Runnable onIdle = () -> { };

  private static final Future<Void> TAKEN = Future.succeededFuture();

  /** A chunk that waits for room in the journal; its producer reads on once {@code taken} completes. */
  private record Pending(Stream stream, byte[] data, OutputJson.Body body, Promise<Void> taken) {}

  private record Entry(long seq, String type, String stream, byte[] data, JsonObject info, OutputJson.Body body) {
    long size() {
      return data == null ? 64 : data.length;
    }

    StreamEvent event() {
      return new StreamEvent(type, seq, stream, data, info, body);
    }
  }

  private static final class Subscriber {
    final String address;
    long next;
    long acked;
    int inFlight;
    boolean exitSent;
    boolean gone;

    Subscriber(String address, long after) {
      this.address = address;
      this.next = after + 1;
      this.acked = after;
    }
  }

  ExecStream(String executionId, boolean keepStdin, Context context, EventBus bus, long journalLimit,
      int outputLimit) {
    this.executionId = executionId;
    this.keepStdin = keepStdin;
    this.context = context;
    this.bus = bus;
    this.journalLimit = journalLimit;
    this.stdout = new CappedOutput(outputLimit);
    this.stderr = new CappedOutput(outputLimit);
  }

  boolean keepStdin() {
    return keepStdin;
  }

  /** The program runs (or could not be started); call on the context. */
  void started(io.vertx.core.AsyncResult<Execution> ar) {
    started.handle(ar);
  }

  /** Completes with the handle once the program runs; fails if it could not be started. */
  Future<Execution> handle() {
    return started.future();
  }

  /** Called on the context when the stream has ended and every subscriber got its exit event. */
  void onIdle(Runnable r) {
    this.onIdle = r;
  }

  /** Bytes the journal holds now. */
  synchronized long journalBytes() {
    return journalBytes;
  }

  synchronized ExecResult result() {
    return result;
  }

  // ---- producer side (provider threads) -----------------------------------------------------------

  @Override
  public Future<Void> output(Stream stream, byte[] data) {
    // encoded here, on the reading thread, once for every text client (not on an event loop per client)
    OutputJson.Body body = textSubscribers > 0 ? OutputJson.body(data) : null;
    Pending waiting;
    synchronized (this) {
      if (!pending.isEmpty() || !admit(stream, data, body)) {
        waiting = new Pending(stream, data, body, Promise.promise());
        pending.addLast(waiting);
      } else {
        waiting = null;
      }
    }
    if (waiting != null) {
      return waiting.taken.future();
    }
    schedulePump();
    return TAKEN;
  }

  /**
   * Journals a chunk when it fits (dropping entries every subscriber acknowledged to make room); false when the
   * journal is full of events an attached subscriber has not acknowledged. After the end, chunks are dropped.
   */
  private boolean admit(Stream stream, byte[] data, OutputJson.Body body) {
    while (!closed && result == null && journalBytes + data.length > journalLimit && !journal.isEmpty()) {
      if (journal.peekFirst().seq() > floor) {
        return false;
      }
      journalBytes -= journal.removeFirst().size();
    }
    if (closed || result != null) {
      return true;
    }
    append(new Entry(++lastSeq, StreamEvent.OUTPUT, stream.wire(), data, null, body), data.length);
    CappedOutput capture = stream == Stream.STDOUT ? stdout : stderr;
    if (capture.append(data)) {
      append(new Entry(++lastSeq, StreamEvent.NOTICE, stream.wire(), null, new JsonObject()
          .put("message", stream.wire() + " exceeded the stored-output cap of " + capture.limit()
              + " bytes; the stored result is truncated, streaming continues")
          .put("stream", stream.wire()).put("cap_bytes", capture.limit()), null), 0);
    }
    return true;
  }

  /** Journals waiting chunks that fit now and tells their producers to go on. */
  private void admitWaiting() {
    java.util.List<Promise<Void>> taken = new java.util.ArrayList<>();
    synchronized (this) {
      while (!pending.isEmpty() && admit(pending.peekFirst().stream, pending.peekFirst().data,
          pending.peekFirst().body)) {
        taken.add(pending.removeFirst().taken);
      }
    }
    if (!taken.isEmpty()) {
      taken.forEach(Promise::tryComplete);
      schedulePump();
    }
  }

  private void append(Entry e, long bytes) {
    journal.addLast(e);
    journalBytes += e.size();
    if (e.seq() < MAX_TRACKED_SEQS) {
      if (e.seq() >= cumulative.length) {
        cumulative = Arrays.copyOf(cumulative, (int) Math.min(MAX_TRACKED_SEQS, cumulative.length * 2L));
      }
      cumulative[(int) e.seq()] = cumulative[(int) e.seq() - 1] + bytes;
    }
  }

  @Override
  public void exited(int exitCode, boolean timedOut, boolean cancelled, long durationMs) {
    synchronized (this) {
      result = new ExecResult(exitCode, stdout.text(), stderr.text(), stdout.truncated(), stderr.truncated(),
          timedOut, durationMs, cancelled, lastSeq);
    }
    admitWaiting();
    context.runOnContext(v -> onExit.run());
  }

  private Runnable onExit = () -> { };

  /** What to do on the context once the program ended (answer the starter or hand the result to a recorder). */
  void onExit(Runnable r) {
    this.onExit = r;
  }

  /** The result is stored: exit events may go out. Call on the context. */
  void recorded() {
    synchronized (this) {
      recorded = true;
    }
    pumpAll();
  }

  /** Stops the producer and forgets subscribers (the adapter is stopping). */
  void close() {
    synchronized (this) {
      closed = true;
    }
    admitWaiting();
  }

  // ---- subscribers (adapter context) --------------------------------------------------------------

  void attach(String address, long after) {
    subscribers.put(address, new Subscriber(address, Math.max(0, after)));
    countTextSubscribers();
    updateFloor();
    pump(subscribers.get(address));
  }

  void detach(String address) {
    Subscriber s = subscribers.remove(address);
    if (s != null) {
      s.gone = true;
      countTextSubscribers();
      updateFloor();
      maybeIdle();
    }
  }

  private void schedulePump() {
    synchronized (this) {
      if (pumpScheduled) {
        return;
      }
      pumpScheduled = true;
    }
    context.runOnContext(v -> {
      synchronized (this) {
        pumpScheduled = false;
      }
      pumpAll();
    });
  }

  private void pumpAll() {
    for (Subscriber s : subscribers.values().toArray(Subscriber[]::new)) {
      pump(s);
    }
    maybeIdle();
  }

  private void pump(Subscriber s) {
    while (!s.gone && s.inFlight < WINDOW) {
      StreamEvent event;
      synchronized (this) {
        long first = journal.isEmpty() ? lastSeq + 1 : journal.peekFirst().seq();
        if (s.next < first) {
          event = new StreamEvent(StreamEvent.GAP, first - 1, null, null, new JsonObject()
              .put("from_seq", s.next).put("to_seq", first - 1).put("bytes", bytesBetween(s.next, first - 1))
              .put("message", "output left the journal before this client read it"));
          s.next = first;
        } else if (s.next <= lastSeq) {
          event = entryAt(s.next, first).event();
          s.next++;
        } else if (result != null && recorded && !s.exitSent) {
          event = new StreamEvent(StreamEvent.EXIT, lastSeq, null, null, result.toJson().put("status", result.status()));
          s.exitSent = true;
        } else {
          break;
        }
      }
      send(s, event);
    }
  }

  private Entry entryAt(long seq, long first) {
    return journal.get((int) (seq - first));
  }

  /** A growable ring of journal entries with index access. */
  private static final class Ring {
    private Entry[] items = new Entry[64];
    private int head;
    private int size;

    boolean isEmpty() {
      return size == 0;
    }

    Entry peekFirst() {
      return items[head];
    }

    Entry removeFirst() {
      Entry e = items[head];
      items[head] = null;
      head = (head + 1) % items.length;
      size--;
      return e;
    }

    void addLast(Entry e) {
      if (size == items.length) {
        Entry[] bigger = new Entry[items.length * 2];
        for (int i = 0; i < size; i++) {
          bigger[i] = items[(head + i) % items.length];
        }
        items = bigger;
        head = 0;
      }
      items[(head + size) % items.length] = e;
      size++;
    }

    Entry get(int index) {
      return items[(head + index) % items.length];
    }
  }

  private Long bytesBetween(long from, long to) {
    if (to >= MAX_TRACKED_SEQS || from < 1) {
      return null;
    }
    return cumulative[(int) to] - cumulative[(int) from - 1];
  }

  private void send(Subscriber s, StreamEvent event) {
    s.inFlight++;
    AdapterEndpoint.deliver(bus, s.address, event, DELIVERY_TIMEOUT_MS).onComplete(ar -> {
      s.inFlight--;
      if (s.gone) {
        return;
      }
      if (ar.failed()) {
        if (AdapterEndpoint.timedOut(ar.cause())) {
          AdapterEndpoint.tell(bus, s.address, new StreamEvent(StreamEvent.EVICTED, s.acked, null, null,
              new JsonObject().put("message", "the client did not read for too long; resume after seq " + s.acked)));
        }
        detach(s.address);
        return;
      }
      if (event.type().equals(StreamEvent.OUTPUT) || event.type().equals(StreamEvent.NOTICE)
          || event.type().equals(StreamEvent.GAP)) {
        s.acked = Math.max(s.acked, event.seq());
        updateFloor();
      }
      if (s.exitSent && s.inFlight == 0) {
        subscribers.remove(s.address);
        s.gone = true;
        countTextSubscribers();
        updateFloor();
        maybeIdle();
        return;
      }
      pump(s);
    });
  }

  private void countTextSubscribers() {
    int n = 0;
    for (String address : subscribers.keySet()) {
      if (AdapterEndpoint.wantsTextOutput(address)) {
        n++;
      }
    }
    textSubscribers = n;
  }

  private void updateFloor() {
    long min = Long.MAX_VALUE;
    for (Subscriber s : subscribers.values()) {
      min = Math.min(min, s.acked);
    }
    synchronized (this) {
      floor = min;
    }
    admitWaiting();
  }

  private void maybeIdle() {
    boolean ended;
    synchronized (this) {
      ended = result != null && recorded;
    }
    if (ended && subscribers.isEmpty()) {
      onIdle.run();
    }
  }
}
