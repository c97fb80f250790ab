package ai.bespokelabs.sandbox.gateway.http;

import ai.bespokelabs.sandbox.core.error.ApiException;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.time.OffsetDateTime;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Reads a JSON request body field by field, collecting errors exactly as the seed's server (FastAPI with pydantic
 * v2) reports them: {@code {"detail": [{"type", "loc", "msg", "input", "ctx"?}]}}, every error of the body at
 * once. Values are read as pydantic's lax mode reads them: an integer field takes {@code 5}, {@code 5.0} and
 * {@code "5"}, a number field {@code "1.5"}, a boolean field {@code "true"}, {@code "no"}, {@code 1}; a string
 * field takes only strings. Call {@link #check()} after reading every field.
 */
public final class Body {
  private final JsonObject json;
  private final JsonArray errors = new JsonArray();
  /** Fields whose model type has no None: an explicit null is a type error, not an absent field. */
  private final java.util.Set<String> nonNull = new java.util.HashSet<>();

  private Body(JsonObject json) {
    this.json = json;
  }

  /** Parses {@code raw} as a JSON object or fails with a 422. */
  public static Body parse(Buffer raw) {
    if (raw == null || raw.length() == 0) {
      throw new ApiException(422, new JsonArray().add(error("missing", "body", null, "Field required", null, null)));
    }
    Object value;
    try {
      value = io.vertx.core.json.Json.decodeValue(raw);
    } catch (DecodeException e) {
      JsonSyntax.Error syntax = JsonSyntax.locate(raw.toString(java.nio.charset.StandardCharsets.UTF_8));
      throw new ApiException(422, new JsonArray().add(error("json_invalid", "body", List.of(syntax.position()),
          "JSON decode error", new JsonObject(), new JsonObject().put("error", syntax.message()))));
    }
    if (!(value instanceof JsonObject obj)) {
      throw new ApiException(422, new JsonArray().add(error("model_attributes_type", "body", null,
          "Input should be a valid dictionary or object to extract fields from", value, null)));
    }
    return new Body(obj);
  }

  /** The whole body, as pydantic reports it for a missing field or a model-level error. */
  public JsonObject json() {
    return json;
  }

  /**
   * A model-level error ({@code @model_validator} in the seed): pydantic's {@code value_error} on the whole body,
   * its message prefixed {@code "Value error, "}.
   */
  public ApiException valueError(String message) {
    return new ApiException(422, new JsonArray().add(error("value_error", "body", null, "Value error, " + message,
        json, new JsonObject().put("error", new JsonObject()))));
  }

  /** Fields present with a non-null value, in request order. */
  public List<String> presentFields() {
    List<String> out = new ArrayList<>();
    json.forEach(e -> {
      if (e.getValue() != null) {
        out.add(e.getKey());
      }
    });
    return out;
  }

  /** The field's raw JSON value (null when absent), for structures validated by their caller. */
  public Object raw(String field) {
    return json.getValue(field);
  }

  public String string(String field, boolean required, int min, int max) {
    Object v = json.getValue(field);
    if (v == null && (required || nonNull.contains(field)) && json.containsKey(field)) {
      add("string_type", field, "Input should be a valid string", null, null);
      return null;
    }
    if (v == null) {
      if (required) {
        missing(field);
      }
      return null;
    }
    if (!(v instanceof String s)) {
      add("string_type", field, "Input should be a valid string", v, null);
      return null;
    }
    int length = s.codePointCount(0, s.length());
    if (length < min) {
      add("string_too_short", field, "String should have at least " + min + " character" + (min == 1 ? "" : "s"), s,
          new JsonObject().put("min_length", min));
      return null;
    }
    if (length > max) {
      add("string_too_long", field, "String should have at most " + max + " character" + (max == 1 ? "" : "s"), s,
          new JsonObject().put("max_length", max));
      return null;
    }
    return s;
  }

  /**
   * Marks fields the model types without None although they have a default (the seed's {@code language: str =
   * "python"}, say): absent they take the default, but an explicit null is pydantic's type error with input null.
   */
  public Body nonNull(String... fields) {
    nonNull.addAll(List.of(fields));
    return this;
  }

  /** A required field that is absent: pydantic reports the whole body as its input. */
  public void missing(String field) {
    errors.add(error("missing", "body", List.of(field), "Field required", json, null));
  }

  /** An integer; {@code greaterThan} as pydantic's {@code gt}, {@code greaterOrEqual} as {@code ge}, or null. */
  public Integer integer(String field, Integer greaterThan, Integer greaterOrEqual) {
    return integer(field, greaterThan, greaterOrEqual, null);
  }

  /** As {@link #integer(String, Integer, Integer)} with an upper bound, pydantic's {@code le} (or null). */
  public Integer integer(String field, Integer greaterThan, Integer greaterOrEqual, Integer lessOrEqual) {
    Object v = json.getValue(field);
    if (v == null) {
      if (nonNull.contains(field) && json.containsKey(field)) {
        add("int_type", field, "Input should be a valid integer", null, null);
      }
      return null;
    }
    Long n = laxInteger(v, field);
    if (n == null) {
      return null;
    }
    if (n < Integer.MIN_VALUE || n > Integer.MAX_VALUE) {
      add("int_type", field, "Input should be a valid integer", v, null);
      return null;
    }
    if (greaterThan != null && n <= greaterThan) {
      add("greater_than", field, "Input should be greater than " + greaterThan, v,
          new JsonObject().put("gt", greaterThan));
      return null;
    }
    if (greaterOrEqual != null && n < greaterOrEqual) {
      add("greater_than_equal", field, "Input should be greater than or equal to " + greaterOrEqual, v,
          new JsonObject().put("ge", greaterOrEqual));
      return null;
    }
    if (lessOrEqual != null && n > lessOrEqual) {
      add("less_than_equal", field, "Input should be less than or equal to " + lessOrEqual, v,
          new JsonObject().put("le", lessOrEqual));
      return null;
    }
    return n.intValue();
  }

  /** pydantic's lax integer: a JSON integer, a float without a fraction, or a string holding an integer. */
  private Long laxInteger(Object v, String field) {
    if (v instanceof Boolean) {
      add("int_type", field, "Input should be a valid integer", v, null);
      return null;
    }
    if (v instanceof Integer || v instanceof Long || v instanceof Short || v instanceof Byte) {
      return ((Number) v).longValue();
    }
    if (v instanceof java.math.BigInteger) {
      add("int_type", field, "Input should be a valid integer", v, null);
      return null;
    }
    if (v instanceof Number num) {
      double d = num.doubleValue();
      if (Double.isNaN(d) || Double.isInfinite(d)) {
        add("finite_number", field, "Input should be a finite number", v, null);
        return null;
      }
      if (d != Math.rint(d)) {
        add("int_from_float", field, "Input should be a valid integer, got a number with a fractional part", v, null);
        return null;
      }
      if (Math.abs(d) > Long.MAX_VALUE) {
        add("int_type", field, "Input should be a valid integer", v, null);
        return null;
      }
      return (long) d;
    }
    if (v instanceof String s) {
      try {
        return Long.parseLong(s.strip());
      } catch (NumberFormatException e) {
        add("int_parsing", field, "Input should be a valid integer, unable to parse string as an integer", v, null);
        return null;
      }
    }
    add("int_type", field, "Input should be a valid integer", v, null);
    return null;
  }

  public Double positiveNumber(String field) {
    Object v = json.getValue(field);
    if (v == null) {
      return null;
    }
    double d;
    if (v instanceof Number num && !(v instanceof Boolean)) {
      d = num.doubleValue();
    } else if (v instanceof String s) {
      try {
        d = Double.parseDouble(s.strip());
      } catch (NumberFormatException e) {
        add("float_parsing", field, "Input should be a valid number, unable to parse string as a number", v, null);
        return null;
      }
    } else {
      add("float_type", field, "Input should be a valid number", v, null);
      return null;
    }
    if (Double.isNaN(d) || Double.isInfinite(d)) {
      add("finite_number", field, "Input should be a finite number", v, null);
      return null;
    }
    if (d <= 0) {
      add("greater_than", field, "Input should be greater than 0", v, new JsonObject().put("gt", 0.0));
      return null;
    }
    return d;
  }

  /** A non-negative decimal given as a JSON number or a decimal string (money). */
  public java.math.BigDecimal decimal(String field) {
    Object v = json.getValue(field);
    if (v == null) {
      return null;
    }
    java.math.BigDecimal d = null;
    if (v instanceof Number || v instanceof String) {
      try {
        d = new java.math.BigDecimal(String.valueOf(v).trim());
      } catch (NumberFormatException ignored) {
        // reported below
      }
    }
    if (d == null || v instanceof Boolean) {
      add(v instanceof String ? "decimal_parsing" : "decimal_type", field,
          v instanceof String ? "Input should be a valid decimal" : "Decimal input should be an integer, float, string"
              + " or Decimal object", v, null);
      return null;
    }
    if (d.signum() < 0) {
      add("greater_than_equal", field, "Input should be greater than or equal to 0", v,
          new JsonObject().put("ge", 0));
      return null;
    }
    return d;
  }

  public Boolean bool(String field) {
    Object v = json.getValue(field);
    if (v == null) {
      if (nonNull.contains(field) && json.containsKey(field)) {
        add("bool_type", field, "Input should be a valid boolean", null, null);
      }
      return null;
    }
    if (v instanceof Boolean b) {
      return b;
    }
    // pydantic's lax booleans
    if (v instanceof String s) {
      switch (s.strip().toLowerCase(java.util.Locale.ROOT)) {
        case "1", "on", "t", "true", "y", "yes" -> {
          return true;
        }
        case "0", "off", "f", "false", "n", "no" -> {
          return false;
        }
        default -> { }
      }
      add("bool_parsing", field, "Input should be a valid boolean, unable to interpret input", v, null);
      return null;
    }
    if (v instanceof Number num && (num.doubleValue() == 0 || num.doubleValue() == 1)) {
      return num.doubleValue() == 1;
    }
    add("bool_type", field, "Input should be a valid boolean", v, null);
    return null;
  }

  public Map<String, String> stringMap(String field) {
    Object v = json.getValue(field);
    if (v == null) {
      return null;
    }
    if (!(v instanceof JsonObject obj)) {
      add("dict_type", field, "Input should be a valid dictionary", v, null);
      return null;
    }
    Map<String, String> out = new LinkedHashMap<>();
    for (Map.Entry<String, Object> e : obj) {
      if (!(e.getValue() instanceof String s)) {
        errors.add(error("string_type", "body", List.of(field, e.getKey()), "Input should be a valid string",
            e.getValue(), null));
      } else {
        out.put(e.getKey(), s);
      }
    }
    return out;
  }

  public List<String> stringList(String field) {
    Object v = json.getValue(field);
    if (v == null) {
      return null;
    }
    if (!(v instanceof JsonArray arr)) {
      add("list_type", field, "Input should be a valid list", v, null);
      return null;
    }
    List<String> out = new ArrayList<>();
    for (int i = 0; i < arr.size(); i++) {
      if (!(arr.getValue(i) instanceof String s)) {
        errors.add(error("string_type", "body", List.of(field, i), "Input should be a valid string", arr.getValue(i),
            null));
      } else {
        out.add(s);
      }
    }
    return out;
  }

  /**
   * A datetime as pydantic reads one: ISO 8601 with {@code T} or a space, with or without seconds' fractions;
   * without a timezone it is UTC (the gateway keeps instants); a bare date is its midnight; a number is Unix
   * seconds.
   */
  public OffsetDateTime datetime(String field) {
    Object v = json.getValue(field);
    if (v == null) {
      return null;
    }
    if (v instanceof Number n && !(v instanceof java.math.BigInteger)) {
      double secs = n.doubleValue();
      if (Double.isFinite(secs) && Math.abs(secs) < 1e11) {
        long whole = (long) Math.floor(secs);
        return java.time.Instant.ofEpochSecond(whole, Math.round((secs - whole) * 1e9))
            .atOffset(java.time.ZoneOffset.UTC);
      }
    }
    if (!(v instanceof String s)) {
      add("datetime_type", field, "Input should be a valid datetime", v, null);
      return null;
    }
    String text = s.length() > 10 && s.charAt(10) == ' ' ? s.substring(0, 10) + 'T' + s.substring(11) : s;
    try {
      return OffsetDateTime.parse(text);
    } catch (DateTimeParseException withoutZone) {
      try {
        return java.time.LocalDateTime.parse(text).atOffset(java.time.ZoneOffset.UTC);
      } catch (DateTimeParseException notLocal) {
        try {
          return java.time.LocalDate.parse(text).atStartOfDay().atOffset(java.time.ZoneOffset.UTC);
        } catch (DateTimeParseException notADate) {
          String reason = s.length() < 10 ? "input is too short" : "invalid datetime format";
          add("datetime_from_date_parsing", field, "Input should be a valid datetime or date, " + reason, s,
              new JsonObject().put("error", reason));
          return null;
        }
      }
    }
  }

  /** Throws the collected type errors as one 422. */
  public void check() {
    if (!errors.isEmpty()) {
      throw new ApiException(422, errors);
    }
  }

  private void add(String type, String field, String msg, Object input, JsonObject ctx) {
    errors.add(error(type, "body", List.of(field), msg, input, ctx));
  }

  /** One error as pydantic writes it; {@code ctx} only when the check has parameters. */
  static JsonObject error(String type, String root, List<Object> path, String msg, Object input, JsonObject ctx) {
    JsonArray loc = new JsonArray().add(root);
    if (path != null) {
      path.forEach(loc::add);
    }
    JsonObject e = new JsonObject().put("type", type).put("loc", loc).put("msg", msg).put("input", input);
    return ctx == null ? e : e.put("ctx", ctx);
  }

  /**
   * A query parameter that must match {@code pattern} (FastAPI's {@code Query(pattern=...)}): the 422 pydantic
   * gives when it does not.
   */
  static ApiException patternMismatch(String parameter, String value, String pattern) {
    return new ApiException(422, new JsonArray().add(error("string_pattern_mismatch", "query", List.of(parameter),
        "String should match pattern '" + pattern + "'", value, new JsonObject().put("pattern", pattern))));
  }
}
