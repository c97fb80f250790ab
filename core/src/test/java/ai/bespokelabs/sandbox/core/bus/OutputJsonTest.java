package ai.bespokelabs.sandbox.core.bus;

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

  /** Text when escaping at most doubles the bytes, base64 past that; the early decision needs no full scan. */
  @Test
  void the_base64_choice_is_exact_at_the_doubling_boundary() {
    assertThat(json("\u0000aaaa".getBytes(StandardCharsets.US_ASCII)).getString("data")).isEqualTo("\u0000aaaa");
    assertThat(json("\u0000aaa".getBytes(StandardCharsets.US_ASCII)).containsKey("data_b64")).isTrue();
    // mostly NUL bytes and then a malformed sequence: decided on the NULs, still base64 and exact
    byte[] mixed = new byte[1000];
    mixed[999] = (byte) 0xc0;
    assertThat(Base64.getDecoder().decode(json(mixed).getString("data_b64"))).isEqualTo(mixed);
    assertThat(OutputJson.escapedLength(new byte[1000], 2000)).isGreaterThan(2000);
    // a whole word of NUL bytes among text: still text, and measured exactly
    String zerosThenText = "\u0000".repeat(8) + "a".repeat(40);
    assertThat(OutputJson.escapedLength(zerosThenText.getBytes(StandardCharsets.US_ASCII))).isEqualTo(88);
    assertThat(json(zerosThenText.getBytes(StandardCharsets.US_ASCII)).getString("data")).isEqualTo(zerosThenText);
    assertThat(OutputJson.escapedLength(mixed)).isEqualTo(-1);
  }

  /** The SSE form in parts carries the same bytes as the single array. */
  @Test
  void parts_join_to_the_encoded_bytes() {
    byte[] prefix = "id: 7\ndata: ".getBytes(StandardCharsets.US_ASCII);
    byte[] suffix = "\n\n".getBytes(StandardCharsets.US_ASCII);
    for (byte[] data : new byte[][] {new byte[300], "text\n".getBytes(StandardCharsets.US_ASCII)}) {
      StreamEvent e = new StreamEvent(StreamEvent.OUTPUT, 7, "stdout", data, null);
      java.io.ByteArrayOutputStream joined = new java.io.ByteArrayOutputStream();
      for (byte[] part : OutputJson.parts(prefix, e, suffix)) {
        joined.writeBytes(part);
      }
      assertThat(joined.toByteArray()).isEqualTo(OutputJson.encode(prefix, e, suffix));
    }
  }

  /** The measured length equals the length of what is written, for random ASCII-heavy text at every offset. */
  @Test
  void the_measured_length_is_the_written_length() {
    Random random = new Random(3);
    byte[] alphabet = "ab \"\\\n\r\t\u0000\u0001\u001f\u007f~ ".getBytes(StandardCharsets.US_ASCII);
    byte[] mostlyNul = "\u0000\u0000\u0000\u0000\u0000\u0000\u0000\u0000\u0000\u0000\u0000a\n".getBytes(StandardCharsets.US_ASCII);
    for (int round = 0; round < 4000; round++) {
      byte[] from = round % 2 == 0 ? alphabet : mostlyNul; // the second has whole words of NUL bytes
      byte[] b = new byte[random.nextInt(40)];
      for (int i = 0; i < b.length; i++) {
        b[i] = from[random.nextInt(from.length)];
      }
      byte[] json = OutputJson.encode(new byte[0], new StreamEvent(StreamEvent.OUTPUT, 1, "stdout", b, null), new byte[0]);
      JsonObject j = new JsonObject(new String(json, StandardCharsets.UTF_8));
      if (j.containsKey("data")) {
        assertThat(j.getString("data").getBytes(StandardCharsets.US_ASCII)).isEqualTo(b);
        assertThat((long) json.length).isEqualTo(OutputJson.escapedLength(b) + "{\"type\":\"stdout\",\"seq\":1,\"data\":\"\"}".length());
      } else {
        assertThat(Base64.getDecoder().decode(j.getString("data_b64"))).isEqualTo(b);
        assertThat(OutputJson.escapedLength(b)).isGreaterThan(2L * b.length);
      }
    }
  }
}
