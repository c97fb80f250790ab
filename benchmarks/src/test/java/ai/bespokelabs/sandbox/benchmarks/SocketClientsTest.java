package ai.bespokelabs.sandbox.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;

import io.vertx.core.json.JsonObject;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Base64;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** The benchmark's stream clients decode exactly what the gateway encodes (their figures count bytes). */
class SocketClientsTest {
  private static byte[] decode(String json) throws Exception {
    byte[] line = ("data: " + json).getBytes(StandardCharsets.UTF_8);
    SocketClients.JsonString s = new SocketClients.JsonString();
    s.decode(line, 6, line.length);
    return Arrays.copyOfRange(s.bytes, s.offset, s.offset + s.length);
  }

  @Test
  void text_and_base64_data_decode_to_the_output_bytes() throws Exception {
    Random random = new Random(5);
    String alphabet = "ab\"\\/\n\r\t\b\f\u0000\u001f~ ";
    for (int round = 0; round < 500; round++) {
      StringBuilder sb = new StringBuilder();
      for (int i = random.nextInt(50); i > 0; i--) {
        sb.append(alphabet.charAt(random.nextInt(alphabet.length())));
      }
      String text = sb.toString();
      byte[] expected = text.getBytes(StandardCharsets.US_ASCII);
      assertThat(decode(new JsonObject().put("type", "stdout").put("seq", round).put("data", text).encode()))
          .isEqualTo(expected);
      assertThat(decode(new JsonObject().put("type", "stdout").put("seq", round)
          .put("data_b64", Base64.getEncoder().encodeToString(expected)).encode())).isEqualTo(expected);
    }
  }

  @Test
  void bytes_are_found_at_every_offset() {
    byte[] a = new byte[40];
    for (int at = 0; at < a.length; at++) {
      Arrays.fill(a, (byte) 'x');
      a[at] = '\n';
      assertThat(SocketClients.Bytes.indexOf(a, 0, a.length, (byte) '\n')).isEqualTo(at);
      assertThat(SocketClients.Bytes.indexOf(a, 0, at, (byte) '\n')).isEqualTo(-1);
      a[at] = '"';
      assertThat(SocketClients.Bytes.indexOfQuoteOrBackslash(a, 0, a.length)).isEqualTo(at);
      a[at] = (byte) 0x8a; // a high byte is not a newline
      assertThat(SocketClients.Bytes.indexOf(a, 0, a.length, (byte) '\n')).isEqualTo(-1);
    }
  }
}
