package ai.bespokelabs.sandbox.core.bus;

import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.eventbus.EventBus;
import io.vertx.core.eventbus.Message;
import io.vertx.core.eventbus.MessageCodec;
import io.vertx.core.eventbus.ReplyException;
import io.vertx.core.eventbus.ReplyFailure;

/**
 * How failures cross the event bus: the reply is a {@link Failed}, a {@link ReplyException} whose body is the
 * typed {@link BusFailure} (shared as-is within a node, JSON between nodes), and {@link #decode} turns any
 * failed request back into the exception the sender should see.
 */
public final class BusFailures {
  private BusFailures() {}

  /** The failed reply: {@code failureCode} is the HTTP status, the failure itself travels typed. */
  public static final class Failed extends ReplyException {
    private final transient BusFailure failure;

    public Failed(BusFailure failure) {
      super(ReplyFailure.RECIPIENT_FAILURE, failure.status(), failure.summary());
      this.failure = failure;
    }

    public BusFailure failure() {
      return failure;
    }
  }

  /** Registers the codec of {@link Failed}; {@link Messages#registerCodecs} calls it. */
  static void registerCodec(EventBus bus) {
    bus.registerDefaultCodec(Failed.class, new FailedCodec());
  }

  /** Fails {@code msg} with a client-facing error. */
  public static void fail(Message<?> msg, ApiException e) {
    msg.reply(new Failed(BusFailure.of(e)));
  }

  /** Fails {@code msg} with the contract form of {@code t}; anything unexpected becomes a normalized error. */
  public static void fail(Message<?> msg, Throwable t, String backend, String op) {
    if (t instanceof ApiException api) {
      fail(msg, api);
    } else {
      ProviderError e = t instanceof ProviderException pe ? pe.error() : normalize(backend, op);
      msg.reply(new Failed(BusFailure.of(e)));
    }
  }

  /** A non-contract failure: creation_failed on create, execution_failed otherwise, outcome unknown. */
  public static ProviderError normalize(String backend, String op) {
    ErrorCode code = "create".equals(op) ? ErrorCode.CREATION_FAILED : ErrorCode.EXECUTION_FAILED;
    return ProviderError.of(code, backend, op, false, ProviderError.Outcome.UNKNOWN);
  }

  /**
   * Turns a bus failure back into the exception the sender should see: a {@link ProviderException} or an
   * {@link ApiException}. Timeouts and missing handlers become provider errors of {@code backend}/{@code op}.
   */
  public static RuntimeException decode(Throwable t, String backend, String op) {
    if (t instanceof Failed f) {
      return f.failure().toException();
    }
    if (t instanceof ReplyException re) {
      if (re.failureType() == ReplyFailure.TIMEOUT) {
        return new ProviderException(
            ProviderError.of(ErrorCode.TIMEOUT, backend, op, false, ProviderError.Outcome.UNKNOWN));
      }
      if (re.failureType() == ReplyFailure.NO_HANDLERS) {
        return new ProviderException(
            ProviderError.of(ErrorCode.CONNECTION, backend, op, true, ProviderError.Outcome.FAILED));
      }
    }
    if (t instanceof ApiException || t instanceof ProviderException) {
      return (RuntimeException) t;
    }
    return new ProviderException(normalize(backend, op));
  }

  /** {@link Failed} on the bus: the same instance within a node, its {@link BusFailure} as JSON between nodes. */
  static final class FailedCodec implements MessageCodec<Failed, Failed> {
    @Override
    public void encodeToWire(Buffer buffer, Failed f) {
      RecordCodec.write(buffer, f.failure());
    }

    @Override
    public Failed decodeFromWire(int pos, Buffer buffer) {
      return new Failed(RecordCodec.read(buffer, pos, BusFailure.class));
    }

    @Override
    public Failed transform(Failed f) {
      return f;
    }

    @Override
    public String name() {
      return "bus-failure";
    }

    @Override
    public byte systemCodecID() {
      return -1;
    }
  }
}
