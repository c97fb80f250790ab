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
 * Reads a JSON request body field by field, collecting type errors in the FastAPI/pydantic shape
 * ({@code {"detail": [{"type", "loc", "msg", "input"}]}}) that the seed's clients already handle.
 * Call {@link #check()} after reading every field.
 */
public final class Body {
  private final JsonObject json;
  private final JsonArray errors = new JsonArray();

  private Body(JsonObject json) {
    this.json = json;
  }

  /** Parses {@code raw} as a JSON object or fails with a 422. */
  public static Body parse(Buffer raw) {
    if (raw == null || raw.length() == 0) {
      throw new ApiException(422, new JsonArray().add(error("missing", "body", null, "Field required", null)));
    }
    Object value;
    try {
      value = io.vertx.core.json.Json.decodeValue(raw);
    } catch (DecodeException e) {
      throw new ApiException(422, new JsonArray().add(error("json_invalid", "body", null, "JSON decode error",
          new JsonObject())));
    }
    if (!(value instanceof JsonObject obj)) {
      throw new ApiException(422, new JsonArray().add(error("model_attributes_type", "body", null,
          "Input should be a valid dictionary or object to extract fields from", value)));
    }
    return new Body(obj);
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
    if (v == null) {
      if (required) {
        add("missing", field, "Field required", null);
      }
      return null;
    }
    if (!(v instanceof String s)) {
      add("string_type", field, "Input should be a valid string", v);
      return null;
    }
    if (s.length() < min) {
      add("string_too_short", field, "String should have at least " + min + " character" + (min == 1 ? "" : "s"), s);
      return null;
    }
    if (s.length() > max) {
      add("string_too_long", field, "String should have at most " + max + " characters", s);
      return null;
    }
    return s;
  }

  /** An integer; {@code minExclusive} as pydantic's {@code gt}, or {@code null} for no bound. */
  public Integer integer(String field, Integer greaterThan, Integer greaterOrEqual) {
    Object v = json.getValue(field);
    if (v == null) {
      return null;
    }
    Integer n = null;
    if (v instanceof Integer || v instanceof Long || v instanceof Short) {
      long l = ((Number) v).longValue();
      if (l >= Integer.MIN_VALUE && l <= Integer.MAX_VALUE) {
        n = (int) l;
      }
    } else if (v instanceof Double d && d == Math.rint(d) && Math.abs(d) <= Integer.MAX_VALUE) {
      n = d.intValue();
    }
    if (n == null || v instanceof Boolean) {
      add("int_type", field, "Input should be a valid integer", v);
      return null;
    }
    if (greaterThan != null && n <= greaterThan) {
      add("greater_than", field, "Input should be greater than " + greaterThan, v);
      return null;
    }
    if (greaterOrEqual != null && n < greaterOrEqual) {
      add("greater_than_equal", field, "Input should be greater than or equal to " + greaterOrEqual, v);
      return null;
    }
    return n;
  }

  public Double positiveNumber(String field) {
    Object v = json.getValue(field);
    if (v == null) {
      return null;
    }
    if (!(v instanceof Number num) || Double.isNaN(num.doubleValue()) || Double.isInfinite(num.doubleValue())) {
      add("float_type", field, "Input should be a valid number", v);
      return null;
    }
    if (num.doubleValue() <= 0) {
      add("greater_than", field, "Input should be greater than 0", v);
      return null;
    }
    return num.doubleValue();
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
      add("decimal_parsing", field, "Input should be a valid decimal", v);
      return null;
    }
    if (d.signum() < 0) {
      add("greater_than_equal", field, "Input should be greater than or equal to 0", v);
      return null;
    }
    return d;
  }

  public Boolean bool(String field) {
    Object v = json.getValue(field);
    if (v == null) {
      return null;
    }
    if (!(v instanceof Boolean b)) {
      add("bool_type", field, "Input should be a valid boolean", v);
      return null;
    }
    return b;
  }

  public Map<String, String> stringMap(String field) {
    Object v = json.getValue(field);
    if (v == null) {
      return null;
    }
    if (!(v instanceof JsonObject obj)) {
      add("dict_type", field, "Input should be a valid dictionary", v);
      return null;
    }
    Map<String, String> out = new LinkedHashMap<>();
    for (Map.Entry<String, Object> e : obj) {
      if (!(e.getValue() instanceof String s)) {
        errors.add(error("string_type", "body", List.of(field, e.getKey()), "Input should be a valid string",
            e.getValue()));
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
      add("list_type", field, "Input should be a valid list", v);
      return null;
    }
    List<String> out = new ArrayList<>();
    for (int i = 0; i < arr.size(); i++) {
      if (!(arr.getValue(i) instanceof String s)) {
        errors.add(error("string_type", "body", List.of(field, i), "Input should be a valid string", arr.getValue(i)));
      } else {
        out.add(s);
      }
    }
    return out;
  }

  /** A datetime that must carry a timezone. */
  public OffsetDateTime datetime(String field) {
    Object v = json.getValue(field);
    if (v == null) {
      return null;
    }
    if (!(v instanceof String s)) {
      add("datetime_type", field, "Input should be a valid datetime", v);
      return null;
    }
    try {
      return OffsetDateTime.parse(s);
    } catch (DateTimeParseException e) {
      add("datetime_parsing", field, "Input should be a valid datetime with a timezone", s);
      return null;
    }
  }

  /** Throws the collected type errors as one 422. */
  public void check() {
    if (!errors.isEmpty()) {
      throw new ApiException(422, errors);
    }
  }

  private void add(String type, String field, String msg, Object input) {
    errors.add(error(type, "body", List.of(field), msg, input));
  }

  private static JsonObject error(String type, String root, List<Object> path, String msg, Object input) {
    JsonArray loc = new JsonArray().add(root);
    if (path != null) {
      path.forEach(loc::add);
    }
    return new JsonObject().put("type", type).put("loc", loc).put("msg", msg).put("input", input);
  }
}
