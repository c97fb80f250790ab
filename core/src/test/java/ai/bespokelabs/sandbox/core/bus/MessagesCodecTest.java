package ai.bespokelabs.sandbox.core.bus;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.bespokelabs.sandbox.core.bus.Messages.AttachExec;
import ai.bespokelabs.sandbox.core.bus.Messages.CreateSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.DestroySandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.DetachExec;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecFinished;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecResult;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecStarted;
import ai.bespokelabs.sandbox.core.bus.Messages.FileOp;
import ai.bespokelabs.sandbox.core.bus.Messages.FileReply;
import ai.bespokelabs.sandbox.core.bus.Messages.ListResources;
import ai.bespokelabs.sandbox.core.bus.Messages.MetricsRequest;
import ai.bespokelabs.sandbox.core.bus.Messages.Resource;
import ai.bespokelabs.sandbox.core.bus.Messages.ResourceList;
import ai.bespokelabs.sandbox.core.bus.Messages.SandboxCreated;
import ai.bespokelabs.sandbox.core.bus.Messages.SandboxDestroyed;
import ai.bespokelabs.sandbox.core.bus.Messages.SandboxMetrics;
import ai.bespokelabs.sandbox.core.bus.Messages.SetTimeout;
import ai.bespokelabs.sandbox.core.bus.Messages.SignalExec;
import ai.bespokelabs.sandbox.core.bus.Messages.SnapshotSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.SnapshotTaken;
import ai.bespokelabs.sandbox.core.bus.Messages.StdinExec;
import ai.bespokelabs.sandbox.core.bus.Messages.StreamEvent;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError;
import ai.bespokelabs.sandbox.core.model.SandboxConfig;
import ai.bespokelabs.sandbox.core.model.Workspace;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.lang.reflect.RecordComponent;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** Every message record, and a bus failure, comes back equal from the encoding used between nodes. */
class MessagesCodecTest {
  private static final byte[] BYTES = {0, 1, 2, (byte) 0xff, 'a', '"', '\\'};

  private static final SandboxConfig FULL_CONFIG = new SandboxConfig("small", 1.5, 512, 1024, "t4", 600,
      "python:3.12", Map.of("TOKEN", "s3cret", "A", ""), true, "app", "tpl", "snap_1", "/work",
      "https://example.com/r.git", "main");
  private static final SandboxConfig EMPTY_CONFIG = new SandboxConfig(null, null, null, null, null, null, null,
      null, null, null, null, null, null, null, null);

  private static final List<Object> SAMPLES = List.of(
      new CreateSandbox("sbx_1", "org_1", "local", "tok", FULL_CONFIG,
          new Workspace(List.of(Workspace.Step.file("a.txt", BYTES, true), Workspace.Step.git("r", "main", "src"),
              Workspace.Step.archive("data", BYTES)), List.of("make", "make test"))),
      new CreateSandbox("sbx_2", "org_1", "docker", "tok", EMPTY_CONFIG),
      new SandboxCreated("res_1", "node_1"),
      new SandboxCreated("res_1", null),
      new SandboxCreated("res_1", "node_1", new java.math.BigDecimal("0.69")),
      new ExecSandbox("sbx_1", "exe_1", "res_1", "print(1)", "python", null, null, Map.of("K", "v"), "/tmp",
          30, 1 << 20, true, "rec.addr", "sub.addr"),
      new ExecSandbox("sbx_1", "exe_1", "res_1", null, null, "ls", List.of(), Map.of(), null, 30, 100),
      new ExecSandbox("sbx_1", "exe_1", "res_1", null, null, "ls", List.of("-l", "ü"), null, null, 30, 100),
      new ExecResult(3, "out ü", "err", true, false, true, 1234, true, 99),
      new ExecResult(0, "", "", false, false, false, 0),
      new DestroySandbox("sbx_1", "res_1", DestroySandbox.TTL_EXPIRED),
      new DestroySandbox("sbx_1", null),
      new SandboxDestroyed(true),
      new ExecStarted("exe_1", "node_1"),
      new StreamEvent(StreamEvent.OUTPUT, 7, "stdout", BYTES, null),
      new StreamEvent(StreamEvent.EXIT, 8, null, null, new JsonObject().put("exit_code", 0)
          .put("nested", new JsonObject().put("list", new JsonArray().add(1).add("x")))),
      new AttachExec("exe_1", "sub.addr", -1),
      new DetachExec("exe_1", "sub.addr"),
      new StdinExec("exe_1", BYTES, true),
      new StdinExec("exe_1", new byte[0], false),
      new SignalExec("exe_1", "TERM"),
      new ExecFinished("exe_1", new ExecResult(1, "o", "e", false, true, false, 5, false, 3)),
      new ResourceList(List.of(new Resource("res_1", "sbx_1", "running", new BigDecimal("0.012300")),
          new Resource("res_2", null, "terminated", null))),
      new ResourceList(List.of()),
      new ListResources(List.of("res_1", "res_2")),
      new SnapshotSandbox("sbx_1", "org_1", "res_1"),
      new SnapshotTaken("snap_1"),
      new SetTimeout("sbx_1", "res_1", 3600),
      new FileOp("write", "sbx_1", "res_1", "/a/b", "ses_1", BYTES, true, false),
      new FileOp("list", "sbx_1", "res_1", "/", null, null, false, true),
      FileReply.listing(java.util.List.of(new ai.bespokelabs.sandbox.core.model.FileEntry("a", "/w/a", false, 3, 0644,
          java.time.Instant.parse("2026-04-01T12:00:00.123456Z"), "file"))),
      FileReply.opened("fss_1", 3), FileReply.chunk(BYTES), FileReply.end(),
      FileReply.written(new ai.bespokelabs.sandbox.core.model.FileEntry("d", "/w/d", true, 0, 0755, null)),
      FileReply.done(),
      new MetricsRequest("sbx_1", "res_1", 512, null),
      new SandboxMetrics(12.5, 100.0, 512.0, null, 1024.0, 3),
      new SandboxMetrics(null, null, null, null, null, null));

  @Test
  void every_message_record_survives_the_wire_encoding() {
    Set<Class<?>> sampled = SAMPLES.stream().map(Object::getClass).collect(Collectors.toSet());
    assertThat(sampled).containsExactlyInAnyOrderElementsOf(Messages.TYPES);
    for (Object sample : SAMPLES) {
      assertSameRecord(roundTrip(sample), sample);
    }
  }

  @Test
  void a_property_added_by_a_newer_node_is_ignored_and_an_unknown_format_refused() {
    byte[] json = "{\"executionId\":\"exe_1\",\"nodeId\":\"n\",\"added\":[1]}".getBytes(StandardCharsets.UTF_8);
    RecordCodec<ExecStarted> codec = new RecordCodec<>(ExecStarted.class);
    Buffer wire = Buffer.buffer().appendByte((byte) 1).appendInt(json.length).appendBytes(json);
    assertThat(codec.decodeFromWire(0, wire)).isEqualTo(new ExecStarted("exe_1", "n"));
    Buffer future = Buffer.buffer().appendByte((byte) 2).appendInt(json.length).appendBytes(json);
    assertThatThrownBy(() -> codec.decodeFromWire(0, future)).isInstanceOf(DecodeException.class);
  }

  @Test
  void an_output_event_leaves_its_precomputed_body_behind() {
    StreamEvent e = new StreamEvent(StreamEvent.OUTPUT, 1, "stdout", "hi".getBytes(StandardCharsets.UTF_8), null,
        OutputJson.body("hi".getBytes(StandardCharsets.UTF_8)));
    StreamEvent back = roundTrip(e);
    assertThat(back.body()).isNull();
    assertThat(back.data()).isEqualTo(e.data());
  }

  @Test
  void the_environment_goes_to_the_adapter_and_the_names_stay_known() {
    CreateSandbox back = roundTrip(new CreateSandbox("sbx_1", "org_1", "local", "tok", FULL_CONFIG));
    assertThat(back.config()).isEqualTo(FULL_CONFIG);
    assertThat(back.config().envVars()).containsEntry("TOKEN", "s3cret");
  }

  @Test
  void failures_survive_the_wire_encoding() {
    ProviderError pe = ProviderError.of(ErrorCode.NOT_FOUND, "docker", "destroy", false, ProviderError.Outcome.FAILED)
        .withContext("provider_status", 404).withContext("provider_code", "no.such");
    List<BusFailure> failures = List.of(BusFailure.of(pe), BusFailure.of(ApiException.conflict("busy")),
        new BusFailure(422, new JsonArray().add(new JsonObject().put("loc", new JsonArray().add("body"))), null),
        new BusFailure(403, new JsonObject().put("reason", "policy").put("limit", 3), null));
    BusFailures.FailedCodec codec = new BusFailures.FailedCodec();
    for (BusFailure f : failures) {
      BusFailures.Failed sent = new BusFailures.Failed(f);
      Buffer buffer = Buffer.buffer("prefix");
      codec.encodeToWire(buffer, sent);
      BusFailures.Failed back = codec.decodeFromWire(6, buffer);
      assertThat(back.failure()).isEqualTo(f);
      assertThat(back.failureCode()).isEqualTo(f.status());
      assertThat(codec.transform(sent)).isSameAs(sent);
    }
    RuntimeException e = new BusFailures.Failed(BusFailure.of(pe)).failure().toException();
    assertThat(e).isInstanceOf(ai.bespokelabs.sandbox.core.error.ProviderException.class);
  }

  @Test
  void a_local_consumer_gets_the_same_instance() {
    Vertx vertx = Vertx.vertx();
    try {
      Messages.registerCodecs(vertx.eventBus());
      ExecStarted sent = new ExecStarted("exe_1", "node_1");
      vertx.eventBus().<ExecStarted>consumer("test.same", m -> m.reply(m.body())).completion().await();
      Object got = vertx.eventBus().request("test.same", sent).await().body();
      assertThat(got).isSameAs(sent);
      vertx.eventBus().consumer("test.fail", m -> BusFailures.fail(m, ApiException.conflict("busy")))
          .completion().await();
      Throwable t = vertx.eventBus().request("test.fail", sent).toCompletionStage().toCompletableFuture()
          .handle((ok, err) -> err).join();
      RuntimeException decoded = BusFailures.decode(t, "local", "execute");
      assertThat(decoded).isInstanceOf(ApiException.class);
      assertThat(((ApiException) decoded).status()).isEqualTo(409);
      assertThat(((ApiException) decoded).detail()).isEqualTo("busy");
    } finally {
      vertx.close().await();
    }
  }

  @SuppressWarnings("unchecked")
  private static <T> T roundTrip(T value) {
    RecordCodec<T> codec = new RecordCodec<>((Class<T>) value.getClass());
    Buffer buffer = Buffer.buffer("prefix");
    codec.encodeToWire(buffer, value);
    assertThat(codec.transform(value)).isSameAs(value);
    return codec.decodeFromWire(6, buffer);
  }

  /** Equal component by component, arrays by content. */
  private static void assertSameRecord(Object actual, Object expected) {
    assertThat(deepEquals(actual, expected)).as("%s decoded as %s", expected, actual).isTrue();
  }

  private static boolean deepEquals(Object a, Object b) {
    if (a == null || b == null) {
      return a == b;
    }
    if (a instanceof byte[] x && b instanceof byte[] y) {
      return Arrays.equals(x, y);
    }
    if (a instanceof List<?> x && b instanceof List<?> y) {
      if (x.size() != y.size()) {
        return false;
      }
      for (int i = 0; i < x.size(); i++) {
        if (!deepEquals(x.get(i), y.get(i))) {
          return false;
        }
      }
      return true;
    }
    if (a.getClass() != b.getClass()) {
      return false;
    }
    if (a.getClass().isRecord()) {
      for (RecordComponent c : a.getClass().getRecordComponents()) {
        try {
          if (!deepEquals(c.getAccessor().invoke(a), c.getAccessor().invoke(b))) {
            return false;
          }
        } catch (ReflectiveOperationException e) {
          throw new AssertionError(e);
        }
      }
      return true;
    }
    return Objects.equals(a, b);
  }
}
