package ai.bespokelabs.sandbox.gateway.dashboard;

import ai.bespokelabs.sandbox.testkit.CuttingProxy;
import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.gateway.GatewayExtension;
import ai.bespokelabs.sandbox.gateway.TestGateway;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.openqa.selenium.By;
import org.openqa.selenium.Keys;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.support.ui.Select;

/**
 * The dashboard in a real browser (Debian's headless Chromium): sign-in with a full and a read-only key,
 * filters and pagination, detail, live output while the program prints, a signal, terminate with a stale
 * version refused then accepted, CSRF refusal, budget and quota use, the policy, provider health and policy
 * denials, alerts, automatic refresh paused while the tab is hidden and the manual refresh, logout, the local
 * page. Any Content-Security-Policy violation
 * or uncaught script error in the console fails the test it happened in. Screenshots of every view go to
 * {@code target/dashboard-screenshots}.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class DashboardBrowserTest {
  @RegisterExtension
  static final GatewayExtension GATEWAY = new GatewayExtension(DashboardBrowserTest::settings);
  static TestGateway gw;
  static Browser browser;
  static String admin;
  static String readOnly;
  static final List<String> sandboxes = new ArrayList<>();
  /** The organization's concurrency cap, set to the sandboxes active when the policy is set. */
  static long cap;

  /** The dashboard's automatic refresh period (app.js). */
  static final int REFRESH_MS = 5000;

  /** Local login on, and local sandboxes priced (steeply) so the cost views have something to show. */
  static Map<String, String> settings() {
    try {
      java.nio.file.Path catalog = java.nio.file.Files.createTempFile("pricing-", ".json");
      java.nio.file.Files.writeString(catalog, """
          {"last_updated": "2026-11-01", "backends": {
            "local": {"vcpu_per_hour_usd": 36, "ram_gib_per_hour_usd": 0}}}""");
      return Map.of("BESPOKE_ENABLE_LOCAL_DASHBOARD_LOGIN", "true", "BESPOKE_PRICING_FILE", catalog.toString());
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  @BeforeAll
  static void start() {
    Assumptions.assumeTrue(Browser.available(),
        "chromium and chromium-driver are not installed (bin/test installs them): the browser tests are skipped");
    admin = gw.bootstrap("Acme");
    readOnly = gw.key(admin, "sandboxes:read", "usage:read", "policies:read", "alerts:read", "audit:read",
        "providers:read");
    for (int i = 0; i < 12; i++) {
      sandboxes.add(gw.sandbox(admin, null).getString("id"));
    }
    // one ended sandbox, for the status filter
    assertThat(gw.delete("/v1/sandboxes/" + sandboxes.get(0), admin).status()).isEqualTo(200);
    browser = new Browser();
  }

  @AfterAll
  static void stop() {
    if (browser != null) {
      browser.close();
    }
  }

  @AfterEach
  void no_csp_violation_or_script_error(org.junit.jupiter.api.TestInfo test) {
    browser.js("window.scrollTo(0, 0)");
    browser.screenshot("after-" + test.getTestMethod().orElseThrow().getName());
    assertThat(browser.violations()).as("the browser's console").isEmpty();
  }

  private static void signIn(String key, String path) {
    browser.open(gw.base + path);
    WebElement input = browser.untilShown("#api-key");
    input.sendKeys(key, Keys.ENTER);
    browser.untilShown("#app");
  }

  /** Shows a sandbox's detail from the list, turning its pages until the sandbox is on one. */
  private static void openSandbox(String id) {
    tab("sandboxes");
    browser.untilShown("#sandbox-table tbody tr");
    while (browser.find("#page-prev").isEnabled()) {
      turn("#page-prev");
    }
    while (browser.all("[data-sandbox='" + id + "']").isEmpty()) {
      assertThat(browser.find("#page-next").isEnabled()).as(id + " is on no page").isTrue();
      turn("#page-next");
    }
    browser.click("[data-sandbox='" + id + "']");
  }

  /** Turns the list's page and waits for the page turned to (it is fetched from the gateway). */
  private static void turn(String button) {
    String label = browser.find("#page-label").getText();
    browser.find(button).click();
    browser.until(d -> !d.findElement(By.id("page-label")).getText().equals(label));
  }

  private static void tab(String view) {
    browser.find("#tab-" + view).click();
    browser.untilShown("#view-" + view);
  }

  /** Waits until a row of the table under {@code css} holds every one of {@code texts}. */
  private static void untilRow(String css, String... texts) {
    browser.until(d -> d.findElements(By.cssSelector(css + " tbody tr")).stream()
        .anyMatch(row -> Arrays.stream(texts).allMatch(row.getText()::contains)));
  }

  /** A policy: the concurrency cap, spend limits, local sandboxes only, A100 GPUs only, two hours at most. */
  private static JsonObject policy(long concurrent, String hourlyUsd) {
    return new JsonObject().put("max_concurrent_sandboxes", concurrent).put("hourly_spend_limit_usd", hourlyUsd)
        .put("daily_spend_limit_usd", "5000").put("allowed_backends", new JsonArray().add("local"))
        .put("allowed_gpu_types", new JsonArray().add("a100")).put("max_sandbox_lifetime_secs", 7200);
  }

  @Test
  @Order(1)
  void a_full_key_signs_in_and_never_reaches_script_storage() {
    assertThat(gw.get("/", null).header("Location")).isEqualTo("/dashboard");
    signIn(admin, "/dashboard");
    browser.untilText("#who", "administrator");
    browser.untilText("#who", "session");
    assertThat((String) browser.js("return document.cookie")).as("HttpOnly").doesNotContain("bespoke_dashboard_session");
    assertThat(browser.js("return sessionStorage.length + localStorage.length")).isEqualTo(0L);
    assertThat(browser.driver.manage().getCookieNamed("bespoke_dashboard_session").isHttpOnly()).isTrue();
    browser.untilText("#cards", "Active resources");
    browser.untilText("#cards", "11");
    assertThat(browser.js("return document.visibilityState")).isEqualTo("visible");
    String created = gw.sandbox(admin, null).getString("id");
    sandboxes.add(created);
    // the live feed: a sandbox created elsewhere appears without reloading, pushed by the gateway
    browser.untilText("#live-feed", created);
    browser.untilText("#live-feed", "→ running");
    browser.untilText("#live-feed", "requested");
    browser.untilText("#live-feed", "→ creating");
    browser.untilText("#cards", "12");
    browser.screenshot("overview");
  }

  @Test
  @Order(2)
  void the_sandbox_list_filters_and_pages() {
    // by keyboard: arrow keys move between the tabs
    browser.find("#tab-overview").sendKeys(Keys.ARROW_RIGHT);
    browser.untilShown("#view-sandboxes");
    assertThat(browser.find("#tab-sandboxes").getAttribute("aria-selected")).isEqualTo("true");
    assertThat(browser.driver.switchTo().activeElement().getAttribute("id")).isEqualTo("tab-sandboxes");
    browser.untilShown("#sandbox-table tbody tr button");
    String first = browser.find("#sandbox-table tbody tr button").getText();
    browser.find("#sandbox-table tbody tr button").sendKeys(Keys.ENTER);
    browser.untilText("#detail-title", first);
    browser.find("#view-detail .detail-head button:last-of-type").sendKeys(Keys.ENTER);
    browser.until(d -> !d.findElement(org.openqa.selenium.By.id("view-detail")).isDisplayed());
    browser.recordRequests();
    // without a filter the server pages the list: the first page does not know yet how many follow
    browser.untilText("#list-count", "Sandboxes 1–10, newest first");
    browser.untilText("#page-label", "Page 1");
    browser.until(d -> d.findElements(org.openqa.selenium.By.cssSelector("#sandbox-table tbody tr")).size() == 10);
    assertThat(browser.find("#page-prev").isEnabled()).isFalse();
    browser.screenshot("sandboxes");
    browser.find("#page-next").click();
    browser.untilText("#page-label", "Page 2 of 2");
    browser.untilText("#list-count", "Sandboxes 11–13 of 13");
    browser.until(d -> d.findElements(org.openqa.selenium.By.cssSelector("#sandbox-table tbody tr")).size() == 3);
    assertThat(browser.find("#page-next").isEnabled()).isFalse();
    assertThat(browser.requests()).as("the list's requests")
        .anyMatch(u -> u.startsWith("/v1/sandboxes?limit=10&cursor="))
        .noneMatch(u -> u.equals("/v1/sandboxes"));
    browser.find("#page-prev").click();
    browser.untilText("#page-label", "Page 1");
    browser.until(d -> d.findElements(org.openqa.selenium.By.cssSelector("#sandbox-table tbody tr")).size() == 10);
    browser.untilText("#sandbox-table", sandboxes.get(sandboxes.size() - 1)); // newest first
    browser.find("#page-next").click();
    browser.untilText("#page-label", "Page 2 of 2");

    // with a filter the server filters and pages the list too
    browser.recordRequests();
    new Select(browser.find("#filter-status")).selectByValue("destroyed");
    browser.untilText("#list-count", "Matching sandboxes 1–1 of 1");
    browser.untilText("#page-label", "Page 1 of 1");
    browser.untilText("#sandbox-table tbody", sandboxes.get(0));
    new Select(browser.find("#filter-status")).selectByValue("");
    new Select(browser.find("#filter-backend")).selectByValue("local");
    browser.untilText("#list-count", "Matching sandboxes 1–10, newest first");
    browser.find("#page-next").click();
    browser.untilText("#page-label", "Page 2 of 2");
    browser.untilText("#list-count", "Matching sandboxes 11–13 of 13");
    browser.until(d -> d.findElements(org.openqa.selenium.By.cssSelector("#sandbox-table tbody tr")).size() == 3);
    browser.js("const f = document.getElementById('filter-from'); f.value = '2999-01-01';"
        + " f.dispatchEvent(new Event('change'));");
    browser.untilText("#list-count", "No sandbox matches the filters.");
    browser.untilText("#sandbox-table", "No sandbox matches the filters.");
    browser.js("const f = document.getElementById('filter-from'); f.value = ''; f.dispatchEvent(new Event('change'));");
    browser.untilText("#list-count", "Matching sandboxes 1–10, newest first");
    assertThat(browser.requests()).as("the filtered list's requests")
        .contains("/v1/sandboxes?limit=10&status=destroyed", "/v1/sandboxes?limit=10&backend=local",
            "/v1/sandboxes?limit=10&backend=local&created_after=2999-01-01T00%3A00%3A00Z")
        .anyMatch(u -> u.startsWith("/v1/sandboxes?limit=10&backend=local&cursor="));
  }

  @Test
  @Order(3)
  void detail_shows_output_live_while_the_program_prints_and_sends_a_signal() {
    String sbx = sandboxes.get(1);
    String exec = gw.post("/v1/sandboxes/" + sbx + "/executions", admin, new JsonObject().put("command",
        "for i in $(seq 1 40); do echo line $i; sleep 0.25; done")).json().getString("id");
    openSandbox(sbx);
    browser.untilText("#detail-title", sbx);
    browser.until(d -> !d.findElements(By.cssSelector("[data-execution='" + exec + "']")).isEmpty());
    browser.click("[data-execution='" + exec + "']");
    browser.untilText("#output", "line 3");
    String early = browser.find("#output").getText();
    assertThat(early).as("shown while the program still prints").doesNotContain("line 40");
    assertThat(gw.get("/v1/sandboxes/" + sbx + "/executions/" + exec, admin).json().getString("status"))
        .isEqualTo("running");
    browser.screenshot("detail-live-output");
    browser.untilText("#output", "[completed, exit code 0]");
    String all = browser.find("#output").getText();
    for (int i = 1; i <= 40; i++) {
      assertThat(all.split("\n")).as("line %d exactly once", i).containsOnlyOnce("line " + i);
    }

    String sleeper = gw.post("/v1/sandboxes/" + sbx + "/executions", admin, new JsonObject().put("command",
        "echo waiting; sleep 60")).json().getString("id");
    browser.until(d -> !d.findElements(By.cssSelector("[data-execution='" + sleeper + "']")).isEmpty());
    browser.click("[data-execution='" + sleeper + "']");
    browser.untilText("#output", "waiting");
    new Select(browser.find("#signal-name")).selectByValue("TERM");
    browser.find("#signal-send").click();
    browser.untilText("#flash", "Sent TERM");
    browser.untilText("#output", "[cancelled");
  }

  @Test
  @Order(4)
  void live_output_resumes_after_the_connection_drops_without_losing_or_repeating_lines() throws Exception {
    String sbx = sandboxes.get(4);
    int port = Integer.parseInt(gw.base.substring(gw.base.lastIndexOf(':') + 1));
    try (CuttingProxy proxy = new CuttingProxy(port)) {
      // the same host on another port: the session cookie goes along
      browser.open("http://127.0.0.1:" + proxy.port() + "/dashboard");
      browser.untilShown("#app");
      String exec = gw.post("/v1/sandboxes/" + sbx + "/executions", admin, new JsonObject().put("command",
          "for i in $(seq 1 60); do echo line $i; sleep 0.1; done")).json().getString("id");
      openSandbox(sbx);
      browser.untilText("#detail-title", sbx);
      browser.click("[data-execution='" + exec + "']");
      browser.untilText("#output", "line 5");
      browser.js("window.outputStates = []; const el = document.getElementById('output-state');"
          + " new MutationObserver(() => window.outputStates.push(el.textContent))"
          + ".observe(el, {childList: true, characterData: true, subtree: true});");
      proxy.cut();
      browser.untilText("#output", "[completed, exit code 0]");
      assertThat(String.valueOf(browser.js("return window.outputStates.join(',')")))
          .as("the stream was cut and resumed").contains("reconnecting");
      String all = browser.find("#output").getText();
      for (int i = 1; i <= 60; i++) {
        assertThat(all.split("\n")).as("line %d exactly once", i).containsOnlyOnce("line " + i);
      }
      browser.screenshot("output-resumed");
    }
    browser.open(gw.base + "/dashboard");
    browser.untilShown("#app");
  }

  @Test
  @Order(5)
  void terminate_with_a_stale_version_is_refused_then_accepted() {
    String sbx = sandboxes.get(2);
    openSandbox(sbx);
    browser.untilText("#detail-title", sbx);
    browser.click("#terminate");
    browser.untilShown("#confirm");
    browser.screenshot("terminate-confirm");
    // the sandbox changes behind the page: its version moves on
    assertThat(gw.post("/v1/sandboxes/" + sbx + "/timeout", admin, new JsonObject().put("timeout_secs", 3600))
        .status()).isEqualTo(200);
    browser.click("#confirm-yes");
    browser.untilText("#flash", "409");
    assertThat(gw.get("/v1/sandboxes/" + sbx, admin).json().getString("status")).isEqualTo("running");
    int version = gw.get("/v1/sandboxes/" + sbx, admin).json().getInteger("version");
    browser.untilText("#detail-version", "version " + version);
    browser.screenshot("terminate-stale");
    browser.click("#terminate");
    browser.click("#confirm-yes");
    browser.untilText("#flash", "Terminated " + sbx);
    assertThat(gw.get("/v1/sandboxes/" + sbx, admin).json().getString("status")).isIn("stopping", "destroyed");
    browser.untilText("#detail-status", "destroyed");
    assertThat(browser.all("#terminate")).as("no control on an ended sandbox").isEmpty();
  }

  @Test
  @Order(6)
  void a_state_changing_request_without_the_csrf_token_is_refused() {
    Map<String, Object> r = browser.fetch("fetch('/v1/api-keys', {method: 'POST', headers: {'Content-Type':"
        + " 'application/json'}, body: JSON.stringify({name: 'x', scopes: ['sandboxes:read']})})"
        + ".then(async (res) => done({status: res.status, body: await res.json()}));");
    assertThat(r.get("status")).isEqualTo(403L);
    assertThat(r.get("body")).isEqualTo(Map.of("detail", "CSRF token is missing or invalid"));
  }

  @Test
  @Order(7)
  void activity_and_costs_views() {
    tab("activity");
    browser.untilText("#audit", "sandbox.terminate");
    browser.untilText("#audit", "dashboard.login");
    assertThat(browser.find("#export-usage").isDisplayed()).isTrue();
    browser.screenshot("activity");
    tab("costs");
    browser.untilShown("#cost-plot svg");
    browser.untilText("#cost-table", "Customer cost by day and backend");
    browser.until(d -> d.findElements(org.openqa.selenium.By.cssSelector("#cost-table tbody tr")).size() == 30);
    browser.until(d -> !d.findElements(org.openqa.selenium.By.cssSelector("#cost-plot svg rect")).isEmpty()); // today's bar
    browser.untilText("#cost-table thead", "local");
    browser.screenshot("costs");
  }

  @Test
  @Order(8)
  void the_overview_shows_budget_and_quota_use_the_policy_provider_health_and_denials() {
    cap = gw.get("/v1/policy-summary", admin).json().getJsonObject("usage").getLong("active_sandboxes");
    assertThat(gw.send("PUT", "/v1/policies/current", admin, policy(cap, "500").encode()).status()).isEqualTo(200);
    // creates the policy refuses: no lifetime, then over the concurrency cap, then a backend it does not allow
    TestGateway.Resp noLifetime = gw.post("/v1/sandboxes", admin, new JsonObject().put("backend", "local"));
    assertThat(noLifetime.status()).isEqualTo(403);
    assertThat(noLifetime.json().getJsonObject("detail").getString("policy")).isEqualTo("max_sandbox_lifetime_secs");
    TestGateway.Resp overCap = gw.post("/v1/sandboxes", admin, new JsonObject().put("backend", "local")
        .put("timeout_secs", 600));
    assertThat(overCap.status()).isEqualTo(403);
    assertThat(overCap.json().getJsonObject("detail").getString("policy")).isEqualTo("max_concurrent_sandboxes");
    List<String> enabled = gw.get("/v1/providers", admin).json().getJsonArray("items").stream()
        .map(i -> ((JsonObject) i).getString("backend")).toList();
    String other = enabled.stream().filter(b -> !b.equals("local")).findFirst().orElse(null);
    if (other != null) {
      TestGateway.Resp notAllowed = gw.post("/v1/sandboxes", admin, new JsonObject().put("backend", other)
          .put("timeout_secs", 600));
      assertThat(notAllowed.status()).isEqualTo(403);
      assertThat(notAllowed.json().getJsonObject("detail").getString("policy")).isEqualTo("allowed_backends");
    }
    TestGateway.Resp checked = gw.post("/v1/providers/local/health-check", admin, null);
    assertThat(checked.status()).isEqualTo(200);
    assertThat(checked.json().getString("status")).isEqualTo("healthy");

    tab("overview");
    // budget and quota: use against each limit, as a bar and in words
    browser.untilText("#budget", cap + " of " + cap);
    assertThat(browser.find("#budget progress[aria-label='Concurrent sandboxes']").getAttribute("value"))
        .isEqualTo("100");
    browser.untilText("#budget", "of $500.00");
    browser.untilText("#budget", "of $5000.00");
    assertThat(browser.all("#budget progress")).hasSize(3);
    // the backend, GPU and lifetime policy
    browser.until(d -> browser.all("#budget .facts dd").stream().map(WebElement::getText).toList()
        .equals(List.of("local", "a100", "2h 0m")));
    // the refused creates, newest first, with what they asked for against the limit
    untilRow("#denials", "max_concurrent_sandboxes", "Concurrent sandbox limit has been reached.",
        String.valueOf(cap));
    untilRow("#denials", "max_sandbox_lifetime_secs", "A sandbox lifetime is required by organization policy.",
        "no lifetime", "7200");
    if (other != null) {
      untilRow("#denials", "allowed_backends", "Backend " + other + " is not allowed by organization policy.");
    }
    // provider health for every enabled backend; the one checked is healthy
    for (String backend : enabled) {
      untilRow("#providers", backend);
    }
    assertThat(browser.all("#providers tbody tr")).hasSize(enabled.size());
    untilRow("#providers", "local", "healthy", "yes");
    browser.screenshot("overview-policy");
  }

  @Test
  @Order(9)
  void alerts_raised_by_the_alert_rules_show_in_the_activity_view() {
    // every live sandbox older than a second is long-running; reading the alerts evaluates the rules
    assertThat(gw.send("PUT", "/v1/alerts/configuration", admin, new JsonObject().put("long_running_secs", 1)
        .encode()).status()).isEqualTo(200);
    tab("activity");
    String running = sandboxes.get(1);
    untilRow("#alerts", "long_running", "warning", "Sandbox has been running for more than 1 seconds.", running);
    assertThat(browser.all("#alerts tbody tr").stream().map(WebElement::getText)
        .filter(t -> t.contains(sandboxes.get(0)))).as("no alert for the ended sandbox").isEmpty();
    browser.screenshot("activity-alerts");
  }

  @Test
  @Order(10)
  void automatic_refresh_pauses_while_the_tab_is_hidden_and_refresh_fetches_at_once() throws Exception {
    tab("overview");
    browser.untilText("#budget", "of $500.00");
    browser.hideTab();
    try {
      // a refresh under way when the tab went to the background ends; then nothing is fetched on its own
      browser.until(d -> browser.js("return document.getElementById('app').getAttribute('aria-busy')") == null);
      browser.recordRequests();
      String updated = browser.find("#updated").getText();
      // changes behind the page: a lifecycle change (pushed: the feed shows it) and a lower hourly limit
      String ended = sandboxes.get(5);
      assertThat(gw.delete("/v1/sandboxes/" + ended, admin).status()).isEqualTo(200);
      assertThat(gw.send("PUT", "/v1/policies/current", admin, policy(cap, "400").encode()).status())
          .isEqualTo(200);
      browser.untilText("#live-feed", ended);
      // past the time a refresh is due, and past the one a pushed change asks for when visible
      browser.fetch("setTimeout(() => done({}), " + (REFRESH_MS + 2000) + ");");
      assertThat(browser.requests()).as("requests made while the tab is hidden").isEmpty();
      assertThat(browser.find("#updated").getText()).isEqualTo(updated);
      assertThat(browser.find("#budget").getText()).contains("of $500.00");
      assertThat(browser.js("return document.visibilityState")).isEqualTo("hidden");

      browser.click("#refresh");
      browser.untilText("#budget", "of $400.00");
      assertThat(browser.requests()).as("the manual refresh's requests: the cards read the live sandboxes only")
          .contains("/v1/sandboxes?status=creating,running,stopping", "/v1/policy-summary", "/v1/providers")
          .anyMatch(u -> u.startsWith("/v1/sandboxes?status=failed&created_after="))
          .noneMatch(u -> u.equals("/v1/sandboxes"));
      browser.until(d -> !browser.find("#updated").getText().equals(updated));
    } finally {
      browser.showTab();
    }
    // shown again: the automatic refresh goes on
    browser.recordRequests();
    browser.until(d -> browser.requests().contains("/v1/policy-summary"));
  }

  @Test
  @Order(11)
  void logout_ends_the_session() {
    browser.find("#logout").click();
    browser.untilShown("#login");
    Map<String, Object> r = browser.fetch("fetch('/v1/session').then((res) => done({status: res.status}));");
    assertThat(r.get("status")).isEqualTo(401L);
    // the console is captured (so a CSP violation would be seen): the refused request is reported there
    assertThat(browser.console()).anyMatch(m -> m.contains("401"));
    // and the policy is enforced and a violation is seen: an inline script is refused and reported
    browser.js("const s = document.createElement('script'); s.textContent = 'window.injected = 1';"
        + " document.body.append(s);");
    assertThat(browser.js("return window.injected === undefined")).isEqualTo(true);
    browser.until(d -> browser.violations().stream().anyMatch(m -> m.contains("Content Security Policy")));
    browser.forgetConsole();
    browser.screenshot("signed-out");
  }

  @Test
  @Order(12)
  void a_read_only_key_sees_no_terminate_control_and_no_exports() {
    signIn(readOnly, "/dashboard");
    browser.untilText("#who", "observer");
    String sbx = sandboxes.get(3);
    openSandbox(sbx);
    browser.untilText("#detail-title", sbx);
    assertThat(browser.all("#terminate")).isEmpty();
    browser.screenshot("read-only-detail");
    tab("activity");
    browser.untilText("#audit", "dashboard.login");
    assertThat(browser.find("#exports").isDisplayed()).isFalse();
    browser.find("#logout").click();
    browser.untilShown("#login");
  }

  @Test
  @Order(13)
  void the_local_page_keeps_the_key_in_the_tab_and_sends_it_as_bearer() {
    signIn(admin, "/dashboard/local");
    browser.untilText("#who", "API key");
    assertThat(browser.js("return sessionStorage.getItem('bespoke.dashboard.key')")).isEqualTo(admin);
    assertThat(browser.driver.manage().getCookieNamed("bespoke_dashboard_session")).isNull();
    browser.untilText("#cards", "Active resources");
    browser.screenshot("local");
    browser.find("#logout").click();
    browser.untilShown("#login");
    assertThat(browser.js("return sessionStorage.length")).isEqualTo(0L);
  }

  @Test
  @Order(14)
  void an_auto_sandbox_shows_where_it_was_placed_and_why_not_elsewhere() {
    String key = gw.bootstrap("Placed");
    JsonObject sbx = gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "auto")
        .put("prefer", new JsonArray().add("local")).put("exclude", new JsonArray().add("bwrap"))).json();
    assertThat(sbx.getString("backend")).isEqualTo("local");
    signIn(key, "/dashboard");
    openSandbox(sbx.getString("id"));
    browser.untilText("#detail-title", sbx.getString("id"));
    browser.untilText("#placement caption", "backend auto chose local");
    untilRow("#placement", "local", "chosen");
    untilRow("#placement", "bwrap", "rejected", "excluded by the request");
    browser.screenshot("detail-placement");
    browser.find("#logout").click();
    browser.untilShown("#login");
  }
}
