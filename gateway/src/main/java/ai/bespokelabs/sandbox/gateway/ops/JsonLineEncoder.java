package ai.bespokelabs.sandbox.gateway.ops;

import ai.bespokelabs.sandbox.core.log.LogContext;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.classic.spi.IThrowableProxy;
import ch.qos.logback.classic.spi.ThrowableProxyUtil;
import ch.qos.logback.core.encoder.EncoderBase;
import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Instant;
import java.util.Map;

/**
 * One JSON object per line ({@code BESPOKE_LOG_FORMAT=json}): {@code ts}, {@code level}, {@code logger},
 * {@code thread}, {@code message}, the {@link LogContext} fields of the work that logged it
 * ({@code request_id}, {@code organization_id}, {@code sandbox_id}, {@code execution_id}) where known, and
 * {@code error} with the stack trace of an exception. Encoded on the logging thread, so the context read is the
 * logging work's own.
 */
public final class JsonLineEncoder extends EncoderBase<ILoggingEvent> {
  private static final byte[] NONE = new byte[0];
  private final JsonFactory json = new JsonFactory();

  @Override
  public byte[] headerBytes() {
    return NONE;
  }

  @Override
  public byte[] encode(ILoggingEvent event) {
    ByteArrayOutputStream out = new ByteArrayOutputStream(256);
    try (JsonGenerator g = json.createGenerator(out)) {
      g.writeStartObject();
      g.writeStringField("ts", Instant.ofEpochMilli(event.getTimeStamp()).toString());
      g.writeStringField("level", event.getLevel().toString());
      g.writeStringField("logger", event.getLoggerName());
      g.writeStringField("thread", event.getThreadName());
      g.writeStringField("message", event.getFormattedMessage());
      for (Map.Entry<String, String> f : LogContext.current().entrySet()) {
        g.writeStringField(f.getKey(), f.getValue());
      }
      IThrowableProxy error = event.getThrowableProxy();
      if (error != null) {
        g.writeStringField("error", ThrowableProxyUtil.asString(error));
      }
      g.writeEndObject();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    out.write('\n');
    return out.toByteArray();
  }

  @Override
  public byte[] footerBytes() {
    return NONE;
  }
}
