package ai.bespokelabs.sandbox.gateway;

import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import io.vertx.json.schema.Draft;
import io.vertx.json.schema.JsonSchema;
import io.vertx.json.schema.JsonSchemaOptions;
import io.vertx.json.schema.OutputFormat;
import io.vertx.json.schema.OutputUnit;
import io.vertx.json.schema.SchemaRepository;
import io.vertx.json.schema.Validator;
import io.vertx.openapi.contract.OpenAPIContract;
import io.vertx.openapi.contract.Operation;
import io.vertx.openapi.validation.ResponseValidator;
import io.vertx.openapi.validation.ValidatableResponse;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpResponse;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

/**
 * Every response a test gets through {@link TestGateway} is checked against the served OpenAPI document
 * (vertx-openapi's response validator): its status must be documented for the operation, and its body must
 * match the documented schema. So is every streamed event a test takes from the testkit's clients
 * ({@link StreamContractCheck}): an SSE event's data against the operation's {@code x-stream-event-data} schema, a
 * WebSocket text frame against its {@code x-websocket-frames} server schema. A mismatch fails the test that
 * received it, so the whole suite is the check.
 */
final class ContractCheck {
  /** What the validator can check (it cannot read a text/plain body against a string schema). */
  private static final Set<String> VALIDATABLE = Set.of("application/json", "application/octet-stream");
  /** Where the document's schemas are found by the stream checks. */
  private static final String BASE = "app:///openapi.json";
  private static final JsonSchemaOptions SCHEMA_OPTIONS = new JsonSchemaOptions().setDraft(Draft.DRAFT202012)
      .setBaseUri("app:///").setOutputFormat(OutputFormat.Basic);
  /** The events that carry {@code id: <seq>} (the others, started, exit and error, carry none). */
  private static final Set<String> SEQUENCED = Set.of("stdout", "stderr", "notice", "gap");
  private static final Vertx VERTX = Vertx.vertx();
  private static final JsonObject DOCUMENT = read();
  private static final OpenAPIContract CONTRACT = load(DOCUMENT.copy());
  private static final ResponseValidator VALIDATOR = ResponseValidator.create(VERTX, CONTRACT);
  /** Per operation id, the schema reference of its SSE events' data, and of its WebSocket server frames. */
  private static final Map<String, String> SSE_EVENTS = new HashMap<>();
  private static final Map<String, String> SOCKET_FRAMES = new HashMap<>();
  private static final SchemaRepository SCHEMAS = streamSchemas();
  private static final Map<String, Validator> VALIDATORS = new ConcurrentHashMap<>();

  private ContractCheck() {}

  private static JsonObject read() {
    try (InputStream in = ContractCheck.class.getClassLoader().getResourceAsStream("openapi.json")) {
      return new JsonObject(Buffer.buffer(in.readAllBytes()));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The document's schemas, and which one each streaming operation declares for its events. */
  private static SchemaRepository streamSchemas() {
    DOCUMENT.getJsonObject("paths").forEach(p -> ((JsonObject) p.getValue()).forEach(o -> {
      if (o.getValue() instanceof JsonObject op && op.getString("operationId") != null) {
        JsonObject frames = op.getJsonObject("x-websocket-frames");
        if (frames != null) {
          SOCKET_FRAMES.put(op.getString("operationId"), frames.getJsonObject("server").getString("$ref"));
        }
        op.getJsonObject("responses", new JsonObject()).forEach(r -> {
          JsonObject sse = r.getValue() instanceof JsonObject resp && resp.getJsonObject("content") != null
              ? resp.getJsonObject("content").getJsonObject("text/event-stream") : null;
          if (sse != null && sse.getJsonObject("x-stream-event-data") != null) {
            SSE_EVENTS.put(op.getString("operationId"), sse.getJsonObject("x-stream-event-data").getString("$ref"));
          }
        });
      }
    }));
    return SchemaRepository.create(SCHEMA_OPTIONS).dereference(BASE, JsonSchema.of(DOCUMENT.copy()));
  }

  private static OpenAPIContract load(JsonObject doc) {
    try {
      // the validator takes parameters as whole path segments only: those routes (CSV exports) go unchecked
      doc.getJsonObject("paths").fieldNames().removeIf(p -> p.matches(".*(\\}[^/]|[^/]\\{).*"));
      // the validator knows JSON and bytes: other media (text, HTML, CSS, CSV, SSE, archives) go unchecked
      doc.getJsonObject("paths").forEach(p -> ((JsonObject) p.getValue()).forEach(o -> {
        if (o.getValue() instanceof JsonObject op) {
          op.fieldNames().removeIf(k -> k.startsWith("x-") && op.getValue(k) == null); // the loader rejects nulls
          if (op.getJsonObject("requestBody") != null
              && keepValidatable(op.getJsonObject("requestBody").getJsonObject("content"))) {
            op.remove("requestBody");
          }
          op.getJsonObject("responses", new JsonObject()).forEach(r -> {
            if (r.getValue() instanceof JsonObject resp && keepValidatable(resp.getJsonObject("content"))) {
              resp.remove("content");
            }
          });
        }
      }));
      return OpenAPIContract.from(VERTX, doc).await(30, TimeUnit.SECONDS);
    } catch (Exception e) {
      throw new IllegalStateException("the OpenAPI document does not load", e);
    }
  }

  /** Drops the media the validator cannot check; true when none is left. */
  private static boolean keepValidatable(JsonObject content) {
    if (content == null) {
      return false;
    }
    content.fieldNames().removeIf(type -> !VALIDATABLE.contains(type));
    return content.isEmpty();
  }

  /** The violation of {@code r} (an answer to {@code method path}), or null when it conforms. */
  static String violation(String method, String path, HttpResponse<String> r) {
    return violation(method, path, r.statusCode(), r.headers().firstValue("Content-Type").orElse(null), r.body());
  }

  static String violation(String method, String path, int status, String contentType, String text) {
    String bare = path.contains("?") ? path.substring(0, path.indexOf('?')) : path;
    Operation op = CONTRACT.findOperation(bare, HttpMethod.valueOf(method));
    if (op == null) {
      return null; // an unknown route: its 404 is the router's, checked by the tests that send it
    }
    Buffer body = text == null || text.isEmpty() ? null : Buffer.buffer(text);
    ValidatableResponse response = body == null || contentType == null
        ? ValidatableResponse.create(status, Map.of())
        : ValidatableResponse.create(status, Map.of(), body, contentType.split(";")[0].trim());
    try {
      VALIDATOR.validate(response, op.getOperationId()).await(30, TimeUnit.SECONDS);
      return null;
    } catch (Exception e) {
      return method + " " + path + " -> " + status + ": " + describe(e) + " body: "
          + (text == null ? "" : text.substring(0, Math.min(300, text.length())));
    }
  }

  /**
   * The violation of a Server-Sent Event (its {@code name}, {@code id} and JSON {@code data}) received in answer to
   * {@code method url}, or null when it conforms: its data must match the operation's event schema; where that
   * schema tells events apart by {@code type}, the event's name must be its type, output, notice and gap events
   * carry {@code id: <seq>} and the others no id.
   */
  static String sseViolation(String method, String url, String name, String id, JsonObject data) {
    Operation op = CONTRACT.findOperation(URI.create(url).getPath(), HttpMethod.valueOf(method));
    if (op == null) {
      return null; // an unknown route: it streams nothing
    }
    String where = method + " " + url + " event " + name + (id == null ? "" : " id " + id) + ": ";
    String ref = SSE_EVENTS.get(op.getOperationId());
    if (ref == null) {
      return where + "the document declares no events for " + op.getOperationId();
    }
    String target = discriminated(ref, data);
    if (target == null) {
      return where + "type " + data.getValue("type") + " is none of " + types(ref) + " body: " + brief(data);
    }
    if (!target.equals(ref)) {
      String type = data.getString("type");
      if (!type.equals(name)) {
        return where + "the event is named " + name + " but its type is " + type;
      }
      Object seq = data.getValue("seq");
      String expectedId = SEQUENCED.contains(type) && seq != null ? String.valueOf(seq) : null;
      if (!java.util.Objects.equals(expectedId, id)) {
        return where + (expectedId == null ? "a " + type + " event carries no id"
            : "the id of a " + type + " event is its seq " + expectedId);
      }
    }
    String invalid = invalid(target, data);
    return invalid == null ? null : where + invalid + " body: " + brief(data);
  }

  /** The violation of a WebSocket text frame received on {@code url}, or null when it conforms. */
  static String webSocketViolation(String url, JsonObject frame) {
    Operation op = CONTRACT.findOperation(URI.create(url).getPath(), HttpMethod.GET);
    if (op == null) {
      return null;
    }
    String where = "WebSocket " + url + " frame: ";
    String ref = SOCKET_FRAMES.get(op.getOperationId());
    if (ref == null) {
      return where + "the document declares no frames for " + op.getOperationId();
    }
    String target = discriminated(ref, frame);
    if (target == null) {
      return where + "type " + frame.getValue("type") + " is none of " + types(ref) + " body: " + brief(frame);
    }
    String invalid = invalid(target, frame);
    return invalid == null ? null : where + invalid + " body: " + brief(frame);
  }

  /**
   * The schema {@code data} is held to: the one its discriminator names for its type (so a failure names that
   * schema's rules rather than every alternative's), or {@code ref} itself when it has none; null for a type the
   * discriminator does not know.
   */
  private static String discriminated(String ref, JsonObject data) {
    JsonObject discriminator = schema(ref).getJsonObject("discriminator");
    if (discriminator == null) {
      return ref;
    }
    Object type = data.getValue(discriminator.getString("propertyName"));
    return type instanceof String t ? discriminator.getJsonObject("mapping").getString(t) : null;
  }

  private static Set<String> types(String ref) {
    return new java.util.TreeSet<>(schema(ref).getJsonObject("discriminator").getJsonObject("mapping").fieldNames());
  }

  private static JsonObject schema(String ref) {
    JsonObject at = DOCUMENT;
    for (String part : ref.substring(2).split("/")) {
      at = at.getJsonObject(part);
    }
    return at;
  }

  private static String invalid(String ref, JsonObject data) {
    Validator validator = VALIDATORS.computeIfAbsent(ref,
        r -> SCHEMAS.validator(JsonSchema.of(new JsonObject().put("$ref", BASE + r)), SCHEMA_OPTIONS));
    OutputUnit result = validator.validate(data);
    if (Boolean.TRUE.equals(result.getValid())) {
      return null;
    }
    String errors = result.getErrors() == null ? "" : result.getErrors().stream()
        .filter(u -> u.getError() != null && !u.getError().startsWith("A subschema had errors"))
        .map(u -> u.getInstanceLocation() + ": " + u.getError()).distinct().limit(5)
        .collect(Collectors.joining("; "));
    return "not a " + ref.substring(ref.lastIndexOf('/') + 1) + " (" + errors + ")";
  }

  private static String brief(JsonObject data) {
    String text = data.encode();
    return text.length() <= 300 ? text : text.substring(0, 300) + "...";
  }

  private static String describe(Throwable e) {
    StringBuilder s = new StringBuilder(String.valueOf(e.getMessage()));
    if (e instanceof io.vertx.json.schema.JsonSchemaValidationException j) {
      s.append(" at ").append(j.location());
    }
    if (e.getCause() != null && e.getCause() != e) {
      s.append(" / ").append(describe(e.getCause()));
    }
    return s.toString();
  }
}
