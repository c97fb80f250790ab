package ai.bespokelabs.sandbox.core.bus;

import io.vertx.core.buffer.Buffer;
import io.vertx.core.eventbus.EventBus;
import io.vertx.core.eventbus.MessageCodec;
import io.vertx.core.json.JsonObject;
import java.util.function.Function;

/**
 * Codec for an immutable message record: shared as-is within a node, JSON (length-prefixed) between
 * nodes of a cluster.
 */
public final class RecordCodec<T> implements MessageCodec<T, T> {
  private final Class<T> type;
  private final Function<T, JsonObject> encoder;
  private final Function<JsonObject, T> decoder;

  private RecordCodec(Class<T> type, Function<T, JsonObject> encoder, Function<JsonObject, T> decoder) {
    this.type = type;
    this.encoder = encoder;
    this.decoder = decoder;
  }

  public static <T> void register(EventBus bus, Class<T> type, Function<T, JsonObject> enc,
      Function<JsonObject, T> dec) {
    bus.registerDefaultCodec(type, new RecordCodec<>(type, enc, dec));
  }

  @Override
  public void encodeToWire(Buffer buffer, T value) {
    Buffer json = encoder.apply(value).toBuffer();
    buffer.appendInt(json.length()).appendBuffer(json);
  }

  @Override
  public T decodeFromWire(int pos, Buffer buffer) {
    int len = buffer.getInt(pos);
    return decoder.apply(new JsonObject(buffer.getBuffer(pos + 4, pos + 4 + len)));
  }

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
