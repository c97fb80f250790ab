package ai.bespokelabs.sandbox.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.gateway.TestGateway.Resp;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Request validation answers exactly what the seed's server (FastAPI, pydantic v2) answers for the same request:
 * {@code {"detail": [{"type", "loc", "msg", "input", "ctx"?}]}}, so clients written against it read ours alike.
 */
class ValidationBodiesTest {
  static TestGateway gw;
  static String key;
  static String sandbox;

  @BeforeAll
  static void start() {
    gw = new TestGateway();
    key = gw.bootstrap("Validation");
    sandbox = gw.sandbox(key, new JsonObject()).getString("id");
  }

  @AfterAll
  static void stop() {
    gw.close();
  }

  static JsonArray detail(Resp r) {
    assertThat(r.status()).as(r.body()).isEqualTo(422);
    return r.json().getJsonArray("detail");
  }

  static JsonObject error(String type, JsonArray loc, String msg, Object input, JsonObject ctx) {
    JsonObject e = new JsonObject().put("type", type).put("loc", loc).put("msg", msg).put("input", input);
    return ctx == null ? e : e.put("ctx", ctx);
  }

  @Test
  void a_group_by_outside_the_pattern() {
    assertThat(detail(gw.get("/v1/costs?group_by=bogus", key))).isEqualTo(new JsonArray().add(error(
        "string_pattern_mismatch", new JsonArray().add("query").add("group_by"),
        "String should match pattern '^(sandbox|backend|day)$'", "bogus",
        new JsonObject().put("pattern", "^(sandbox|backend|day)$"))));
  }

  @Test
  void execute_with_both_or_neither_of_code_and_command() {
    for (JsonObject body : new JsonObject[] {new JsonObject().put("code", "print(1)").put("command", "echo"),
        new JsonObject().put("language", "python")}) {
      assertThat(detail(gw.post("/v1/sandboxes/" + sandbox + "/execute", key, body))).isEqualTo(new JsonArray()
          .add(error("value_error", new JsonArray().add("body"),
              "Value error, provide exactly one of code or command", body,
              new JsonObject().put("error", new JsonObject()))));
    }
  }

  @Test
  void create_without_a_backend() {
    assertThat(detail(gw.post("/v1/sandboxes", key, new JsonObject().put("cpu", 1)))).isEqualTo(new JsonArray()
        .add(error("missing", new JsonArray().add("body").add("backend"), "Field required",
            new JsonObject().put("cpu", 1), null)));
  }

  @Test
  void a_negative_cpu_and_every_other_error_of_the_body_at_once() {
    assertThat(detail(gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "local").put("cpu", -1))))
        .isEqualTo(new JsonArray().add(error("greater_than", new JsonArray().add("body").add("cpu"),
            "Input should be greater than 0", -1, new JsonObject().put("gt", 0.0))));
    JsonObject body = new JsonObject().put("backend", "local").put("memory_mb", 0).put("timeout_secs", 1.5)
        .put("allow_internet", "maybe");
    assertThat(detail(gw.post("/v1/sandboxes", key, body))).isEqualTo(new JsonArray()
        .add(error("greater_than", new JsonArray().add("body").add("memory_mb"), "Input should be greater than 0", 0,
            new JsonObject().put("gt", 0)))
        .add(error("int_from_float", new JsonArray().add("body").add("timeout_secs"),
            "Input should be a valid integer, got a number with a fractional part", 1.5, null))
        .add(error("bool_parsing", new JsonArray().add("body").add("allow_internet"),
            "Input should be a valid boolean, unable to interpret input", "maybe", null)));
  }

  @Test
  void values_pydantic_reads_in_lax_mode_are_accepted() {
    Resp r = gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "local").put("cpu", "0.5")
        .put("memory_mb", "256").put("timeout_secs", 600.0).put("allow_internet", "no"));
    assertThat(r.status()).as(r.body()).isEqualTo(201);
    JsonObject config = r.json().getJsonObject("config");
    assertThat(config.getValue("cpu")).isEqualTo(0.5);
    assertThat(config.getValue("memory_mb")).isEqualTo(256);
    assertThat(config.getValue("allow_internet")).isEqualTo(false);
  }

  @Test
  void invalid_json_names_the_character_offset_and_pythons_reason() {
    Resp r = gw.send("POST", "/v1/sandboxes", key, "{bad json");
    assertThat(detail(r)).isEqualTo(new JsonArray().add(error("json_invalid", new JsonArray().add("body").add(1),
        "JSON decode error", new JsonObject(),
        new JsonObject().put("error", "Expecting property name enclosed in double quotes"))));
    String[][] cases = {
        {"{\"backend\": \"local\",}", "20", "Expecting property name enclosed in double quotes"},
        {"{\"backend\" \"local\"}", "11", "Expecting ':' delimiter"},
        {"{\"backend\": \"local\" \"cpu\": 1}", "20", "Expecting ',' delimiter"},
        {"{\"backend\": }", "12", "Expecting value"},
        {"{\"backend\": \"loc", "12", "Unterminated string starting at"},
        {"{} x", "3", "Extra data"},
        {"[1, 2,]", "6", "Expecting value"},
    };
    for (String[] c : cases) {
      JsonObject e = detail(gw.send("POST", "/v1/sandboxes", key, c[0]))
          .getJsonObject(0);
      assertThat(e.getJsonArray("loc")).as(c[0]).isEqualTo(new JsonArray().add("body").add(Integer.parseInt(c[1])));
      assertThat(e.getJsonObject("ctx").getString("error")).as(c[0]).isEqualTo(c[2]);
    }
  }

  @Test
  void query_limits_and_bounded_fields_carry_their_bounds() {
    assertThat(detail(gw.get("/v1/alerts?limit=0", key))).isEqualTo(new JsonArray().add(error(
        "greater_than_equal", new JsonArray().add("query").add("limit"), "Input should be greater than or equal to 1",
        "0", new JsonObject().put("ge", 1))));
    assertThat(detail(gw.get("/v1/audit?limit=201", key))).isEqualTo(new JsonArray().add(error(
        "less_than_equal", new JsonArray().add("query").add("limit"), "Input should be less than or equal to 200",
        "201", new JsonObject().put("le", 200))));
    assertThat(detail(gw.get("/v1/alerts?limit=ten", key))).isEqualTo(new JsonArray().add(error(
        "int_parsing", new JsonArray().add("query").add("limit"),
        "Input should be a valid integer, unable to parse string as an integer", "ten", null)));
    Resp alerts = gw.send("PUT", "/v1/alerts/configuration", key,
        new JsonObject().put("budget_threshold_percent", 101).put("repeated_failures_count", 0).encode(),
        "Content-Type", "application/json");
    assertThat(detail(alerts)).isEqualTo(new JsonArray()
        .add(error("less_than_equal", new JsonArray().add("body").add("budget_threshold_percent"),
            "Input should be less than or equal to 100", 101, new JsonObject().put("le", 100)))
        .add(error("greater_than_equal", new JsonArray().add("body").add("repeated_failures_count"),
            "Input should be greater than or equal to 1", 0, new JsonObject().put("ge", 1))));
    Resp retention = gw.send("PUT", "/v1/retention/current", key,
        new JsonObject().put("operational_days", 3651).encode());
    assertThat(detail(retention)).isEqualTo(new JsonArray().add(error("less_than_equal",
        new JsonArray().add("body").add("operational_days"), "Input should be less than or equal to 3650", 3651,
        new JsonObject().put("le", 3650))));
    Resp org = gw.send("POST", "/v1/organizations", null, new JsonObject().put("name", "").encode(),
        "X-Control-Plane-Admin", TestGateway.ADMIN);
    assertThat(detail(org)).isEqualTo(new JsonArray().add(error("string_too_short",
        new JsonArray().add("body").add("name"), "String should have at least 1 character", "",
        new JsonObject().put("min_length", 1))));
  }
  /** The five bodies, compared as the bytes the seed's server writes (numbers' types included). */
  @Test
  void the_seeds_bodies_byte_for_byte() {
    assertThat(gw.get("/v1/costs?group_by=bogus", key).body()).isEqualTo("{\"detail\":[{\"type\":"
        + "\"string_pattern_mismatch\",\"loc\":[\"query\",\"group_by\"],\"msg\":\"String should match pattern"
        + " '^(sandbox|backend|day)$'\",\"input\":\"bogus\",\"ctx\":{\"pattern\":\"^(sandbox|backend|day)$\"}}]}");
    assertThat(gw.send("POST", "/v1/sandboxes/" + sandbox + "/execute", key, "{\"code\":\"print(1)\",\"command\":\"ls\"}")
        .body()).isEqualTo("{\"detail\":[{\"type\":\"value_error\",\"loc\":[\"body\"],\"msg\":\"Value error,"
        + " provide exactly one of code or command\",\"input\":{\"code\":\"print(1)\",\"command\":\"ls\"},"
        + "\"ctx\":{\"error\":{}}}]}");
    assertThat(gw.send("POST", "/v1/sandboxes", key, "{\"cpu\":1}").body()).isEqualTo("{\"detail\":[{\"type\":"
        + "\"missing\",\"loc\":[\"body\",\"backend\"],\"msg\":\"Field required\",\"input\":{\"cpu\":1}}]}");
    assertThat(gw.send("POST", "/v1/sandboxes", key, "{\"backend\":\"local\",\"cpu\":-1}").body())
        .isEqualTo("{\"detail\":[{\"type\":\"greater_than\",\"loc\":[\"body\",\"cpu\"],\"msg\":\"Input should"
            + " be greater than 0\",\"input\":-1,\"ctx\":{\"gt\":0.0}}]}");
    assertThat(gw.send("POST", "/v1/sandboxes", key, "{bad json").body()).isEqualTo("{\"detail\":[{\"type\":"
        + "\"json_invalid\",\"loc\":[\"body\",1],\"msg\":\"JSON decode error\",\"input\":{},\"ctx\":{\"error\":"
        + "\"Expecting property name enclosed in double quotes\"}}]}");
  }

  /**
   * An explicit null where the seed's model has no None is that field's type error with input null; an empty
   * optional string of a create is not given (the seed's providers read it so), and an empty backend is the
   * seed's own string.
   */
  @Test
  void explicit_nulls_and_empty_strings_as_the_seed_reads_them() {
    assertThat(detail(gw.send("POST", "/v1/sandboxes", key, "{\"backend\":null}"))).isEqualTo(new JsonArray()
        .add(error("string_type", new JsonArray().add("body").add("backend"), "Input should be a valid string", null,
            null)));
    assertThat(detail(gw.send("POST", "/v1/sandboxes/" + sandbox + "/execute", key,
        "{\"command\":\"ls\",\"language\":null}"))).isEqualTo(new JsonArray().add(error("string_type",
            new JsonArray().add("body").add("language"), "Input should be a valid string", null, null)));
    assertThat(detail(gw.send("PUT", "/v1/retention/current", key, "{\"operational_days\":null}")))
        .isEqualTo(new JsonArray().add(error("int_type", new JsonArray().add("body").add("operational_days"),
            "Input should be a valid integer", null, null)));
    assertThat(detail(gw.send("PUT", "/v1/alerts/configuration", key, "{\"provider_degradation_enabled\":null}")))
        .isEqualTo(new JsonArray().add(error("bool_type", new JsonArray().add("body")
            .add("provider_degradation_enabled"), "Input should be a valid boolean", null, null)));
    // a field the seed types Optional takes null as absent
    assertThat(gw.send("PUT", "/v1/alerts/configuration", key, "{\"budget_threshold_percent\":null}").status())
        .isEqualTo(200);

    Resp empty = gw.post("/v1/sandboxes", key, new JsonObject().put("backend", "local").put("image", "")
        .put("gpu", "").put("workdir", "").put("git_ref", ""));
    assertThat(empty.status()).as(empty.body()).isEqualTo(201);
    assertThat(empty.json().getJsonObject("config").getValue("gpu")).isNull();
    Resp noBackend = gw.post("/v1/sandboxes", key, new JsonObject().put("backend", ""));
    assertThat(noBackend.status()).isEqualTo(422);
    assertThat(noBackend.json().getValue("detail")).isEqualTo("backend is not enabled: ");
  }

  /** expires_at as pydantic reads a datetime: without a timezone (UTC here), with a space, a date, or a number. */
  @Test
  void an_expiry_is_read_as_pydantic_reads_a_datetime() {
    String[][] cases = {{"\"2099-01-02T03:04:05\"", "2099-01-02T03:04:05Z"}, {"\"2099-01-02 03:04:05+01:00\"",
        "2099-01-02T02:04:05Z"}, {"\"2099-01-02\"", "2099-01-02T00:00:00Z"}, {"4070908800", "2099-01-01T00:00:00Z"}};
    for (String[] c : cases) {
      Resp r = gw.send("POST", "/v1/api-keys", key, "{\"name\":\"expiring\",\"expires_at\":" + c[0] + "}");
      assertThat(r.status()).as(c[0] + ": " + r.body()).isEqualTo(201);
      assertThat(java.time.OffsetDateTime.parse(r.json().getString("expires_at")).toInstant())
          .as(c[0]).isEqualTo(java.time.Instant.parse(c[1]));
    }
    assertThat(detail(gw.send("POST", "/v1/api-keys", key, "{\"name\":\"x\",\"expires_at\":\"next tuesday\"}")))
        .isEqualTo(new JsonArray().add(error("datetime_from_date_parsing", new JsonArray().add("body")
            .add("expires_at"), "Input should be a valid datetime or date, invalid datetime format", "next tuesday",
            new JsonObject().put("error", "invalid datetime format"))));
  }
}
