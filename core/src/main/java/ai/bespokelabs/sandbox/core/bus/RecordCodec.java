package ai.bespokelabs.sandbox.core.bus;

import com.fasterxml.jackson.annotation.JsonAutoDetect.Visibility;
import com.fasterxml.jackson.annotation.PropertyAccessor;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.eventbus.EventBus;
import io.vertx.core.eventbus.MessageCodec;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.EncodeException;
import io.vertx.core.json.jackson.VertxModule;
import java.io.IOException;

/**
 * The event-bus codec of every immutable message record: shared as-is within a node (no copy, no encoding),
 * between nodes of a cluster a format version byte, then the length-prefixed JSON written by Jackson from
 * the record's components. Vert.x's own Jackson module writes {@code byte[]}, {@code JsonObject} and
 * {@code JsonArray} components.
 */
public final class RecordCodec<T> implements MessageCodec<T, T> {
  /** Record components only (no {@code isX()} helpers), unknown properties ignored (a newer node may add some). */
  private static final ObjectMapper MAPPER = new ObjectMapper()
      .registerModule(new VertxModule())
      .setVisibility(PropertyAccessor.IS_GETTER, Visibility.NONE)
      .configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, false);

  /** The wire format: bumped when a change cannot be read by nodes that ignore unknown properties. */
  private static final byte FORMAT = 1;

  private final Class<T> type;

  RecordCodec(Class<T> type) {
    this.type = type;
  }

  /** Registers the codec as the default one for {@code type}. */
  public static <T> void register(EventBus bus, Class<T> type) {
    bus.registerDefaultCodec(type, new RecordCodec<>(type));
  }

  /** Appends the format version and the length-prefixed JSON of {@code value}. */
  static void write(Buffer buffer, Object value) {
    byte[] json;
    try {
      json = MAPPER.writeValueAsBytes(value);
    } catch (IOException e) {
      // the exception's text may quote a value (an env var's, say): it stays here
      throw new EncodeException("cannot encode " + value.getClass().getSimpleName());
    }
    buffer.appendByte(FORMAT).appendInt(json.length).appendBytes(json);
  }

  /** Reads what {@link #write} wrote at {@code pos}. */
  static <V> V read(Buffer buffer, int pos, Class<V> type) {
    if (buffer.getByte(pos) != FORMAT) {
      throw new DecodeException("unknown wire format " + buffer.getByte(pos) + " of " + type.getSimpleName());
    }
    int len = buffer.getInt(pos + 1);
    try {
      return MAPPER.readValue(buffer.getBytes(pos + 5, pos + 5 + len), type);
    } catch (IOException e) {
      throw new DecodeException("cannot decode " + type.getSimpleName());
    }
  }

  @Override
  public void encodeToWire(Buffer buffer, T value) {
    write(buffer, value);
  }

  @Override
  public T decodeFromWire(int pos, Buffer buffer) {
    return read(buffer, pos, type);
  }

  /** Records are immutable: a local consumer gets the very same instance. */
  @Override
  public T transform(T value) {
    return value;
  }

  @Override
  public String name() {
    return "record:" + type.getName();
  }

  @Override
  public byte systemCodecID() {
    return -1;
  }
}
