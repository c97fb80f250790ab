package ai.bespokelabs.sandbox.gateway.http;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * {@code GET /docs}: the OpenAPI document as one readable HTML page, rendered here once at start (no script,
 * no third-party asset, so the strict Content-Security-Policy holds): operations grouped by tag with their
 * scope, parameters, request body, responses and schemas. Every text from the document is escaped.
 */
final class DocsPage {
  static final String STYLESHEET = "/docs/docs.css";
  private static final List<String> METHODS = List.of("get", "post", "put", "patch", "delete");
  private static final Pattern CODE = Pattern.compile("`([^`]+)`");

  private DocsPage() {}

  static String render(JsonObject doc) {
    JsonObject info = doc.getJsonObject("info", new JsonObject());
    StringBuilder html = new StringBuilder(256 * 1024);
    html.append("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">")
        .append("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">")
        .append("<title>").append(esc(info.getString("title", "API"))).append("</title>")
        .append("<link rel=\"stylesheet\" href=\"").append(STYLESHEET).append("\"></head><body>\n")
        .append("<header><h1>").append(esc(info.getString("title", "API"))).append(" <small>")
        .append(esc(info.getString("version", ""))).append("</small></h1>")
        .append("<p><a href=\"/openapi.json\">openapi.json</a></p></header>\n<nav><h2>Contents</h2><ul>");
    Map<String, List<String[]>> byTag = operationsByTag(doc);
    byTag.keySet().forEach(tag -> html.append("<li><a href=\"#").append(anchor("tag-" + tag)).append("\">")
        .append(esc(tag)).append("</a></li>"));
    html.append("<li><a href=\"#schemas\">Schemas</a></li></ul></nav>\n<main>\n<section>")
        .append(prose(info.getString("description", ""))).append("</section>\n");
    for (Map.Entry<String, List<String[]>> tag : byTag.entrySet()) {
      html.append("<section id=\"").append(anchor("tag-" + tag.getKey())).append("\"><h2>")
          .append(esc(tag.getKey())).append("</h2>\n");
      for (String[] op : tag.getValue()) {
        operation(html, op[0], op[1], doc.getJsonObject("paths").getJsonObject(op[1]).getJsonObject(op[0]));
      }
      html.append("</section>\n");
    }
    html.append("<section id=\"schemas\"><h2>Schemas</h2>\n");
    JsonObject schemas = doc.getJsonObject("components", new JsonObject()).getJsonObject("schemas", new JsonObject());
    for (String name : schemas.fieldNames()) {
      html.append("<h3 id=\"").append(anchor("schema-" + name)).append("\">").append(esc(name)).append("</h3>")
          .append(schema(schemas.getJsonObject(name)));
    }
    return html.append("</section>\n</main></body></html>\n").toString();
  }

  /** {method, path} pairs by their first tag, in the document's order. */
  private static Map<String, List<String[]>> operationsByTag(JsonObject doc) {
    Map<String, List<String[]>> byTag = new LinkedHashMap<>();
    for (Object t : doc.getJsonArray("tags", new JsonArray())) {
      byTag.put(((JsonObject) t).getString("name"), new ArrayList<>());
    }
    JsonObject paths = doc.getJsonObject("paths", new JsonObject());
    for (String path : paths.fieldNames()) {
      for (String method : METHODS) {
        JsonObject op = paths.getJsonObject(path).getJsonObject(method);
        if (op != null) {
          String tag = op.getJsonArray("tags", new JsonArray().add("Other")).getString(0);
          byTag.computeIfAbsent(tag, k -> new ArrayList<>()).add(new String[] {method, path});
        }
      }
    }
    byTag.values().removeIf(List::isEmpty);
    return byTag;
  }

  private static void operation(StringBuilder html, String method, String path, JsonObject op) {
    html.append("<article id=\"").append(anchor(op.getString("operationId", method + path))).append("\"><h3>")
        .append("<span class=\"method ").append(method).append("\">").append(method.toUpperCase(java.util.Locale.ROOT))
        .append("</span> <code>").append(esc(path)).append("</code></h3>");
    if (op.getString("summary") != null) {
      html.append("<p class=\"summary\">").append(esc(op.getString("summary"))).append("</p>");
    }
    if (op.getString("x-required-scope") != null) {
      html.append("<p>Scope: <code>").append(esc(op.getString("x-required-scope"))).append("</code></p>");
    } else if (op.getJsonArray("security") != null && op.getJsonArray("security").isEmpty()) {
      html.append("<p>No product key.</p>");
    }
    html.append(prose(op.getString("description", "")));
    JsonArray params = op.getJsonArray("parameters", new JsonArray());
    if (!params.isEmpty()) {
      html.append("<table><caption>Parameters</caption><thead><tr><th>Name</th><th>In</th><th>Required</th>")
          .append("<th>Schema</th><th>Description</th></tr></thead><tbody>");
      for (Object p : params) {
        JsonObject param = (JsonObject) p;
        html.append("<tr><td><code>").append(esc(param.getString("name", param.getString("$ref", ""))))
            .append("</code></td><td>").append(esc(param.getString("in", ""))).append("</td><td>")
            .append(param.getBoolean("required", false) ? "yes" : "no").append("</td><td>")
            .append(schema(param.getJsonObject("schema", new JsonObject()))).append("</td><td>")
            .append(prose(param.getString("description", ""))).append("</td></tr>");
      }
      html.append("</tbody></table>");
    }
    JsonObject body = op.getJsonObject("requestBody");
    if (body != null) {
      html.append("<h4>Request body</h4>").append(prose(body.getString("description", "")));
      content(html, body.getJsonObject("content", new JsonObject()));
    }
    JsonObject responses = op.getJsonObject("responses", new JsonObject());
    html.append("<h4>Responses</h4><dl>");
    for (String status : responses.fieldNames()) {
      JsonObject r = responses.getJsonObject(status);
      html.append("<dt>").append(esc(status)).append("</dt><dd>").append(prose(r.getString("description", "")));
      content(html, r.getJsonObject("content", new JsonObject()));
      html.append("</dd>");
    }
    html.append("</dl></article>\n");
  }

  private static void content(StringBuilder html, JsonObject content) {
    for (String type : content.fieldNames()) {
      html.append("<p><code>").append(esc(type)).append("</code></p>")
          .append(schema(content.getJsonObject(type).getJsonObject("schema", new JsonObject())));
    }
  }

  /** A schema as indented JSON, its {@code $ref}s linked to the schema section. */
  private static String schema(JsonObject schema) {
    String pretty = esc(schema.encodePrettily());
    Matcher m = Pattern.compile("&quot;#/components/schemas/([A-Za-z0-9_.-]+)&quot;").matcher(pretty);
    StringBuilder out = new StringBuilder();
    while (m.find()) {
      m.appendReplacement(out, Matcher.quoteReplacement("&quot;<a href=\"#" + anchor("schema-" + m.group(1)) + "\">"
          + m.group(1) + "</a>&quot;"));
    }
    m.appendTail(out);
    return "<pre>" + out + "</pre>";
  }

  /** Paragraphs split at blank lines, {@code `code`} spans kept; everything escaped first. */
  static String prose(String text) {
    if (text == null || text.isBlank()) {
      return "";
    }
    StringBuilder out = new StringBuilder();
    for (String para : text.split("\n\\s*\n")) {
      out.append("<p>").append(CODE.matcher(esc(para.strip())).replaceAll("<code>$1</code>")).append("</p>");
    }
    return out.toString();
  }

  static String esc(String s) {
    StringBuilder out = new StringBuilder(s.length() + 16);
    for (char c : s.toCharArray()) {
      switch (c) {
        case '&' -> out.append("&amp;");
        case '<' -> out.append("&lt;");
        case '>' -> out.append("&gt;");
        case '"' -> out.append("&quot;");
        case '\'' -> out.append("&#39;");
        default -> out.append(c);
      }
    }
    return out.toString();
  }

  private static String anchor(String s) {
    return s.replaceAll("[^A-Za-z0-9_-]", "-");
  }
}
