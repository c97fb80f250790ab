package ai.bespokelabs.sandbox.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import io.vertx.core.json.JsonObject;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** {@code GET /v1/sandbox-events}: lifecycle changes pushed as they happen, per organization, resumable. */
@ExtendWith(GatewayExtension.class)
class SandboxEventsTest {
  static TestGateway gw;
  static String admin;

  @BeforeAll
  static void start() {
    admin = gw.bootstrap("Acme");
  }

  /** An open stream whose lines arrive in a queue. */
  record Feed(HttpResponse<Stream<String>> response, BlockingQueue<String> lines) implements AutoCloseable {
    static Feed open(String key, String lastEventId) throws Exception {
      HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(gw.base + "/v1/sandbox-events"))
          .header("Authorization", "Bearer " + key).header("Accept", "text/event-stream");
      if (lastEventId != null) {
        b.header("Last-Event-ID", lastEventId);
      }
      HttpResponse<Stream<String>> r = gw.client.send(b.build(), HttpResponse.BodyHandlers.ofLines());
      BlockingQueue<String> lines = new LinkedBlockingQueue<>();
      Thread.ofVirtual().start(() -> {
        try {
          r.body().forEach(lines::add);
        } catch (RuntimeException closed) {
          // the test closed it
        }
      });
      return new Feed(r, lines);
    }

    /** The events (id and data) up to the one about {@code sandboxId} with {@code status}. */
    List<String[]> until(String sandboxId, String status) throws InterruptedException {
      List<String[]> events = new ArrayList<>();
      String id = null;
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
      while (System.nanoTime() < deadline) {
        String line = lines.poll(200, TimeUnit.MILLISECONDS);
        if (line == null) {
          continue;
        }
        if (line.startsWith("id: ")) {
          id = line.substring(4);
        } else if (line.startsWith("data: ")) {
          JsonObject data = new JsonObject(line.substring(6));
          events.add(new String[] {id, data.encode()});
          if (sandboxId.equals(data.getString("sandbox_id")) && status.equals(data.getString("status"))) {
            return events;
          }
        }
      }
      throw new AssertionError("no " + status + " event for " + sandboxId + " in " + events.size() + " events");
    }

    @Override
    public void close() {
      response.body().close();
    }
  }

  @Test
  void changes_arrive_as_they_happen_for_the_callers_organization_only_and_resume_after_the_last_id()
      throws Exception {
    String other = gw.bootstrap("Other");
    String theirs;
    String mine;
    String resumeAt;
    try (Feed feed = Feed.open(admin, null)) {
      assertThat(feed.response().statusCode()).isEqualTo(200);
      assertThat(feed.response().headers().firstValue("Content-Type").orElse("")).startsWith("text/event-stream");
      theirs = gw.sandbox(other, null).getString("id");
      mine = gw.sandbox(admin, null).getString("id");
      List<String[]> events = feed.until(mine, "running");
      assertThat(events).extracting(e -> e[1]).anyMatch(d -> d.contains(mine) && d.contains("sandbox.requested"))
          .noneMatch(d -> d.contains(theirs));
      resumeAt = events.get(events.size() - 1)[0];
      assertThat(resumeAt).matches("\\d+\\.\\d+");
    }
    assertThat(gw.delete("/v1/sandboxes/" + mine, admin).status()).isEqualTo(200);
    try (Feed resumed = Feed.open(admin, resumeAt)) {
      List<String[]> events = resumed.until(mine, "destroyed");
      assertThat(events).extracting(e -> e[1]).noneMatch(d -> d.contains("\"status\":\"running\""));
    }
  }

  @Test
  void it_needs_sandboxes_read_and_a_valid_resume_id() {
    String noRead = gw.key(admin, "usage:read");
    assertThat(gw.get("/v1/sandbox-events", noRead).status()).isEqualTo(403);
    assertThat(gw.get("/v1/sandbox-events", null).status()).isEqualTo(401);
    assertThat(gw.get("/v1/sandbox-events", admin, "Last-Event-ID", "nope").status()).isEqualTo(422);
  }
}
