package ai.bespokelabs.sandbox.adapters;

import ai.bespokelabs.sandbox.core.bus.Addresses;
import ai.bespokelabs.sandbox.core.bus.BusFailures;
import ai.bespokelabs.sandbox.core.bus.Messages.CreateSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.DestroySandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.SandboxCreated;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.eventbus.Message;
import io.vertx.core.eventbus.MessageConsumer;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Binds one {@link SandboxProvider} to the event bus: {@code sandbox.adapter.<backend>} for node-independent
 * operations and {@code sandbox.adapter.<backend>.<nodeId>} for sandboxes hosted by this node. Each
 * operation runs on its own virtual thread, so a long execution never holds up another request; replies
 * come back on this verticle's context.
 */
public final class AdapterVerticle extends VerticleBase {
  private static final Logger LOG = LoggerFactory.getLogger(AdapterVerticle.class);

  private final SandboxProvider provider;
  private final String nodeId;
  private ExecutorService executor;

  public AdapterVerticle(SandboxProvider provider, String nodeId) {
    this.provider = Objects.requireNonNull(provider, "provider");
    this.nodeId = Objects.requireNonNull(nodeId, "nodeId");
  }

  @Override
  public Future<?> start() {
    executor = Executors.newThreadPerTaskExecutor(
        Thread.ofVirtual().name("adapter-" + provider.backend() + "-", 0).factory());
    MessageConsumer<Object> node = vertx.eventBus().consumer(Addresses.adapter(provider.backend(), nodeId),
        this::handle);
    if (provider.nodeBound()) {
      return node.completion();
    }
    MessageConsumer<Object> shared = vertx.eventBus().consumer(Addresses.adapter(provider.backend()), this::handle);
    return Future.all(node.completion(), shared.completion());
  }

  @Override
  public Future<?> stop() {
    executor.shutdownNow();
    provider.close();
    return Future.succeededFuture();
  }

  private void handle(Message<Object> msg) {
    String action = msg.headers().get(Addresses.ACTION);
    String op = action == null ? "unknown" : switch (action) {
      case Addresses.CREATE -> "create";
      case Addresses.EXEC -> "execute";
      case Addresses.DESTROY -> "destroy";
      default -> action;
    };
    Supplier<Object> work = switch (op) {
      case "create" -> () -> new SandboxCreated(provider.create((CreateSandbox) msg.body()), nodeId);
      case "execute" -> () -> provider.exec((ExecSandbox) msg.body());
      case "destroy" -> () -> provider.destroy((DestroySandbox) msg.body());
      default -> null;
    };
    if (work == null) {
      msg.fail(400, "\"unsupported adapter action\"");
      return;
    }
    Future.fromCompletionStage(CompletableFuture.supplyAsync(work, executor), context)
        .onSuccess(msg::reply)
        .onFailure(t -> {
          if (!(t instanceof ai.bespokelabs.sandbox.core.error.ProviderException)
              && !(t instanceof ai.bespokelabs.sandbox.core.error.ApiException)) {
            // only the type: provider exception texts may echo credentials
            LOG.warn("{} {} failed unexpectedly: {}", provider.backend(), op, unwrap(t).getClass().getName());
          }
          BusFailures.fail(msg, unwrap(t), provider.backend(), op);
        });
  }

  private static Throwable unwrap(Throwable t) {
    while (t instanceof java.util.concurrent.CompletionException && t.getCause() != null) {
      t = t.getCause();
    }
    return t;
  }
}
