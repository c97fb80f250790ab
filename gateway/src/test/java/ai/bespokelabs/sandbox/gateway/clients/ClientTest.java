package ai.bespokelabs.sandbox.gateway.clients;

import ai.bespokelabs.sandbox.testkit.CuttingProxy;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.bespokelabs.sandbox.client.CreateSandbox;
import ai.bespokelabs.sandbox.client.ExecuteRequest;
import ai.bespokelabs.sandbox.client.Execution;
import ai.bespokelabs.sandbox.client.ExecutionResult;
import ai.bespokelabs.sandbox.client.ExecutionStream;
import ai.bespokelabs.sandbox.client.Page;
import ai.bespokelabs.sandbox.client.Policy;
import ai.bespokelabs.sandbox.client.ProviderException;
import ai.bespokelabs.sandbox.client.Sandbox;
import ai.bespokelabs.sandbox.client.SandboxClient;
import ai.bespokelabs.sandbox.client.SandboxException;
import ai.bespokelabs.sandbox.client.StreamEvent;
import ai.bespokelabs.sandbox.gateway.GatewayExtension;
import ai.bespokelabs.sandbox.gateway.TestGateway;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.math.BigDecimal;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/** The Java client against a real gateway, through a proxy that can cut its connections. */
@ExtendWith(GatewayExtension.class)
class ClientTest {
  static TestGateway gw;
  static String key;
  static CuttingProxy proxy;
  static SandboxClient client;

  @BeforeAll
  static void setUp() {
    key = gw.bootstrap("client-test");
    proxy = new CuttingProxy(URI.create(gw.base).getPort());
    client = SandboxClient.builder().url(proxy.url()).apiKey(key).streamHeartbeat(Duration.ofSeconds(1)).build();
  }

  @Test
  void createExecuteStreamWithADropFilesAndDestroy(@TempDir Path tmp) throws Exception {
    Sandbox sbx = client.create(CreateSandbox.on("local").withTimeoutSecs(600));
    assertThat(sbx.status()).isEqualTo("running");
    assertThat(client.get(sbx.id()).backend()).isEqualTo("local");

    ExecutionResult plain = client.execute(sbx.id(), ExecuteRequest.shell("echo out; echo err >&2; exit 3"));
    assertThat(plain.stdout()).isEqualTo("out\n");
    assertThat(plain.stderr()).isEqualTo("err\n");
    assertThat(plain.exitCode()).isEqualTo(3);

    // stdin: written through the stdin route, then closed
    Execution cat = client.start(sbx.id(), ExecuteRequest.command("sh", List.of("-c", "cat; echo done"))
        .withStdin(true));
    client.stdin(sbx.id(), cat.id(), "hello\n".getBytes(StandardCharsets.UTF_8));
    client.closeStdin(sbx.id(), cat.id());
    ExecutionStream catStream = client.stream(sbx.id(), cat.id());
    Collector catOut = Collector.subscribe(catStream, null);
    assertThat(catStream.result().get(30, TimeUnit.SECONDS).exitCode()).isZero();
    assertThat(catOut.stdout()).isEqualTo("hello\ndone\n");
    Execution ended = client.execution(sbx.id(), cat.id());
    assertThat(ended.status()).isEqualTo("completed");
    assertThat(ended.exitCode()).isZero();
    assertThat(ended.stdin()).isTrue();

    // a stream cut in the middle resumes where it was: every line exactly once, in order. The program prints
    // half its lines, waits for a file the test writes once it cut the connection, then prints the rest.
    Execution lines = client.start(sbx.id(), ExecuteRequest.shell("for i in $(seq 1 200); do echo line $i; done;"
        + " while [ ! -f go ]; do sleep 0.05; done; for i in $(seq 201 400); do echo line $i; done"));
    ExecutionStream stream = client.stream(sbx.id(), lines.id());
    SandboxClient direct = SandboxClient.builder().url(gw.base).apiKey(key).build();
    Collector out = Collector.subscribe(stream, c -> c.stdout.toString(StandardCharsets.UTF_8).endsWith("line 200\n")
        ? () -> {
          proxy.cut();
          direct.upload(sbx.id(), "go", new ByteArrayInputStream(new byte[0]), false);
        } : null);
    ExecutionResult result = stream.result().get(60, TimeUnit.SECONDS);
    assertThat(out.done.await(10, TimeUnit.SECONDS)).isTrue();
    assertThat(result.exitCode()).isZero();
    assertThat(stream.connections()).isGreaterThanOrEqualTo(2);
    assertThat(out.stdout().lines().toList())
        .containsExactlyElementsOf(IntStream.rangeClosed(1, 400).mapToObj(i -> "line " + i).toList());
    assertThat(out.seqs).isSorted().doesNotHaveDuplicates();
    assertThat(out.seqs.get(out.seqs.size() - 1)).isEqualTo(result.lastSeq());

    // files, streamed both ways
    byte[] data = new byte[3 * 1024 * 1024 + 17];
    new Random(7).nextBytes(data);
    client.upload(sbx.id(), "dir/blob.bin", new ByteArrayInputStream(data), false);
    ByteArrayOutputStream back = new ByteArrayOutputStream();
    assertThat(client.download(sbx.id(), "dir/blob.bin", back)).isEqualTo(data.length);
    assertThat(back.toByteArray()).isEqualTo(data);
    Path local = tmp.resolve("script.sh");
    Files.writeString(local, "#!/bin/sh\necho from script\n");
    local.toFile().setExecutable(true);
    client.upload(sbx.id(), "script.sh", local);
    assertThat(client.execute(sbx.id(), ExecuteRequest.shell("./script.sh")).stdout()).isEqualTo("from script\n");
    Path copy = tmp.resolve("copy.bin");
    client.download(sbx.id(), "dir/blob.bin", copy);
    assertThat(Files.readAllBytes(copy)).isEqualTo(data);
    assertThat(client.listFiles(sbx.id(), "dir")).singleElement()
        .satisfies(e -> assertThat(e.size()).isEqualTo(data.length));

    Sandbox gone = client.destroy(sbx.id(), client.get(sbx.id()).version());
    assertThat(gone.status()).isEqualTo("destroyed");
    assertThat(client.logs(sbx.id())).isNotEmpty();
  }

  @Test
  void aSubscriberThatWaitsLosesNothingAndBytesArriveAsTheyWere() throws Exception {
    Sandbox sbx = client.create(CreateSandbox.on("local"));
    Execution lines = client.start(sbx.id(), ExecuteRequest.shell(
        "for i in $(seq 1 2000); do echo line $i; done; printf '\\000\\001\\377' >&2"));
    ExecutionStream stream = client.stream(sbx.id(), lines.id());
    List<StreamEvent> events = new java.util.concurrent.CopyOnWriteArrayList<>();
    CountDownLatch subscribed = new CountDownLatch(1);
    Flow.Subscription[] subscription = new Flow.Subscription[1];
    stream.subscribe(new Flow.Subscriber<>() {
      @Override
      public void onSubscribe(Flow.Subscription s) {
        subscription[0] = s;
        subscribed.countDown();
      }

      @Override
      public void onNext(StreamEvent e) {
        events.add(e);
      }

      @Override
      public void onError(Throwable t) {
      }

      @Override
      public void onComplete() {
      }
    });
    assertThat(subscribed.await(10, TimeUnit.SECONDS)).isTrue();
    Thread.sleep(4000); // four heartbeats without a request: the stream must wait, not drop and resume
    subscription[0].request(Long.MAX_VALUE);
    ExecutionResult result = stream.result().get(60, TimeUnit.SECONDS);

    assertThat(result.exitCode()).isZero();
    assertThat(stream.connections()).isEqualTo(1);
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    for (StreamEvent e : events) {
      if (e instanceof StreamEvent.OutputChunk c) {
        (c.isStderr() ? err : out).writeBytes(c.data());
      }
    }
    assertThat(out.toString(StandardCharsets.UTF_8).lines().toList())
        .containsExactlyElementsOf(IntStream.rangeClosed(1, 2000).mapToObj(i -> "line " + i).toList());
    assertThat(err.toByteArray()).containsExactly(0, 1, 0xff);
    assertThat(events.get(events.size() - 1)).isInstanceOf(StreamEvent.Exit.class);
    client.destroy(sbx.id());
  }

  @Test
  void listingPagesThroughEverySandbox() {
    String own = gw.bootstrap("client-paging");
    SandboxClient c = SandboxClient.builder().url(gw.base).apiKey(own).build();
    List<String> ids = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      ids.add(0, c.create(CreateSandbox.on("local")).id());
    }
    Page<Sandbox> first = c.listPage(2, null);
    assertThat(first.items()).hasSize(2);
    assertThat(first.nextCursor()).isNotNull();
    assertThat(c.list().stream().map(Sandbox::id).toList()).containsExactlyElementsOf(ids);
    ids.forEach(c::destroy);
  }

  @Test
  void autoPlacesTheSandboxAndAPolicyCanMakeItTheDefault() {
    SandboxClient c = SandboxClient.builder().url(gw.base).apiKey(gw.bootstrap("client-auto")).build();
    Sandbox sbx = c.create(CreateSandbox.auto().withPrefer(List.of("local")).withExclude(List.of("bwrap"))
        .withMaxHourlyUsd(new BigDecimal("0.5")));
    assertThat(sbx.backend()).isEqualTo("local");
    assertThat(sbx.placement().get("chosen").asText()).isEqualTo("local");
    assertThat(sbx.placement().get("candidates").findValuesAsText("status")).contains("chosen", "rejected");
    Policy set = c.setPolicy(Policy.of(null, null, null, null, null, null).withDefaultBackend("auto"));
    assertThat(set.defaultBackend()).isEqualTo("auto");
    assertThat(set.includeLlmCost()).isFalse();
    Sandbox placed = c.create(CreateSandbox.on(null).withPrefer(List.of("local")));
    assertThat(placed.placement().get("requested").asText()).as("the policy's default").isEqualTo("auto");
    c.destroy(sbx.id());
    c.destroy(placed.id());
  }

  @Test
  void contractErrorsSurfaceAsTypedExceptions() {
    assertThatThrownBy(() -> client.get("sbx_00000000000000000000000000000000"))
        .isInstanceOfSatisfying(SandboxException.class, e -> {
          assertThat(e.status()).isEqualTo(404);
          assertThat(e.getMessage()).isEqualTo("sandbox not found");
        });
    Sandbox sbx = client.create(CreateSandbox.on("local"), "same-launch");
    assertThat(client.create(CreateSandbox.on("local"), "same-launch").id()).isEqualTo(sbx.id());
    ExecutionStream unknown = client.stream(sbx.id(), "exe_00000000000000000000000000000000");
    Collector.subscribe(unknown, null);
    assertThatThrownBy(() -> unknown.result().get(30, TimeUnit.SECONDS)).cause()
        .isInstanceOfSatisfying(SandboxException.class, e -> {
          assertThat(e.status()).isEqualTo(404);
          assertThat(e.getMessage()).isEqualTo("execution not found");
        });
    client.destroy(sbx.id());

    assertThat(gw.post("/v1/presets", key, new JsonObject().put("name", "broken")
        .put("setup_commands", new JsonArray().add("exit 3"))).status()).isEqualTo(201);

    assertThatThrownBy(() -> client.create(CreateSandbox.on("local").withPreset("broken")))
        .isInstanceOfSatisfying(ProviderException.class, e -> {
          assertThat(e.status()).isEqualTo(502);
          assertThat(e.code()).isEqualTo("workspace");
          assertThat(e.backend()).isEqualTo("local");
          assertThat(e.op()).isEqualTo("create");
          assertThat(e.retryable()).isFalse();
          assertThat(e.outcome()).isNotBlank();
          assertThat(e.context()).containsEntry("provider_code", "setup_failed").containsEntry("exit_code", 3);
        });
  }

  @Test
  void policiesAndCosts() {
    Policy set = client.setPolicy(Policy.of(5, new BigDecimal("2.50"), null, List.of("local"), null, null));
    assertThat(set.maxConcurrentSandboxes()).isEqualTo(5);
    assertThat(client.policy().hourlySpendLimitUsd()).isEqualByComparingTo("2.50");
    assertThat(client.policy().allowedBackends()).containsExactly("local");
    client.setPolicy(Policy.of(null, null, null, null, null, null));
    assertThat(client.costs("backend", null, null).groupBy()).isEqualTo("backend");
  }

  /** Collects a stream's events, requesting one at a time; {@code hook} may answer an action to run. */
  static final class Collector implements Flow.Subscriber<StreamEvent> {
    final ByteArrayOutputStream stdout = new ByteArrayOutputStream();
    final List<Long> seqs = new ArrayList<>();
    final CountDownLatch done = new CountDownLatch(1);
    final java.util.function.Function<Collector, Runnable> hook;
    int chunks;
    Flow.Subscription subscription;

    private Collector(java.util.function.Function<Collector, Runnable> hook) {
      this.hook = hook;
    }

    static Collector subscribe(ExecutionStream stream, java.util.function.Function<Collector, Runnable> hook) {
      Collector c = new Collector(hook);
      stream.subscribe(c);
      return c;
    }

    synchronized String stdout() {
      return stdout.toString(StandardCharsets.UTF_8);
    }

    @Override
    public void onSubscribe(Flow.Subscription s) {
      subscription = s;
      s.request(1);
    }

    @Override
    public synchronized void onNext(StreamEvent e) {
      if (e instanceof StreamEvent.OutputChunk c) {
        chunks++;
        seqs.add(c.seq());
        if (!c.isStderr()) {
          stdout.writeBytes(c.data());
        }
        Runnable action = hook == null ? null : hook.apply(this);
        if (action != null) {
          action.run();
        }
      }
      subscription.request(1);
    }

    @Override
    public void onError(Throwable t) {
      done.countDown();
    }

    @Override
    public void onComplete() {
      done.countDown();
    }
  }
}
