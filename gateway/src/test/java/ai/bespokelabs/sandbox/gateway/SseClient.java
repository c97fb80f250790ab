package ai.bespokelabs.sandbox.gateway;

import io.vertx.core.json.JsonObject;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;

/** A minimal Server-Sent Events reader for tests: one event at a time, straight from the socket. */
final class SseClient implements AutoCloseable {
  /** One event: its id (or null), name and JSON data. */
  record Event(String id, String name, JsonObject data) {
    /** The output bytes of a stdout/stderr event. */
    byte[] bytes() {
      return data.containsKey("data") ? data.getString("data").getBytes(StandardCharsets.UTF_8)
          : Base64.getDecoder().decode(data.getString("data_b64"));
    }

    boolean isOutput() {
      return "stdout".equals(name) || "stderr".equals(name);
    }
  }

  final int status;
  final String contentType;
  private final InputStream raw;
  private final BufferedReader in;

  private SseClient(HttpResponse<InputStream> r) {
    this.status = r.statusCode();
    this.contentType = r.headers().firstValue("content-type").orElse("");
    this.raw = r.body();
    this.in = new BufferedReader(new InputStreamReader(raw, StandardCharsets.UTF_8), 1 << 16);
  }

  static SseClient open(HttpClient http, String url, String key, String method, String body, String... headers) {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(120))
        .header("Authorization", "Bearer " + key).header("Accept", "text/event-stream");
    for (int i = 0; i < headers.length; i += 2) {
      b.header(headers[i], headers[i + 1]);
    }
    b.method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body));
    try {
      return new SseClient(http.send(b.build(), HttpResponse.BodyHandlers.ofInputStream()));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  /** The next event, skipping comments; null at the end of the stream. */
  Event next() {
    try {
      String id = null;
      String name = "message";
      StringBuilder data = null;
      String line;
      while ((line = in.readLine()) != null) {
        if (line.isEmpty()) {
          if (data != null) {
            return new Event(id, name, new JsonObject(data.toString()));
          }
          continue;
        }
        if (line.startsWith(":")) {
          continue;
        }
        if (line.startsWith("id: ")) {
          id = line.substring(4);
        } else if (line.startsWith("event: ")) {
          name = line.substring(7);
        } else if (line.startsWith("data: ")) {
          data = (data == null ? new StringBuilder() : data.append('\n')).append(line.substring(6));
        }
      }
      return null;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The raw body (for a non-stream answer). */
  String rest() {
    try {
      return new String(raw.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Override
  public void close() {
    try {
      raw.close();
    } catch (IOException ignored) {
      // already closed
    }
  }
}
