package ai.bespokelabs.sandbox.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.Route;
import java.util.Locale;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** The served OpenAPI document describes exactly the routes the router serves. */
@ExtendWith(GatewayExtension.class)
class OpenApiTest {
  static TestGateway gw;

  @Test
  void every_route_is_documented_and_every_documented_route_exists() {
    JsonObject doc = gw.get("/openapi.json", null).json();
    assertThat(doc.getString("openapi")).isEqualTo("3.1.0");
    assertThat(doc.containsKey("servers")).as("none, i.e. relative to where the document was fetched; never a"
        + " request's Host").isFalse();
    Set<String> documented = new TreeSet<>();
    doc.getJsonObject("paths").forEach(p -> ((JsonObject) p.getValue()).fieldNames().stream()
        .filter(m -> Set.of("get", "post", "put", "patch", "delete").contains(m))
        .forEach(m -> documented.add(m.toUpperCase(Locale.ROOT) + " " + p.getKey())));

    Set<String> served = new TreeSet<>();
    var router = gw.gateway.wiring().router(gw.gateway.vertx());
    for (Route r : router.getRoutes()) {
      if (r.getPath() == null || r.methods() == null) {
        continue;
      }
      for (HttpMethod m : r.methods()) {
        served.add(m.name() + " " + r.getPath().replaceAll(":([a-z_]+)", "{$1}"));
      }
    }
    assertThat(served).isNotEmpty().isEqualTo(documented);
  }

  @Test
  void docs_render_every_operation_as_one_page_without_scripts() {
    JsonObject doc = gw.get("/openapi.json", null).json();
    TestGateway.Resp page = gw.get("/docs", null);
    assertThat(page.status()).isEqualTo(200);
    assertThat(page.header("Content-Type")).startsWith("text/html");
    assertThat(page.header("Content-Security-Policy")).contains("script-src 'self'");
    String html = page.body();
    assertThat(html).doesNotContain("<script").doesNotContain("style=\"");
    doc.getJsonObject("paths").forEach(p -> {
      assertThat(html).contains("<code>" + p.getKey().replace("&", "&amp;") + "</code>");
      ((JsonObject) p.getValue()).forEach(op -> {
        if (op.getValue() instanceof JsonObject o && o.getString("operationId") != null) {
          assertThat(html).contains("id=\"" + o.getString("operationId") + "\"");
        }
      });
    });
    assertThat(html).contains("id=\"schema-ProviderError\"");
    TestGateway.Resp css = gw.get("/docs/docs.css", null);
    assertThat(css.status()).isEqualTo(200);
    assertThat(css.header("Content-Type")).startsWith("text/css");
  }
}
