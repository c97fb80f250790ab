package ai.bespokelabs.sandbox.gateway.http;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.core.bus.Messages.StreamEvent;
import io.vertx.core.json.JsonObject;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Random;
import org.junit.jupiter.api.Test;

class OutputJsonTest {
  static JsonObject json(byte[] data) {
    return new JsonObject(new String(OutputJson.encode(new byte[0], new StreamEvent(StreamEvent.OUTPUT, 7, "stdout",
        data, null), new byte[0]), StandardCharsets.UTF_8));
  }

  @Test
  void text_round_trips_through_a_json_parser() {
    String text = "héllo \"quoted\" \\ back\n\ttab\r\u0000nul\u001f unit ✓ 𝄞";
    JsonObject j = json(text.getBytes(StandardCharsets.UTF_8));
    assertThat(j.getString("type")).isEqualTo("stdout");
    assertThat(j.getLong("seq")).isEqualTo(7L);
    assertThat(j.getString("data")).isEqualTo(text);
  }

  @Test
  void invalid_utf8_travels_as_base64_and_random_bytes_round_trip() {
    byte[][] invalid = {{(byte) 0xc0, (byte) 0x80}, {(byte) 0xed, (byte) 0xa0, (byte) 0x80}, {(byte) 0xe2, (byte) 0x82},
        {(byte) 0xf5, (byte) 0x80, (byte) 0x80, (byte) 0x80}, {(byte) 0x80}};
    for (byte[] b : invalid) {
      assertThat(OutputJson.validUtf8(b)).isFalse();
      assertThat(Base64.getDecoder().decode(json(b).getString("data_b64"))).isEqualTo(b);
    }
    byte[] random = new byte[100_000];
    new Random(1).nextBytes(random);
    JsonObject j = json(random);
    byte[] back = j.containsKey("data") ? j.getString("data").getBytes(StandardCharsets.UTF_8)
        : Base64.getDecoder().decode(j.getString("data_b64"));
    assertThat(back).isEqualTo(random);
    assertThat(OutputJson.validUtf8("plain ascii".getBytes(StandardCharsets.UTF_8))).isTrue();
  }

  /** Every byte value at every offset of a word, alone and among plain text, round-trips. */
  @Test
  void every_byte_at_every_position_round_trips() {
    for (int value = 0; value < 0x80; value++) {
      for (int at = 0; at < 20; at++) {
        byte[] b = "abcdefghijklmnopqrstuvwxyz0123456789".getBytes(StandardCharsets.US_ASCII);
        b[at] = (byte) value;
        assertThat(json(b).getString("data").getBytes(StandardCharsets.UTF_8)).isEqualTo(b);
      }
    }
    String mixed = "ascii then ✓ and 𝄞 \"q\" \\ and more plain text ".repeat(50);
    assertThat(json(mixed.getBytes(StandardCharsets.UTF_8)).getString("data")).isEqualTo(mixed);
  }

  /** Output that escaping would more than double (NUL bytes: six characters each) travels as base64. */
  @Test
  void control_heavy_output_travels_as_base64() {
    byte[] zeros = new byte[4096];
    JsonObject j = json(zeros);
    assertThat(j.containsKey("data")).isFalse();
    assertThat(Base64.getDecoder().decode(j.getString("data_b64"))).isEqualTo(zeros);
    byte[] lines = "a\tb\n".repeat(1000).getBytes(StandardCharsets.US_ASCII);
    assertThat(json(lines).getString("data")).isEqualTo(new String(lines, StandardCharsets.US_ASCII));
  }
}
