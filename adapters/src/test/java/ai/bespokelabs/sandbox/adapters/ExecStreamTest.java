package ai.bespokelabs.sandbox.adapters;

import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.core.bus.BusRuntimeClient;
import ai.bespokelabs.sandbox.core.bus.Messages;
import ai.bespokelabs.sandbox.core.bus.Messages.StreamEvent;
import ai.bespokelabs.sandbox.core.bus.OutputJson;
import ai.bespokelabs.sandbox.core.bus.RuntimeClient;
import io.vertx.core.Context;
import io.vertx.core.Vertx;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Output is JSON-encoded on the producer's thread exactly while a text client watches, for all clients. */
class ExecStreamTest {
  private Vertx vertx;
  private Context context;
  private ExecStream stream;

  @BeforeEach
  void setUp() {
    vertx = Vertx.vertx();
    Messages.registerCodecs(vertx.eventBus());
    context = vertx.getOrCreateContext();
    stream = new ExecStream("exe_1", false, context, vertx.eventBus(), 1 << 20, 1 << 20);
  }

  @AfterEach
  void tearDown() throws Exception {
    vertx.close().toCompletionStage().toCompletableFuture().get(10, SECONDS);
  }

  /** A subscription ({@code text}: to output as JSON text) that acknowledges every event and keeps it in {@code events}. */
  private RuntimeClient.Subscription subscribe(boolean text, LinkedBlockingQueue<StreamEvent> events) throws Exception {
    RuntimeClient.Subscription sub = new BusRuntimeClient(vertx, "node1", b -> false).subscribe(text, d -> {
      events.add(d.event());
      d.ack();
    });
    sub.ready().toCompletionStage().toCompletableFuture().get(10, SECONDS);
    onContext(() -> stream.attach(sub.address(), 0));
    return sub;
  }

  private void onContext(Runnable r) throws Exception {
    CompletableFuture<Void> done = new CompletableFuture<>();
    context.runOnContext(v -> {
      r.run();
      done.complete(null);
    });
    done.get(10, SECONDS);
  }

  @Test
  void output_is_encoded_once_while_a_text_client_watches() throws Exception {
    LinkedBlockingQueue<StreamEvent> binary = new LinkedBlockingQueue<>();
    subscribe(false, binary);
    byte[] first = "first \"line\"\n".getBytes(StandardCharsets.UTF_8);
    stream.output(ai.bespokelabs.sandbox.adapters.spi.OutputSink.Stream.STDOUT, first);
    StreamEvent e1 = binary.poll(10, SECONDS);
    assertThat(e1.data()).isEqualTo(first);
    assertThat(e1.body()).as("no text client: nothing encoded").isNull();

    LinkedBlockingQueue<StreamEvent> text = new LinkedBlockingQueue<>();
    RuntimeClient.Subscription textClient = subscribe(true, text);
    assertThat(text.poll(10, SECONDS).body()).as("replayed from the journal as it was").isNull();
    byte[] second = new byte[64]; // NUL bytes: base64
    stream.output(ai.bespokelabs.sandbox.adapters.spi.OutputSink.Stream.STDOUT, second);
    StreamEvent forText = text.poll(10, SECONDS);
    StreamEvent forBinary = binary.poll(10, SECONDS);
    assertThat(forText.body()).isNotNull().isSameAs(forBinary.body());
    assertThat(forText.body().text()).isFalse();
    assertThat(forText.body().bytes()).isEqualTo(OutputJson.body(second).bytes());
    assertThat(new String(OutputJson.encode(new byte[0], forText, new byte[0]), StandardCharsets.US_ASCII))
        .isEqualTo("{\"type\":\"stdout\",\"seq\":2,\"data_b64\":\"" + java.util.Base64.getEncoder().encodeToString(second)
            + "\"}");

    onContext(() -> stream.detach(textClient.address()));
    stream.output(ai.bespokelabs.sandbox.adapters.spi.OutputSink.Stream.STDOUT, first);
    assertThat(binary.poll(10, SECONDS).body()).as("the text client left").isNull();
  }

  /** A full journal holds the producer back (its future stays pending) until the client acknowledges. */
  @Test
  void a_full_journal_paces_the_producer_until_the_client_acknowledges() throws Exception {
    stream = new ExecStream("exe_2", false, context, vertx.eventBus(), 100, 1 << 20);
    LinkedBlockingQueue<RuntimeClient.Delivery> held = new LinkedBlockingQueue<>();
    RuntimeClient.Subscription slow = new BusRuntimeClient(vertx, "node1", b -> false).subscribe(false, held::add);
    slow.ready().toCompletionStage().toCompletableFuture().get(10, SECONDS);
    String address = slow.address();
    onContext(() -> stream.attach(address, 0));
    var out = ai.bespokelabs.sandbox.adapters.spi.OutputSink.Stream.STDOUT;
    assertThat(stream.output(out, new byte[60]).succeeded()).isTrue();
    io.vertx.core.Future<Void> second = stream.output(out, new byte[60]);
    io.vertx.core.Future<Void> third = stream.output(out, new byte[10]);
    assertThat(second.isComplete()).as("the journal holds 100 bytes the client has not acknowledged").isFalse();
    assertThat(third.isComplete()).as("later chunks wait behind it, in order").isFalse();
    held.poll(10, SECONDS).ack(); // the first event is acknowledged: its bytes may leave the journal
    second.toCompletionStage().toCompletableFuture().get(10, SECONDS);
    third.toCompletionStage().toCompletableFuture().get(10, SECONDS);
    assertThat(held.poll(10, SECONDS).event().data()).hasSize(60);
    io.vertx.core.Future<Void> fourth = stream.output(out, new byte[60]);
    assertThat(fourth.isComplete()).isFalse();
    stream.close(); // the adapter stops: a waiting producer is let go, its output dropped
    fourth.toCompletionStage().toCompletableFuture().get(10, SECONDS);
  }
}
