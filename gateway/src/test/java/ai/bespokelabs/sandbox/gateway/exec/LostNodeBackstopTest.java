package ai.bespokelabs.sandbox.gateway.exec;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.core.bus.Messages.StreamEvent;
import ai.bespokelabs.sandbox.core.repo.NodeRepository;
import ai.bespokelabs.sandbox.gateway.TestGateway;
import ai.bespokelabs.sandbox.testkit.Waits;
import io.vertx.sqlclient.Tuple;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A stream watching an execution on another node ends with the failed exit once that node is marked lost,
 * even when the take-over's notification never reached this node.
 */
class LostNodeBackstopTest {

  /** A client channel that keeps what it was sent. */
  static final class Recorded implements ClientChannel {
    final List<StreamEvent> events = new CopyOnWriteArrayList<>();
    volatile boolean ended;

    @Override
    public void write(StreamEvent event) {
      events.add(event);
    }

    @Override
    public void error(String message) {}

    @Override
    public boolean writeQueueFull() {
      return false;
    }

    @Override
    public String transport() {
      return "sse";
    }

    @Override
    public boolean textOutput() {
      return true;
    }

    @Override
    public void drainHandler(Runnable r) {}

    @Override
    public void end() {
      ended = true;
    }
  }

  @Test
  void a_stream_of_a_node_marked_lost_ends_without_the_notification() throws Exception {
    try (TestGateway gw = new TestGateway()) {
      ExecutionService executions = gw.gateway.executionService();
      NodeRepository nodes = new NodeRepository(gw.gateway.pool());
      Recorded watched = new Recorded();
      Recorded healthy = new Recorded();
      executions.watch(executions.subscriber(watched), "ghost");
      executions.watch(executions.subscriber(healthy), "alive");
      gw.gateway.pool().preparedQuery("INSERT INTO gateway_nodes (node_id, started_at, heartbeat_at) VALUES"
          + " ($1, now(), now()), ($2, now(), now())").execute(Tuple.of("ghost", "alive")).await(10, TimeUnit.SECONDS);

      executions.checkLostNodes(nodes);
      Thread.sleep(500);
      assertThat(watched.events).as("not lost yet").isEmpty();

      gw.gateway.pool().preparedQuery("UPDATE gateway_nodes SET lost_at = now() WHERE node_id = $1")
          .execute(Tuple.of("ghost")).await(10, TimeUnit.SECONDS);
      executions.checkLostNodes(nodes);
      Waits.upTo(10).until(() -> watched.ended);
      StreamEvent exit = watched.events.get(watched.events.size() - 1);
      assertThat(exit.type()).isEqualTo(StreamEvent.EXIT);
      assertThat(exit.info().getString("status")).isEqualTo("failed");
      assertThat(exit.info().getJsonObject("error").getString("code")).isEqualTo("node_lost");
      assertThat(healthy.ended).as("a stream of a node still alive goes on").isFalse();
    }
  }
}
