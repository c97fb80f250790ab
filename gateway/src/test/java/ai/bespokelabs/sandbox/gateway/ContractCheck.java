package ai.bespokelabs.sandbox.gateway;

import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import io.vertx.openapi.contract.OpenAPIContract;
import io.vertx.openapi.contract.Operation;
import io.vertx.openapi.validation.ResponseValidator;
import io.vertx.openapi.validation.ValidatableResponse;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.http.HttpResponse;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Every response a test gets through {@link TestGateway} is checked against the served OpenAPI document
 * (vertx-openapi's response validator): its status must be documented for the operation, and its body must
 * match the documented schema. A mismatch fails the test that received it, so the whole suite is the check.
 */
final class ContractCheck {
  /** What the validator can check (it cannot read a text/plain body against a string schema). */
  private static final java.util.Set<String> VALIDATABLE = java.util.Set.of("application/json",
      "application/octet-stream");
  private static final Vertx VERTX = Vertx.vertx();
  private static final OpenAPIContract CONTRACT = load();
  private static final ResponseValidator VALIDATOR = ResponseValidator.create(VERTX, CONTRACT);

  private ContractCheck() {}

  private static OpenAPIContract load() {
    try (InputStream in = ContractCheck.class.getClassLoader().getResourceAsStream("openapi.json")) {
      JsonObject doc = new JsonObject(Buffer.buffer(in.readAllBytes()));
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
    } catch (IOException e) {
      throw new UncheckedIOException(e);
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
