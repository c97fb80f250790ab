package ai.bespokelabs.sandbox.gateway.exec;

import ai.bespokelabs.sandbox.core.bus.Messages.StreamEvent;
import ai.bespokelabs.sandbox.core.bus.RuntimeClient;
import ai.bespokelabs.sandbox.core.bus.RuntimeClient.Delivery;
import ai.bespokelabs.sandbox.core.bus.RuntimeClient.Runner;
import io.vertx.core.Vertx;
import java.util.ArrayList;
import java.util.List;

/**
 * The gateway side of one client's subscription to an execution ({@link RuntimeClient#subscribe}): writes each
 * event to the client and acknowledges it (the adapter's credit for the next event) only when the client's socket
 * has room, so a slow client slows the program instead of filling memory.
 */
public final class StreamSubscriber {
  static final long UNREGISTER_DELAY_MS = 5_000;
  private final RuntimeClient runtime;
  private final Vertx vertx;
  private final ClientChannel channel;
  private final StreamMeter meter;
  private String executionId;
  private Runner runner;
  private final List<Delivery> waitingForDrain = new ArrayList<>();
  private final RuntimeClient.Subscription subscription;
  private final io.vertx.core.Context context;
  private boolean finished;
  private long lastSeq;
  private Runnable onFinished = () -> { };

  StreamSubscriber(RuntimeClient runtime, Vertx vertx, ClientChannel channel, StreamMeter meter) {
    this.runtime = runtime;
    this.vertx = vertx;
    this.context = vertx.getOrCreateContext();
    this.channel = channel;
    this.meter = meter;
    this.subscription = runtime.subscribe(channel.textOutput(), this::onEvent);
    meter.watcher(channel.transport(), 1);
  }

  /** The execution this subscriber watches and the node to tell when the client goes away. */
  void target(String executionId, Runner runner) {
    this.executionId = executionId;
    this.runner = runner;
  }

  /** The subscription the adapter sends this client's events to. */
  RuntimeClient.Subscription subscription() {
    return subscription;
  }

  private void onEvent(Delivery msg) {
    if (finished) {
      msg.refuse();
      return;
    }
    StreamEvent event = msg.event();
    lastSeq = Math.max(lastSeq, event.seq());
    channel.write(event);
    if (event.data() != null) {
      meter.streamed(channel.transport(), event.data().length);
    }
    if (StreamEvent.EXIT.equals(event.type()) || StreamEvent.EVICTED.equals(event.type())) {
      msg.ack();
      finish();
      channel.end();
      return;
    }
    if (!channel.writeQueueFull()) {
      msg.ack();
      return;
    }
    waitingForDrain.add(msg);
    meter.creditsHeld(1);
    if (waitingForDrain.size() == 1) {
      channel.drainHandler(this::drained);
    }
  }

  private void drained() {
    List<Delivery> ready = new ArrayList<>(waitingForDrain);
    waitingForDrain.clear();
    meter.creditsHeld(-ready.size());
    ready.forEach(Delivery::ack);
  }

  /**
   * The node running the execution was lost: the stream ends with a failed {@code exit} event (from any
   * thread; it runs on this subscriber's context).
   */
  void nodeLost(String message) {
    context.runOnContext(v -> deliverFinal(new StreamEvent(StreamEvent.EXIT, lastSeq, null, null,
        new io.vertx.core.json.JsonObject().put("execution_id", executionId).put("status", "failed")
            .putNull("exit_code").put("last_seq", lastSeq)
            .put("error", new io.vertx.core.json.JsonObject().put("code", "node_lost").put("message", message)))));
  }

  /** Runs once this subscriber stops delivering (on its context). */
  void whenFinished(Runnable action) {
    this.onFinished = action;
  }

  /** Ends the stream without an exit event (the execution cannot be attached). */
  public void failAndEnd(String message) {
    if (!finished) {
      finish();
      channel.error(message);
      channel.end();
    }
  }

  /** Writes the last events, which did not come from the adapter (a stored result), and ends the stream. */
  void deliverFinal(StreamEvent... events) {
    if (!finished) {
      finish();
      for (StreamEvent event : events) {
        channel.write(event);
      }
      channel.end();
    }
  }

  /** The client went away: stop consuming and tell the adapter, so nothing waits for this client. */
  public void clientGone() {
    if (!finished) {
      finish();
      if (runner != null) {
        runtime.detach(runner, executionId, subscription);
      }
    }
  }

  /**
   * Stops delivering. The consumer stays registered a little longer to refuse the events already in flight
   * (so the adapter learns at once instead of waiting for a reply timeout), then unregisters.
   */
  private void finish() {
    finished = true;
    meter.watcher(channel.transport(), -1);
    meter.creditsHeld(-waitingForDrain.size());
    onFinished.run();
    waitingForDrain.forEach(Delivery::refuse);
    waitingForDrain.clear();
    vertx.setTimer(UNREGISTER_DELAY_MS, t -> subscription.close());
  }

  /** Completes once the consumer is registered (cluster-wide), before the adapter may send to it. */
  io.vertx.core.Future<Void> ready() {
    return subscription.ready();
  }

  boolean finished() {
    return finished;
  }
}
