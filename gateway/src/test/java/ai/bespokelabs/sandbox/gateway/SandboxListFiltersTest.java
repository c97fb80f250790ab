package ai.bespokelabs.sandbox.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.gateway.TestGateway.Resp;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Tuple;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The filters of {@code GET /v1/sandboxes} (status, backend, creation time), alone, together and with cursor
 * pages, over real HTTP against a real gateway and PostgreSQL.
 */
@ExtendWith(GatewayExtension.class)
class SandboxListFiltersTest {
  static TestGateway gw;
  static String key;
  static String otherKey;
  /** The organization's sandboxes, oldest first: created on 1 to 6 January 2026. */
  static final List<String> ids = new ArrayList<>();
  static final List<String> otherIds = new ArrayList<>();

  /**
   * Six sandboxes, one a day: 0 and 1 running on local, 2 destroyed on local, 3 destroyed and 4 failed on
   * "docker", 5 failed on local. Another organization has two on the same days as 0 and 2.
   */
  @BeforeAll
  static void start() throws Exception {
    key = gw.bootstrap("Filters");
    otherKey = gw.bootstrap("Elsewhere");
    String[] statuses = {"running", "running", "destroyed", "destroyed", "failed", "failed"};
    String[] backends = {"local", "local", "local", "docker", "docker", "local"};
    for (int i = 0; i < 6; i++) {
      ids.add(seed(key, i + 1, statuses[i], backends[i]));
    }
    otherIds.add(seed(otherKey, 1, "running", "local"));
    otherIds.add(seed(otherKey, 3, "destroyed", "docker"));
  }

  /** A sandbox created on {@code day} January 2026 with the given status and backend. */
  private static String seed(String key, int day, String status, String backend) throws Exception {
    String id = gw.sandbox(key, null).getString("id");
    if (!"running".equals(status)) {
      assertThat(gw.delete("/v1/sandboxes/" + id, key).status()).isEqualTo(200);
    }
    gw.gateway.pool().preparedQuery("UPDATE sandboxes SET created_at = $2, status = $3, backend = $4 WHERE id = $1")
        .execute(Tuple.of(id, OffsetDateTime.of(2026, 1, day, 0, 0, 0, 0, ZoneOffset.UTC), status, backend))
        .toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
    return id;
  }

  /** The ids of the organization's sandboxes at these indexes, newest first (as the list answers). */
  private static List<String> newestFirst(List<String> from, int... indexes) {
    List<String> out = new ArrayList<>();
    for (int i = indexes.length - 1; i >= 0; i--) {
      out.add(from.get(indexes[i]));
    }
    return out;
  }

  private static List<String> listed(String query, String key) {
    Resp r = gw.get("/v1/sandboxes" + query, key);
    assertThat(r.status()).as(query + ": " + r.body()).isEqualTo(200);
    return ids(r.array());
  }

  private static List<String> ids(JsonArray rows) {
    return rows.stream().map(o -> ((JsonObject) o).getString("id")).toList();
  }

  /** Every page of {@code query} with {@code limit}, following X-Next-Cursor; asserts the page count. */
  private static List<String> paged(String query, int limit, int pages) {
    List<String> collected = new ArrayList<>();
    String cursor = null;
    int n = 0;
    do {
      Resp page = gw.get("/v1/sandboxes?" + query + "&limit=" + limit + (cursor == null ? "" : "&cursor=" + cursor),
          key);
      assertThat(page.status()).as(page.body()).isEqualTo(200);
      assertThat(page.array().size()).isLessThanOrEqualTo(limit);
      collected.addAll(ids(page.array()));
      cursor = page.header("X-Next-Cursor");
      n++;
    } while (cursor != null);
    assertThat(n).as("pages of " + query).isEqualTo(pages);
    return collected;
  }

  @Test
  void each_filter_alone_keeps_only_the_sandboxes_it_names() {
    assertThat(listed("", key)).isEqualTo(newestFirst(ids, 0, 1, 2, 3, 4, 5));
    assertThat(listed("?status=running", key)).isEqualTo(newestFirst(ids, 0, 1));
    assertThat(listed("?status=destroyed,failed", key)).isEqualTo(newestFirst(ids, 2, 3, 4, 5));
    assertThat(listed("?status=running&status=failed", key)).isEqualTo(newestFirst(ids, 0, 1, 4, 5));
    assertThat(listed("?status=creating", key)).isEmpty();
    assertThat(listed("?status=", key)).as("an empty value is no filter").hasSize(6);
    assertThat(listed("?backend=docker", key)).isEqualTo(newestFirst(ids, 3, 4));
    assertThat(listed("?backend=local,docker", key)).hasSize(6);
    assertThat(listed("?backend=modal", key)).as("a backend with no sandboxes").isEmpty();
    // created_after is inclusive, created_before exclusive
    assertThat(listed("?created_after=2026-01-03T00:00:00Z", key)).isEqualTo(newestFirst(ids, 2, 3, 4, 5));
    assertThat(listed("?created_before=2026-01-03T00:00:00Z", key)).isEqualTo(newestFirst(ids, 0, 1));
    assertThat(listed("?created_after=2026-01-02T00:00:01%2B00:00", key)).isEqualTo(newestFirst(ids, 2, 3, 4, 5));
    assertThat(listed("?created_before=2026-01-03T01:00:00%2B01:00", key)).isEqualTo(newestFirst(ids, 0, 1));
  }

  @Test
  void filters_combine_with_each_other_and_with_cursor_pages() {
    assertThat(listed("?status=destroyed,failed&backend=local", key)).isEqualTo(newestFirst(ids, 2, 5));
    assertThat(listed("?backend=local&created_after=2026-01-02T00:00:00Z&created_before=2026-01-06T00:00:00Z", key))
        .isEqualTo(newestFirst(ids, 1, 2));
    assertThat(paged("status=destroyed,failed", 1, 4)).isEqualTo(newestFirst(ids, 2, 3, 4, 5));
    assertThat(paged("backend=local", 2, 2)).isEqualTo(newestFirst(ids, 0, 1, 2, 5));
    assertThat(paged("created_after=2026-01-02T00:00:00Z&created_before=2026-01-06T00:00:00Z", 3, 2))
        .isEqualTo(newestFirst(ids, 1, 2, 3, 4));
    assertThat(paged("status=running,failed&backend=local&created_after=2026-01-01T00:00:00Z", 2, 2))
        .isEqualTo(newestFirst(ids, 0, 1, 5));
    // the last page of a filter whose rows fill it exactly says there are no more
    Resp exact = gw.get("/v1/sandboxes?status=running&limit=2", key);
    assertThat(ids(exact.array())).isEqualTo(newestFirst(ids, 0, 1));
    assertThat(exact.header("X-Next-Cursor")).isNull();
  }

  @Test
  void invalid_filter_values_are_422_with_the_reason() {
    String statuses = "creating, running, stopping, destroyed, failed";
    String[][] cases = {
        {"status=paused", "status must be one or more of " + statuses + ": paused"},
        {"status=running,,failed", "status must not have an empty value"},
        {"status=running,", "status must not have an empty value"},
        {"backend=no%20such!", "backend must be one or more backend names: no such!"},
        {"created_after=yesterday",
            "created_after must be an RFC 3339 timestamp with an offset, e.g. 2026-04-01T12:00:00Z"
                + " (a + in the offset must be sent as %2B)"},
        {"created_before=2026-01-01",
            "created_before must be an RFC 3339 timestamp with an offset, e.g. 2026-04-01T12:00:00Z"
                + " (a + in the offset must be sent as %2B)"},
        {"created_after=2026-01-03T00:00:00Z&created_before=2026-01-03T00:00:00Z",
            "created_after must be earlier than created_before"},
        {"status=running&limit=0", "limit must be between 1 and 1000"},
        {"backend=local&limit=2&cursor=not-a-cursor", "invalid pagination cursor"},
    };
    for (String[] c : cases) {
      Resp r = gw.get("/v1/sandboxes?" + c[0], key);
      assertThat(r.status()).as(c[0]).isEqualTo(422);
      assertThat(r.detail()).as(c[0]).isEqualTo(c[1]);
    }
    String many = String.join(",", java.util.Collections.nCopies(33, "b"));
    StringBuilder distinct = new StringBuilder();
    for (int i = 0; i < 33; i++) {
      distinct.append(i == 0 ? "" : ",").append("b").append(i);
    }
    assertThat(gw.get("/v1/sandboxes?backend=" + many, key).status()).as("repeats count once").isEqualTo(200);
    assertThat(gw.get("/v1/sandboxes?backend=" + distinct, key).detail()).isEqualTo("backend takes at most 32 values");
  }

  @Test
  void another_organizations_sandboxes_never_appear() {
    String[] queries = {"", "?status=running", "?status=destroyed", "?backend=docker", "?backend=local,docker",
        "?created_after=2026-01-01T00:00:00Z&created_before=2026-01-04T00:00:00Z", "?status=running&limit=1",
        "?status=destroyed,running&backend=local,docker&created_after=2026-01-01T00:00:00Z&limit=100"};
    for (String q : queries) {
      assertThat(listed(q, key)).as(q).doesNotContainAnyElementsOf(otherIds);
      assertThat(otherIds).as(q).containsAll(listed(q, otherKey));
    }
    assertThat(listed("?status=running", otherKey)).isEqualTo(List.of(otherIds.get(0)));
    assertThat(listed("?backend=docker", otherKey)).isEqualTo(List.of(otherIds.get(1)));
    // a cursor from this organization's pages only positions the other's list
    String cursor = gw.get("/v1/sandboxes?limit=1", key).header("X-Next-Cursor");
    assertThat(listed("?limit=10&cursor=" + cursor + "&backend=local,docker", otherKey))
        .doesNotContainAnyElementsOf(ids);
  }
}
