package ai.bespokelabs.sandbox.adapters.sim;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.openapi.contract.OpenAPIContract;
import io.vertx.openapi.contract.Operation;
import io.vertx.json.schema.common.dsl.SchemaType;
import io.vertx.openapi.validation.RequestParameter;
import io.vertx.openapi.validation.RequestUtils;
import io.vertx.openapi.validation.ValidatableRequest;
import io.vertx.openapi.validation.impl.RequestParameterImpl;
import io.vertx.openapi.validation.impl.ValidatableRequestImpl;
import io.vertx.openapi.validation.RequestValidator;
import io.vertx.openapi.validation.ValidatedRequest;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.Date;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.constructor.SafeConstructor;

/**
 * Checks a simulator's incoming requests against a provider's published OpenAPI document (a copy of it
 * under {@code provider-specs/} on the test classpath): the path and method must be an operation of the
 * spec, and parameters, required headers and the body must conform. A request the real provider would
 * reject fails here, so a simulator can never accept what the provider would not.
 */
public final class SpecValidator {
  private final OpenAPIContract contract;
  private final RequestValidator validator;

  private SpecValidator(Vertx vertx, OpenAPIContract contract) {
    this.contract = contract;
    this.validator = RequestValidator.create(vertx, contract);
  }

  /**
   * Loads {@code provider-specs/<resource>} from the test classpath, e.g. {@code e2b/openapi.yml}.
   * Operations the document leaves without an {@code operationId} get {@code "<METHOD> <path>"}; responses
   * are not checked; request
   * paths are matched from the root.
   */
  public static Future<SpecValidator> load(Vertx vertx, String resource) {
    return load(vertx, resource, "");
  }

  /** As {@link #load(Vertx, String)}, for a simulator serving the spec's paths under {@code basePath}. */
  public static Future<SpecValidator> load(Vertx vertx, String resource, String basePath) {
    JsonObject raw;
    try (InputStream in = Objects.requireNonNull(
        SpecValidator.class.getClassLoader().getResourceAsStream("provider-specs/" + resource), "no spec " + resource)) {
      Object yaml = new Yaml(new SafeConstructor(new LoaderOptions())).load(in);
      raw = new JsonObject(SpecValidator.<Map<String, Object>>plain(yaml));
    } catch (IOException e) {
      return Future.failedFuture(e);
    }
    raw.put("servers", new io.vertx.core.json.JsonArray().add(new JsonObject().put("url", "http://simulator" + basePath)));
    JsonObject paths = raw.getJsonObject("paths", new JsonObject());
    for (String path : paths.fieldNames()) {
      JsonObject item = paths.getJsonObject(path);
      for (String method : item.fieldNames()) {
        if (item.getValue(method) instanceof JsonObject op && !op.containsKey("operationId")
            && METHODS.contains(method)) {
          op.put("operationId", method.toUpperCase(Locale.ROOT) + " " + path);
        }
        if (item.getValue(method) instanceof JsonObject op && METHODS.contains(method)) {
          // only requests are checked; responses may use media types the validator does not know
          op.put("responses", new JsonObject().put("default", new JsonObject().put("description", "any")));
          JsonObject content = op.getJsonObject("requestBody", new JsonObject()).getJsonObject("content");
          if (content != null && content.containsKey("*/*")) {
            // generator artefact of a JSON body: "consumes" was lost in the OpenAPI 3 rendering
            content.put("application/json", content.remove("*/*"));
          }
          anyBytes(content);
        }
      }
    }
    JsonObject bodies = raw.getJsonObject("components", new JsonObject()).getJsonObject("requestBodies", new JsonObject());
    bodies.fieldNames().forEach(name -> anyBytes(bodies.getJsonObject(name).getJsonObject("content")));
    return OpenAPIContract.from(vertx, raw).map(c -> new SpecValidator(vertx, c));
  }

  /**
   * A raw binary body ({@code application/octet-stream}, {@code type: string, format: binary}) conforms
   * whatever its bytes; its schema is dropped because a JSON-schema validator cannot read a byte buffer.
   */
  private static void anyBytes(JsonObject content) {
    if (content != null && content.getValue("application/octet-stream") instanceof JsonObject bytes
        && bytes.getValue("schema") instanceof JsonObject schema && "binary".equals(schema.getString("format"))) {
      bytes.remove("schema");
    }
  }

  private static final Set<String> METHODS = Set.of("get", "put", "post", "delete", "options", "head", "patch", "trace");

  /** YAML values as JSON ones: timestamps become their ISO text, keys become strings. */
  @SuppressWarnings("unchecked")
  private static <T> T plain(Object v) {
    if (v instanceof Map<?, ?> m) {
      Map<String, Object> out = new LinkedHashMap<>();
      m.forEach((k, val) -> out.put(String.valueOf(k), plain(val)));
      return (T) out;
    }
    if (v instanceof List<?> l) {
      List<Object> out = new ArrayList<>();
      l.forEach(x -> out.add(plain(x)));
      return (T) out;
    }
    if (v instanceof Date d) {
      return (T) d.toInstant().toString();
    }
    return (T) v;
  }

  /**
   * Validates the request (reading its body); fails with a {@link SpecViolation} naming what does not
   * conform. The simulator answers such a request with 400 and the test that sent it fails.
   */
  public Future<ValidatedRequest> validate(HttpServerRequest request) {
    Operation op = contract.findOperation(request.path(), request.method());
    if (op == null) {
      return Future.failedFuture(new SpecViolation(request.method() + " " + request.path() + " is not in the spec"));
    }
    return validator.validate(request, op.getOperationId())
        .recover(t -> Future.failedFuture(new SpecViolation(op.getOperationId() + ": " + t.getMessage())));
  }

  /**
   * As {@link #validate(HttpServerRequest)}, with the operation found from {@code specPath} instead of the
   * request's own path, and the body already read by the caller ({@code body}; null when the operation has
   * none). For APIs served under a per-resource prefix such as Daytona's toolbox
   * ({@code /toolbox/<sandboxId>/...}): load the spec with a base path of the same number of segments (e.g.
   * {@code /toolbox/sandbox}) and pass the request path with the variable segments replaced; path parameters
   * are still read from the request itself, by segment position.
   */
  public Future<ValidatedRequest> validate(HttpServerRequest request, String specPath, Buffer body) {
    Operation op = contract.findOperation(specPath, request.method());
    if (op == null) {
      return Future.failedFuture(new SpecViolation(request.method() + " " + specPath + " is not in the spec"));
    }
    Buffer read = body == null ? Buffer.buffer() : body;
    return RequestUtils.extract(request, op, () -> Future.succeededFuture(read))
        .compose(v -> validator.validate(keepStrings(op, v), op.getOperationId()))
        .recover(t -> Future.failedFuture(new SpecViolation(op.getOperationId() + ": " + t.getMessage())));
  }

  /**
   * vertx-openapi decodes a string parameter's value as JSON unless it is a single word, so a string the
   * spec allows, like Daytona's {@code labels={"k":"v"}} query parameter, fails as "an object". Such values
   * are handed to it JSON-quoted, which it decodes back to the very same string.
   */
  private static ValidatableRequest keepStrings(Operation op, ValidatableRequest v) {
    Map<String, RequestParameter> query = new LinkedHashMap<>(v.getQuery());
    Map<String, RequestParameter> path = new LinkedHashMap<>(v.getPathParameters());
    for (io.vertx.openapi.contract.Parameter p : op.getParameters()) {
      Map<String, RequestParameter> in = switch (p.getIn()) {
        case QUERY -> query;
        case PATH -> path;
        default -> null;
      };
      RequestParameter value = in == null ? null : in.get(p.getName());
      if (value != null && p.getSchemaType() == SchemaType.STRING && value.get() instanceof String raw
          && !raw.isEmpty() && !(decodes(raw) instanceof String)) {
        in.put(p.getName(), new RequestParameterImpl(io.vertx.core.json.Json.encode(raw)));
      }
    }
    return new ValidatableRequestImpl(v.getCookies(), v.getHeaders(), path, query, v.getBody(), v.getContentType());
  }

  private static Object decodes(String raw) {
    try {
      return io.vertx.core.json.Json.decodeValue(raw);
    } catch (RuntimeException e) {
      return raw;
    }
  }

  /** A request the provider's spec does not allow. */
  public static final class SpecViolation extends RuntimeException {
    public SpecViolation(String message) {
      super(message, null, false, false);
    }
  }
}
