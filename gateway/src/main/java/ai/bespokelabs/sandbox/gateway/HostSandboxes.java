package ai.bespokelabs.sandbox.gateway;

import ai.bespokelabs.sandbox.adapters.host.BlockingProvider;
import ai.bespokelabs.sandbox.core.bus.Messages.DestroySandbox;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import ai.bespokelabs.sandbox.core.repo.NodeLoss;
import ai.bespokelabs.sandbox.core.repo.TerminationClaims;
import ai.bespokelabs.sandbox.core.repo.TerminationClaims.Stranded;
import ai.bespokelabs.sandbox.core.sandbox.Terminations;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import java.time.OffsetDateTime;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Ends this node's sandboxes of the host-process backends ({@code local}, {@code bwrap}, {@code safehouse}),
 * whose runtime (env vars, process handles) lives in the gateway process and is never stored: at start those
 * its previous run left behind (it was killed or crashed), at a graceful stop its own. Each goes the normal
 * termination path: claimed as {@code stopping}, destroyed by its provider (everything its executions started
 * is killed, from the on-disk process records after a crash, and the directory the gateway created for it is
 * removed), then {@code destroyed} with reason {@code shutdown} ({@code ttl_expired} when its deadline came
 * first), ending when the node stopped: so its cost ends there too.
 */
final class HostSandboxes {
  private static final Logger LOG = LoggerFactory.getLogger(HostSandboxes.class);
  static final String SHUTDOWN = "shutdown";

  private final Vertx vertx;
  private final TerminationClaims sandboxes;
  private final String nodeId;
  private final Map<String, ? extends ai.bespokelabs.sandbox.adapters.host.BlockingProvider> providers;
  private final Supplier<OffsetDateTime> now;
  private final NodeLoss loss;
  private final Terminations terminations;

  /** @param providers the host-process providers by backend */
  HostSandboxes(Vertx vertx, TerminationClaims sandboxes, Terminations terminations, NodeLoss loss, String nodeId,
      Map<String, ? extends ai.bespokelabs.sandbox.adapters.host.BlockingProvider> providers,
      Supplier<OffsetDateTime> now) {
    this.loss = loss;
    this.terminations = terminations;
    this.vertx = vertx;
    this.sandboxes = sandboxes;
    this.nodeId = nodeId;
    this.providers = Map.copyOf(providers);
    this.now = now;
  }

  /**
   * Ends them all; {@code sinceHeartbeat}: the node stopped at its last heartbeat (a start after a kill or a
   * crash), else it stops now. Completes with how many ended, once each is destroyed or failed.
   */
  Future<Integer> endAll(boolean sinceHeartbeat) {
    if (providers.isEmpty()) {
      return Future.succeededFuture(0);
    }
    return sandboxes.claimStranded(nodeId, providers.keySet(), now.get(), SHUTDOWN + "-" + nodeId, sinceHeartbeat)
        .compose(claimed -> {
          if (claimed.isEmpty()) {
            return Future.succeededFuture(0);
          }
          LOG.info("Ending {} {} sandbox(es) of this node: their runtime {}", claimed.size(),
              String.join("/", providers.keySet().stream().sorted().toList()),
              sinceHeartbeat ? "ended when the gateway last stopped" : "ends with the gateway");
          List<Future<Void>> ends = claimed.stream().map(this::end).toList();
          return Future.join(ends).otherwiseEmpty().map(claimed.size());
        });
  }

  /**
   * Kills what is left of this node's sandboxes that another node failed with reason {@code node_lost} while
   * this one was gone (or cut off): their processes and directories; they stay failed, never resurrected.
   * Completes with how many were cleaned up.
   */
  Future<Integer> reapLost() {
    if (providers.isEmpty()) {
      return Future.succeededFuture(0);
    }
    return loss.pendingCleanup(nodeId, providers.keySet()).compose(lost -> {
      if (!lost.isEmpty()) {
        LOG.info("Killing what is left of {} sandbox(es) of this node that failed while it was lost", lost.size());
      }
      List<Future<Void>> reaped = lost.stream().map(this::reap).toList();
      return Future.join(reaped).otherwiseEmpty().map(lost.size());
    });
  }

  private Future<Void> reap(NodeLoss.Remains r) {
    BlockingProvider provider = providers.get(r.backend());
    return vertx.executeBlocking(() -> provider.destroy(new DestroySandbox(r.id(), r.providerResourceId(),
            NodeLoss.NODE_LOST)), false)
        .compose(v -> loss.cleanedUp(r.id()))
        .onFailure(e -> LOG.warn("Cleaning up lost sandbox {} failed: {}", r.id(), e.toString()));
  }

  /** Ends one sandbox the one way sandboxes end ({@link Terminations}), destroyed by its provider in this process. */
  private Future<Void> end(Stranded s) {
    String reason = s.expired() ? DestroySandbox.TTL_EXPIRED : SHUTDOWN;
    BlockingProvider provider = providers.get(s.backend());
    return terminations.terminate(new Terminations.Ending(s.id(), s.backend(), nodeId, s.providerResourceId(), reason),
            null, s::endedAt, msg -> vertx.executeBlocking(() -> provider.destroy(msg), false))
        .<Void>mapEmpty()
        .recover(e -> {
          if (e instanceof ProviderException pe) {
            LOG.warn("Ending sandbox {} failed: {}", s.id(), pe.error().code().wire());
          } else {
            LOG.warn("Recording the end of sandbox {} failed: {}", s.id(), e.toString());
          }
          return Future.failedFuture(e);
        });
  }
}
