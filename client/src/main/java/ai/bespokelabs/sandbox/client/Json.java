package ai.bespokelabs.sandbox.client;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import java.io.IOException;
import java.io.UncheckedIOException;

/** The one Jackson mapper of the client: snake_case on the wire, unknown fields ignored, nulls not sent. */
public final class Json {
  public static final ObjectMapper MAPPER = new ObjectMapper()
      .setPropertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE)
      .setSerializationInclusion(JsonInclude.Include.NON_NULL)
      .configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, false);

  private Json() {
  }

  static byte[] write(Object value) {
    try {
      return MAPPER.writeValueAsBytes(value);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  static <T> T read(byte[] body, Class<T> type) {
    try {
      return MAPPER.readValue(body, type);
    } catch (IOException e) {
      throw new UncheckedIOException("unexpected answer from the gateway: " + e.getMessage(), e);
    }
  }

  static <T> T convert(JsonNode node, Class<T> type) {
    return MAPPER.convertValue(node, type);
  }

  static JsonNode tree(byte[] body) {
    try {
      return MAPPER.readTree(body);
    } catch (IOException e) {
      throw new UncheckedIOException("unexpected answer from the gateway: " + e.getMessage(), e);
    }
  }

  static JsonNode tree(String body) {
    try {
      return MAPPER.readTree(body);
    } catch (IOException e) {
      throw new UncheckedIOException("unexpected answer from the gateway: " + e.getMessage(), e);
    }
  }
}
