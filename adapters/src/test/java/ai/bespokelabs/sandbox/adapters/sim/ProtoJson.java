package ai.bespokelabs.sandbox.adapters.sim;

import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.Message;
import com.google.protobuf.MessageOrBuilder;
import com.google.protobuf.util.JsonFormat;
import io.vertx.core.buffer.Buffer;

/**
 * The canonical proto3 JSON mapping, strictly: requests are parsed into the classes generated from a
 * provider's published {@code .proto} files, so an unknown field, a wrong type or a bad enum name is
 * refused as the provider's own Connect or gRPC-JSON server would refuse it; answers are printed the
 * same way (default values omitted, bytes as base64, 64-bit integers as strings).
 */
public final class ProtoJson {
  private static final JsonFormat.Parser PARSER = JsonFormat.parser();
  private static final JsonFormat.Printer PRINTER = JsonFormat.printer().omittingInsignificantWhitespace();

  private ProtoJson() {}

  /** A request the proto does not allow. */
  public static final class Invalid extends RuntimeException {
    public Invalid(String message) {
      super(message, null, false, false);
    }
  }

  @SuppressWarnings("unchecked")
  public static <M extends Message> M parse(Buffer json, Message.Builder builder) {
    try {
      PARSER.merge(json.toString(java.nio.charset.StandardCharsets.UTF_8), builder);
      return (M) builder.build();
    } catch (InvalidProtocolBufferException | RuntimeException e) {
      throw new Invalid(builder.getDescriptorForType().getFullName() + ": " + e.getMessage());
    }
  }

  public static Buffer print(MessageOrBuilder message) {
    try {
      return Buffer.buffer(PRINTER.print(message));
    } catch (InvalidProtocolBufferException e) {
      throw new IllegalStateException(e);
    }
  }
}
