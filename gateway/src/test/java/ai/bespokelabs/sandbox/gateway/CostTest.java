package ai.bespokelabs.sandbox.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.gateway.TestGateway.Resp;
import ai.bespokelabs.sandbox.testkit.Waits;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.math.BigDecimal;
import java.nio.file.Files;
import java.time.Duration;
import java.time.ZoneOffset;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Costs through the API with the local backend priced by an operator's catalog (0.054 $/h at 1 vCPU / 1 GiB). */
class CostTest {
  @RegisterExtension
  static final GatewayExtension GATEWAY = new GatewayExtension(CostTest::pricing);
  static TestGateway gw;

  static Map<String, String> pricing() {
    return PricingFiles.settings("""
        {"last_updated": "2026-11-01", "backends": {
          "local": {"vcpu_per_hour_usd": 0.036, "ram_gib_per_hour_usd": 0.018}}}""", "BESPOKE_CUSTOMER_MARKUP", "1.5");
  }

  static JsonObject costOf(String key, String id) {
    return Waits.upTo(5).alias("the ledger priced the sandbox").until(
        () -> gw.get("/v1/sandboxes/" + id + "/detail", key).json(),
        detail -> detail.getValue("cost") != null
            && "destroyed".equals(detail.getJsonObject("sandbox").getString("status"))
            && detail.getJsonObject("cost").getString("updated_at").equals(
                detail.getJsonObject("sandbox").getString("terminated_at"))).getJsonObject("cost");
  }

  @Test
  void a_destroyed_sandbox_is_priced_over_its_whole_window() throws Exception {
    String key = gw.bootstrap("Priced");
    JsonObject sbx = gw.sandbox(key, new JsonObject().put("cpu", 1).put("memory_mb", 1024));
    assertThat(sbx.getString("hourly_rate_usd")).isEqualTo("0.054");
    assertThat(sbx.getString("pricing_source")).isEqualTo("2026-11-01");
    gw.clock.advance(Duration.ofSeconds(1800));
    assertThat(gw.delete("/v1/sandboxes/" + sbx.getString("id"), key).status()).isEqualTo(200);
    JsonObject cost = costOf(key, sbx.getString("id"));
    BigDecimal seconds = new BigDecimal(cost.getString("billable_seconds"));
    assertThat(seconds).isBetween(new BigDecimal("1800"), new BigDecimal("1830"));
    BigDecimal estimate = new BigDecimal(cost.getString("estimated_cost_usd"));
    assertThat(estimate).isEqualByComparingTo(seconds.multiply(new BigDecimal("0.054"))
        .divide(BigDecimal.valueOf(3600), java.math.MathContext.DECIMAL128));
    assertThat(new BigDecimal(cost.getString("customer_cost_usd")))
        .isEqualByComparingTo(estimate.multiply(new BigDecimal("1.5")));
    assertThat(cost.getString("cost_state")).isEqualTo("estimated");

    JsonObject byBackend = gw.get("/v1/costs?group_by=backend", key).json();
    assertThat(byBackend.getString("group_by")).isEqualTo("backend");
    JsonArray items = byBackend.getJsonArray("items");
    assertThat(items).hasSize(1);
    assertThat(items.getJsonObject(0).getString("key")).isEqualTo("local");
    assertThat(new BigDecimal(items.getJsonObject(0).getString("provider_cost_usd"))).isEqualByComparingTo(estimate);
    JsonObject bySandbox = gw.get("/v1/costs", key).json();
    assertThat(bySandbox.getJsonArray("items").getJsonObject(0).getString("key")).isEqualTo(sbx.getString("id"));
  }

  @Test
  void a_daily_spend_cap_denies_new_sandboxes_once_reached() throws Exception {
    String key = gw.bootstrap("Capped");
    // the day's spend starts at UTC midnight: run at 06:00 so the 20 minutes below stay within one day
    java.time.OffsetDateTime now = java.time.OffsetDateTime.now(gw.clock).withOffsetSameInstant(ZoneOffset.UTC);
    java.time.OffsetDateTime six = now.toLocalDate().plusDays(1).atTime(6, 0).atOffset(ZoneOffset.UTC);
    gw.clock.advance(Duration.between(now, six));
    assertThat(gw.send("PUT", "/v1/policies/current", key,
        new JsonObject().put("daily_spend_limit_usd", "0.01").encode()).status()).isEqualTo(200);
    JsonObject first = gw.sandbox(key, null);
    gw.clock.advance(Duration.ofMinutes(20));
    Resp denied = gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "local"));
    assertThat(denied.status()).isEqualTo(403);
    JsonObject detail = denied.json().getJsonObject("detail");
    assertThat(detail.getString("policy")).isEqualTo("daily_spend_limit_usd");
    assertThat(detail.getString("message")).isEqualTo("Daily spend limit usd has been reached.");
    assertThat(detail.getString("limit")).isEqualTo("0.01");
    assertThat(new BigDecimal(detail.getString("current"))).isGreaterThanOrEqualTo(new BigDecimal("0.01"));
    java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(16);
    java.util.List<java.util.concurrent.Future<Integer>> racing = new java.util.ArrayList<>();
    for (int i = 0; i < 40; i++) {
      racing.add(pool.submit(() -> gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "local")).status()));
    }
    for (var r : racing) {
      assertThat(r.get()).as("no create is admitted once spend reached the cap").isEqualTo(403);
    }
    pool.shutdown();
    JsonObject usage = gw.get("/v1/policy-summary", key).json().getJsonObject("usage");
    assertThat(new BigDecimal(usage.getString("daily_spend_usd"))).isGreaterThanOrEqualTo(new BigDecimal("0.01"));
    assertThat(gw.delete("/v1/sandboxes/" + first.getString("id"), key).status()).isEqualTo(200);
  }

  @Test
  void bad_cost_queries_are_422() {
    String key = gw.bootstrap("Queries");
    assertThat(gw.get("/v1/costs?group_by=month", key).json().getJsonArray("detail").getJsonObject(0).getString("type"))
        .isEqualTo("string_pattern_mismatch");
    assertThat(gw.get("/v1/costs?start=2026-01-01T00:00:00", key).detail())
        .isEqualTo("start must be an ISO-8601 datetime with a timezone");
    assertThat(gw.get("/v1/costs?start=2026-01-02T00:00:00Z&end=2026-01-01T00:00:00Z", key).detail())
        .isEqualTo("start must be before end");
    assertThat(gw.get("/v1/costs?start=2026-01-01T00:00:00Z&end=2026-01-02T00:00:00Z", key).json()
        .getJsonArray("items")).isEmpty();
    String noUsage = gw.key(key, "sandboxes:read");
    assertThat(gw.get("/v1/costs", noUsage).detail()).isEqualTo("API key requires scope: usage:read");
  }

  @Test
  void csv_exports_page_with_a_cursor_repeat_the_header_and_neutralize_formulas() throws Exception {
    String key = gw.bootstrap("Exports");
    JsonObject sbx = gw.sandbox(key, null);
    String id = sbx.getString("id");
    for (String rid : new String[] {"=HYPERLINK(1)", "plain", "@sum"}) {
      assertThat(gw.post("/v1/sandboxes/" + id + "/execute", key, new JsonObject().put("command", "true"),
          "Idempotency-Key", rid).status()).isEqualTo(200);
    }
    record Export(java.util.List<String> rows, int pages) {}
    Export export = Waits.upTo(5).until(() -> {
      java.util.List<String> rows = new java.util.ArrayList<>();
      String cursor = null;
      int pages = 0;
      do {
        Resp page = gw.get("/v1/exports/usage.csv?limit=2" + (cursor == null ? "" : "&cursor=" + cursor), key);
        assertThat(page.status()).isEqualTo(200);
        assertThat(page.header("Content-Type")).isEqualTo("text/csv; charset=utf-8");
        assertThat(page.header("Content-Disposition")).isEqualTo("attachment; filename=\"bespoke-usage.csv\"");
        String[] lines = page.body().split("\r\n");
        assertThat(lines[0]).isEqualTo(
            "id,sandbox_id,request_id,metric,quantity,unit,provider_cost_usd,customer_cost_usd,created_at");
        rows.addAll(java.util.List.of(lines).subList(1, lines.length));
        cursor = page.header("X-Next-Cursor");
        pages++;
      } while (cursor != null && !cursor.isEmpty());
      return new Export(rows, pages);
    }, e -> e.rows().size() >= 3);
    assertThat(export.rows()).hasSize(3);
    assertThat(export.pages()).isEqualTo(2);
    assertThat(String.join("\n", export.rows())).contains(",'=HYPERLINK(1),").contains(",'@sum,").contains(",plain,");
    assertThat(gw.get("/v1/exports/secrets.csv", key).detail()).isEqualTo("unsupported export kind");
    assertThat(gw.get("/v1/exports/usage.csv?cursor=not-a-cursor", key).detail()).isEqualTo("invalid pagination cursor");
    assertThat(gw.get("/v1/exports/ledger.csv?limit=0", key).json().getJsonArray("detail").getJsonObject(0)
        .getJsonObject("ctx")).isEqualTo(new io.vertx.core.json.JsonObject().put("ge", 1));
    assertThat(gw.get("/v1/exports/ledger.csv?limit=1001", key).json().getJsonArray("detail").getJsonObject(0)
        .getJsonObject("ctx")).isEqualTo(new io.vertx.core.json.JsonObject().put("le", 1000));
    assertThat(gw.get("/v1/exports/costs.csv", key).body()).startsWith("sandbox_id,backend,billable_seconds,");
    assertThat(gw.get("/v1/exports/ledger.csv", gw.key(key, "usage:read")).detail())
        .isEqualTo("API key requires scope: exports:read");
  }

  @Test
  void reconciliation_summary_counts_the_organizations_sandboxes() {
    String key = gw.bootstrap("Reconcile");
    gw.sandbox(key, null);
    gw.sandbox(key, null);
    JsonObject summary = gw.get("/v1/reconciliation", key).json();
    assertThat(summary.getLong("total")).isEqualTo(2L);
    assertThat(summary.getLong("unreconciled")).isEqualTo(2L);
    assertThat(summary.getLong("reconciled")).isZero();
    assertThat(summary.getLong("missing")).isZero();
    assertThat(summary.getValue("last_provider_observed_at")).isNull();
    assertThat(gw.get("/v1/reconciliation", null).status()).isEqualTo(401);
  }
}
