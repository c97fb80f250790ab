package ai.bespokelabs.sandbox.adapters.e2b;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.bespokelabs.sandbox.adapters.sim.ProtoJson;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.Test;
import process.ProcessOuterClass.SendSignalRequest;
import process.ProcessOuterClass.StartRequest;

/** The Connect envelope codec, exit-code reading, and the strictness of the simulator's proto parsing. */
class E2bProtocolTest {
  @Test
  void envelopes_cut_anywhere_are_reassembled_in_order() {
    Buffer wire = Buffer.buffer()
        .appendBuffer(ConnectEnvelope.encode(0, Buffer.buffer("{\"a\":1}")))
        .appendBuffer(ConnectEnvelope.encode(0, Buffer.buffer("")))
        .appendBuffer(ConnectEnvelope.encode(ConnectEnvelope.END_STREAM, Buffer.buffer("{}")));
    for (int cut = 1; cut < wire.length(); cut++) {
      ConnectEnvelope.Decoder d = new ConnectEnvelope.Decoder();
      d.feed(wire.getBuffer(0, cut));
      java.util.List<ConnectEnvelope.Frame> frames = new java.util.ArrayList<>();
      ConnectEnvelope.Frame f;
      while ((f = d.next()) != null) {
        frames.add(f);
      }
      d.feed(wire.getBuffer(cut, wire.length()));
      while ((f = d.next()) != null) {
        frames.add(f);
      }
      assertThat(frames).extracting(x -> x.message().toString()).containsExactly("{\"a\":1}", "", "{}");
      assertThat(frames.get(2).endStream()).isTrue();
      assertThat(d.buffered()).isZero();
    }
  }

  @Test
  void bad_envelopes_are_refused() {
    ConnectEnvelope.Decoder flags = new ConnectEnvelope.Decoder();
    flags.feed(Buffer.buffer().appendByte((byte) 0x80).appendInt(0));
    assertThatThrownBy(flags::next).isInstanceOf(ConnectEnvelope.FramingException.class);
    ConnectEnvelope.Decoder huge = new ConnectEnvelope.Decoder();
    huge.feed(Buffer.buffer().appendByte((byte) 0).appendInt(Integer.MAX_VALUE));
    assertThatThrownBy(huge::next).isInstanceOf(ConnectEnvelope.FramingException.class);
  }

  @Test
  void end_events_read_like_a_shell_reports_them() {
    assertThat(E2bExecution.exitCode(new JsonObject().put("exited", true).put("status", "exit status 0"))).isZero();
    assertThat(E2bExecution.exitCode(new JsonObject().put("exitCode", 3).put("exited", true))).isEqualTo(3);
    assertThat(E2bExecution.exitCode(new JsonObject().put("exitCode", -1).put("status", "signal: killed")))
        .isEqualTo(137);
    assertThat(E2bExecution.exitCode(new JsonObject().put("exitCode", -1).put("status", "signal: terminated")))
        .isEqualTo(143);
  }

  @Test
  void the_simulator_parses_connect_json_as_strictly_as_envd() {
    StartRequest ok = ProtoJson.parse(Buffer.buffer(
        "{\"process\":{\"cmd\":\"/bin/sh\",\"args\":[\"-c\",\"true\"],\"envs\":{\"A\":\"1\"}},\"stdin\":false}"),
        StartRequest.newBuilder());
    assertThat(ok.getProcess().getArgsList()).containsExactly("-c", "true");
    assertThat(ok.hasStdin()).isTrue();
    assertThatThrownBy(() -> ProtoJson.parse(Buffer.buffer("{\"process\":{\"command\":\"ls\"}}"),
        StartRequest.newBuilder())).isInstanceOf(ProtoJson.Invalid.class);
    assertThatThrownBy(() -> ProtoJson.parse(Buffer.buffer("{\"process\":{\"cmd\":\"ls\",\"args\":\"-l\"}}"),
        StartRequest.newBuilder())).isInstanceOf(ProtoJson.Invalid.class);
    assertThatThrownBy(() -> ProtoJson.parse(Buffer.buffer("{\"process\":{\"pid\":1},\"signal\":\"SIGNAL_SIGINT\"}"),
        SendSignalRequest.newBuilder())).isInstanceOf(ProtoJson.Invalid.class);
    SendSignalRequest kill = ProtoJson.parse(Buffer.buffer("{\"process\":{\"pid\":1},\"signal\":\"SIGNAL_SIGKILL\"}"),
        SendSignalRequest.newBuilder());
    assertThat(kill.getProcess().getPid()).isEqualTo(1);
  }
}
