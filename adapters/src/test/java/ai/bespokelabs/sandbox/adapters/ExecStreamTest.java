package ai.bespokelabs.sandbox.adapters;

import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.core.bus.Addresses;
import ai.bespokelabs.sandbox.core.bus.Messages;
import ai.bespokelabs.sandbox.core.bus.Messages.StreamEvent;
import ai.bespokelabs.sandbox.core.bus.OutputJson;
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

  /** A subscriber at {@code address} that acknowledges every event and keeps it. */
  private LinkedBlockingQueue<StreamEvent> subscribe(String address) throws Exception {
    LinkedBlockingQueue<StreamEvent> events = new LinkedBlockingQueue<>();
    vertx.eventBus().<StreamEvent>consumer(address, m -> {
      events.add(m.body());
      m.reply(null);
    }).completion().toCompletionStage().toCompletableFuture().get(10, SECONDS);
    onContext(() -> stream.attach(address, 0));
    return events;
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
    LinkedBlockingQueue<StreamEvent> binary = subscribe(Addresses.subscriber(false, "b"));
    byte[] first = "first \"line\"\n".getBytes(StandardCharsets.UTF_8);
    stream.output(ai.bespokelabs.sandbox.adapters.spi.OutputSink.Stream.STDOUT, first);
    StreamEvent e1 = binary.poll(10, SECONDS);
    assertThat(e1.data()).isEqualTo(first);
    assertThat(e1.body()).as("no text client: nothing encoded").isNull();

    LinkedBlockingQueue<StreamEvent> text = subscribe(Addresses.subscriber(true, "t"));
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

    onContext(() -> stream.detach(Addresses.subscriber(true, "t")));
    stream.output(ai.bespokelabs.sandbox.adapters.spi.OutputSink.Stream.STDOUT, first);
    assertThat(binary.poll(10, SECONDS).body()).as("the text client left").isNull();
  }

  /** A full journal holds the producer back (its future stays pending) until the client acknowledges. */
  @Test
  void a_full_journal_paces_the_producer_until_the_client_acknowledges() throws Exception {
    stream = new ExecStream("exe_2", false, context, vertx.eventBus(), 100, 1 << 20);
    LinkedBlockingQueue<io.vertx.core.eventbus.Message<StreamEvent>> held = new LinkedBlockingQueue<>();
    String address = Addresses.subscriber(false, "slow");
    vertx.eventBus().<StreamEvent>consumer(address, held::add).completion().toCompletionStage().toCompletableFuture()
        .get(10, SECONDS);
    onContext(() -> stream.attach(address, 0));
    var out = ai.bespokelabs.sandbox.adapters.spi.OutputSink.Stream.STDOUT;
    assertThat(stream.output(out, new byte[60]).succeeded()).isTrue();
    io.vertx.core.Future<Void> second = stream.output(out, new byte[60]);
    io.vertx.core.Future<Void> third = stream.output(out, new byte[10]);
    assertThat(second.isComplete()).as("the journal holds 100 bytes the client has not acknowledged").isFalse();
    assertThat(third.isComplete()).as("later chunks wait behind it, in order").isFalse();
    held.poll(10, SECONDS).reply(null); // the first event is acknowledged: its bytes may leave the journal
    second.toCompletionStage().toCompletableFuture().get(10, SECONDS);
    third.toCompletionStage().toCompletableFuture().get(10, SECONDS);
    assertThat(held.poll(10, SECONDS).body().data()).hasSize(60);
    io.vertx.core.Future<Void> fourth = stream.output(out, new byte[60]);
    assertThat(fourth.isComplete()).isFalse();
    stream.close(); // the adapter stops: a waiting producer is let go, its output dropped
    fourth.toCompletionStage().toCompletableFuture().get(10, SECONDS);
  }
}
