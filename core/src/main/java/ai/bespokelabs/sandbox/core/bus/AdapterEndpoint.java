package ai.bespokelabs.sandbox.core.bus;

import ai.bespokelabs.sandbox.core.bus.Messages.AttachExec;
import ai.bespokelabs.sandbox.core.bus.Messages.CreateSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.DestroySandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.DetachExec;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecFinished;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.FileOp;
import ai.bespokelabs.sandbox.core.bus.Messages.ListResources;
import ai.bespokelabs.sandbox.core.bus.Messages.MetricsRequest;
import ai.bespokelabs.sandbox.core.bus.Messages.SetTimeout;
import ai.bespokelabs.sandbox.core.bus.Messages.SignalExec;
import ai.bespokelabs.sandbox.core.bus.Messages.SnapshotSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.StdinExec;
import ai.bespokelabs.sandbox.core.bus.Messages.StreamEvent;
import ai.bespokelabs.sandbox.core.error.ApiException;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.core.eventbus.EventBus;
import io.vertx.core.eventbus.Message;
import io.vertx.core.eventbus.MessageConsumer;
import io.vertx.core.eventbus.ReplyException;
import io.vertx.core.eventbus.ReplyFailure;
import java.util.List;

/**
 * The adapter's end of the runtime protocol ({@link BusRuntimeClient} is the other): binds a {@link RuntimeServer}
 * at its backend's addresses and answers each request with its future's result or failure; and the adapter's own
 * sends, each event of an execution to its subscribers and each result to the node that started it.
 */
public final class AdapterEndpoint {
  /** How long the node that started an execution may take to store its result. */
  static final long RECORD_TIMEOUT_MS = 60_000;

  private AdapterEndpoint() {}

  /**
   * Serves {@code server} at {@code sandbox.adapter.<backend>.<nodeId>} (the sandboxes and executions of this
   * node) and, unless the backend is node-bound, at {@code sandbox.adapter.<backend>} too; the requests run on
   * the caller's context. Completes once registered.
   */
  public static Future<Void> bind(Vertx vertx, String backend, String nodeId, boolean nodeBound,
      RuntimeServer server) {
    MessageConsumer<Object> node = vertx.eventBus().consumer(Addresses.adapter(backend, nodeId),
        msg -> handle(msg, backend, server));
    if (nodeBound) {
      return node.completion();
    }
    MessageConsumer<Object> shared = vertx.eventBus().consumer(Addresses.adapter(backend),
        msg -> handle(msg, backend, server));
    return Future.all(node.completion(), shared.completion()).mapEmpty();
  }

  private static void handle(Message<Object> msg, String backend, RuntimeServer server) {
    String action = String.valueOf(msg.headers().get(Addresses.ACTION));
    Future<?> answer;
    try {
      Throwable refused = server.refusal(action);
      answer = refused != null ? Future.failedFuture(refused) : dispatch(msg, action, server);
    } catch (RuntimeException e) {
      answer = Future.failedFuture(e);
    }
    answer.onComplete(ar -> {
      if (ar.succeeded()) {
        msg.reply(ar.result());
      } else {
        BusFailures.fail(msg, ar.cause(), backend, action);
      }
    });
  }

  private static Future<?> dispatch(Message<Object> msg, String action, RuntimeServer server) {
    Object body = msg.body();
    return switch (action) {
      case Addresses.CREATE -> server.create((CreateSandbox) body);
      case Addresses.DESTROY -> server.destroy((DestroySandbox) body);
      case Addresses.HEALTH -> server.health();
      case Addresses.DETAILS -> server.details();
      case Addresses.LIST -> server.list(body instanceof ListResources l ? l : new ListResources(List.of()));
      case Addresses.FILES -> server.files(msg.headers().get(Addresses.ORGANIZATION), (FileOp) body);
      case Addresses.ADOPT -> server.adopt((CreateSandbox) body, msg.headers().get(Addresses.RESOURCE));
      case Addresses.SNAPSHOT -> server.snapshot((SnapshotSandbox) body);
      case Addresses.SET_TIMEOUT -> server.setTimeout((SetTimeout) body);
      case Addresses.METRICS -> server.metrics((MetricsRequest) body);
      case Addresses.EXEC -> server.exec((ExecSandbox) body);
      case Addresses.START -> server.start((ExecSandbox) body);
      case Addresses.ATTACH -> server.attach((AttachExec) body);
      case Addresses.DETACH -> server.detach((DetachExec) body);
      case Addresses.STDIN -> server.stdin((StdinExec) body);
      case Addresses.SIGNAL -> server.signal((SignalExec) body);
      default -> Future.failedFuture(new ApiException(400, "unsupported adapter action"));
    };
  }

  /** Hands the result of an execution {@link RuntimeClient#start started} elsewhere to the node that started it. */
  public static Future<Void> report(EventBus bus, ExecSandbox request, ExecFinished finished) {
    return bus.request(request.recorderAddress(), finished, new DeliveryOptions().setSendTimeout(RECORD_TIMEOUT_MS))
        .mapEmpty();
  }

  /** Whether {@code request} was {@link RuntimeClient#start started} (its result is reported, not answered). */
  public static boolean reportsResult(ExecSandbox request) {
    return request.recorderAddress() != null;
  }

  /**
   * Sends one event to a subscriber; completes when the subscriber takes it (its credit for the next), fails when
   * it refuses it or does not answer within {@code timeoutMs} ({@link #timedOut}).
   */
  public static Future<Void> deliver(EventBus bus, String subscriber, StreamEvent event, long timeoutMs) {
    return bus.request(subscriber, event, new DeliveryOptions().setSendTimeout(timeoutMs)).mapEmpty();
  }

  /** Sends an event nobody answers (the eviction of a subscriber too slow to answer). */
  public static void tell(EventBus bus, String subscriber, StreamEvent event) {
    bus.send(subscriber, event);
  }

  /** Whether a {@link #deliver} failed because the subscriber did not answer in time. */
  public static boolean timedOut(Throwable failure) {
    return failure instanceof ReplyException re && re.failureType() == ReplyFailure.TIMEOUT;
  }

  /** Whether the subscriber at {@code address} receives output as JSON text. */
  public static boolean wantsTextOutput(String subscriber) {
    return Addresses.wantsTextOutput(subscriber);
  }
}
