package ai.bespokelabs.sandbox.adapters.daytona;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

class LogDemuxTest {
  /** A log of stdout "héllo " + "wörld", stderr "ërr\n", as the daemon writes it. */
  static byte[] log() {
    ByteArrayOutputStream b = new ByteArrayOutputStream();
    b.writeBytes(new byte[] {1, 1, 1});
    b.writeBytes("héllo ".getBytes(StandardCharsets.UTF_8));
    b.writeBytes(new byte[] {2, 2, 2});
    b.writeBytes("ërr\n".getBytes(StandardCharsets.UTF_8));
    b.writeBytes(new byte[] {1, 1, 1});
    b.writeBytes("wörld".getBytes(StandardCharsets.UTF_8));
    return b.toByteArray();
  }

  @Test
  void every_cut_of_the_log_into_two_frames_demultiplexes_the_same() throws Exception {
    byte[] log = log();
    for (int cut = 0; cut <= log.length; cut++) {
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      ByteArrayOutputStream err = new ByteArrayOutputStream();
      List<byte[]> chunks = new ArrayList<>();
      LogDemux d = new LogDemux((s, data) -> {
        chunks.add(data);
        (s == ai.bespokelabs.sandbox.adapters.spi.OutputSink.Stream.STDOUT ? out : err).writeBytes(data);
      });
      d.feed(Arrays.copyOfRange(log, 0, cut));
      d.feed(Arrays.copyOfRange(log, cut, log.length));
      d.finish();
      assertThat(out.toString(StandardCharsets.UTF_8)).as("cut at %d", cut).isEqualTo("héllo wörld");
      assertThat(err.toString(StandardCharsets.UTF_8)).as("cut at %d", cut).isEqualTo("ërr\n");
      for (byte[] c : chunks) {
        assertThat(StandardCharsets.UTF_8.newDecoder().decode(java.nio.ByteBuffer.wrap(c)).toString()).isNotNull();
      }
    }
  }

  @Test
  void unmarked_bytes_are_stdout_and_lone_marker_bytes_are_data() throws Exception {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    LogDemux d = new LogDemux((s, data) -> out.writeBytes(data));
    d.feed(new byte[] {'a', 1, 1, 'b'});
    d.feed(new byte[] {2, 2});
    d.finish();
    assertThat(out.toByteArray()).containsExactly('a', 1, 1, 'b', 2, 2);
  }
}
