package ai.bespokelabs.sandbox.core.pricing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.bespokelabs.sandbox.core.config.ConfigException;
import java.math.BigDecimal;
import org.junit.jupiter.api.Test;

class PricingCatalogTest {
  static final String CATALOG = """
      {"last_updated": "2026-03-28", "backends": {
        "daytona": {"vcpu_per_hour_usd": 0.036, "ram_gib_per_hour_usd": 0.018},
        "e2b": {"vcpu_per_hour_usd": 0.083, "ram_gib_per_hour_usd": 0.0},
        "local": {"vcpu_per_hour_usd": 0.0, "ram_gib_per_hour_usd": 0.0}}}""";

  @Test
  void hourly_rate_follows_the_reference_formula() {
    PricingCatalog c = PricingCatalog.parse(CATALOG, "test");
    assertThat(c.source()).isEqualTo("2026-03-28");
    assertThat(c.hourlyRate("daytona", 1.0, 1024)).isEqualByComparingTo("0.054");
    assertThat(c.hourlyRate("daytona", null, null)).isEqualByComparingTo("0.054");
    assertThat(c.hourlyRate("daytona", 2.0, 4096)).isEqualByComparingTo("0.144");
    assertThat(c.hourlyRate("e2b", 1.0, 8192)).isEqualByComparingTo("0.083");
    assertThat(c.hourlyRate("local", 4.0, 16384)).isEqualByComparingTo(BigDecimal.ZERO);
    assertThat(c.hourlyRate("unknown", 1.0, 1024)).isEqualByComparingTo(BigDecimal.ZERO);
    BigDecimal perSecond = c.hourlyRate("daytona", 1.0, 1024).multiply(BigDecimal.valueOf(1800))
        .divide(BigDecimal.valueOf(3600));
    assertThat(perSecond).isEqualByComparingTo("0.027000");
  }

  @Test
  void gpu_time_is_priced_per_gpu_type_where_the_catalog_says() {
    PricingCatalog c = PricingCatalog.parse("""
        {"last_updated": "x", "backends": {
          "modal": {"vcpu_per_hour_usd": 0.047, "gpu_per_hour_usd": {"A100": 2.10, "H100": 3.95}},
          "e2b": {"vcpu_per_hour_usd": 0.083}}}""", "test");
    assertThat(c.gpuHourlyRate("modal", "A100")).isEqualByComparingTo("2.10");
    assertThat(c.gpuHourlyRate("modal", "H100")).isEqualByComparingTo("3.95");
    assertThat(c.gpuHourlyRate("modal", "B999")).isNull();
    assertThat(c.gpuHourlyRate("e2b", "A100")).isNull();
    assertThat(c.hourlyRate("modal", 1.0, 0)).as("CPU and memory as before").isEqualByComparingTo("0.047");
    assertThatThrownBy(() -> PricingCatalog.parse(
        "{\"last_updated\":\"x\",\"backends\":{\"a\":{\"gpu_per_hour_usd\":{\"T4\":-1}}}}", "f"))
        .hasMessageContaining("must not be negative");
  }

  @Test
  void bad_catalogs_are_refused_clearly() {
    assertThatThrownBy(() -> PricingCatalog.parse("{}", "f")).isInstanceOf(ConfigException.class)
        .hasMessageContaining("last_updated");
    assertThatThrownBy(() -> PricingCatalog.parse(
        "{\"last_updated\":\"x\",\"backends\":{\"a\":{\"vcpu_per_hour_usd\":-1}}}", "f"))
        .hasMessageContaining("must not be negative");
  }
}
