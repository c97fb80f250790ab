package ai.bespokelabs.sandbox.core.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.math.BigDecimal;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ConfigLoaderTest {

  @Test
  void defaults_match_the_seed() {
    GatewayConfig c = ConfigLoader.fromMap(Map.of(), "/home/u");
    assertThat(c.host()).isEqualTo("127.0.0.1");
    assertThat(c.port()).isEqualTo(8000);
    assertThat(c.dataDir()).isEqualTo(Path.of("/home/u/.bespoke-sandbox"));
    assertThat(c.customerMarkup()).isEqualByComparingTo("1");
    assertThat(c.supervisionIntervalSecs()).isEqualTo(30);
    assertThat(c.allowedBackends()).isEmpty();
    assertThat(c.databaseUrl()).isEmpty();
    assertThat(c.pepper()).isEmpty();
    assertThat(c.workdirRoots()).as("no host directory is a workdir unless allowed").isEmpty();
    assertThat(c.gitAllowPrivate()).isFalse();
  }

  /** Every setting's default is written once, in conf/gateway.json (null: unset or derived), and nowhere else. */
  @Test
  void every_setting_has_its_default_in_conf_gateway_json() throws Exception {
    io.vertx.core.json.JsonObject defaults;
    try (var in = ConfigLoader.class.getClassLoader().getResourceAsStream(ConfigLoader.DEFAULTS_RESOURCE)) {
      defaults = new io.vertx.core.json.JsonObject(new String(in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8));
    }
    java.util.Set<String> expected = new java.util.TreeSet<>(ConfigLoader.KEYS);
    expected.removeAll(java.util.Set.of("BESPOKE_CONFIG_FILE", "BESPOKE_EXEC_OUTPUT_LIMIT_BYTES"));
    assertThat(new java.util.TreeSet<>(defaults.fieldNames())).isEqualTo(expected);
    GatewayConfig c = ConfigLoader.fromMap(Map.of(), "/home/u");
    assertThat(c.maxUploadBytes()).isEqualTo(defaults.getLong("BESPOKE_MAX_UPLOAD_BYTES"));
    assertThat(c.execJournalBytes()).isEqualTo(defaults.getInteger("BESPOKE_EXEC_JOURNAL_BYTES"));
    assertThat(c.httpInstances()).as("null: one per core").isEqualTo(Runtime.getRuntime().availableProcessors());
  }

  /** The stored output cap has the seed's name; the former name is still read when that one is not set. */
  @Test
  void the_stored_output_cap_is_bespoke_max_output_bytes() {
    assertThat(ConfigLoader.load(Map.of()).execOutputLimitBytes()).isEqualTo(1 << 20);
    assertThat(ConfigLoader.load(Map.of("BESPOKE_MAX_OUTPUT_BYTES", "8388608")).execOutputLimitBytes())
        .isEqualTo(8 << 20);
    assertThat(ConfigLoader.load(Map.of("BESPOKE_EXEC_OUTPUT_LIMIT_BYTES", "4096")).execOutputLimitBytes())
        .isEqualTo(4096);
    assertThat(ConfigLoader.load(Map.of("BESPOKE_EXEC_OUTPUT_LIMIT_BYTES", "4096", "BESPOKE_MAX_OUTPUT_BYTES",
        "8192")).execOutputLimitBytes()).isEqualTo(8192);
    assertThatThrownBy(() -> ConfigLoader.fromMap(Map.of("BESPOKE_MAX_OUTPUT_BYTES", "0"), "/h"))
        .hasMessageContaining("BESPOKE_MAX_OUTPUT_BYTES");
  }

  @Test
  void workdir_roots_are_absolute_directories_but_never_the_whole_file_system() {
    assertThat(ConfigLoader.fromMap(Map.of("BESPOKE_WORKDIR_ROOTS", " /srv/work/ , /data/../projects,"), "/h")
        .workdirRoots()).containsExactly(Path.of("/srv/work"), Path.of("/projects"));
    assertThatThrownBy(() -> ConfigLoader.fromMap(Map.of("BESPOKE_WORKDIR_ROOTS", "work"), "/h"))
        .hasMessageContaining("absolute");
    assertThatThrownBy(() -> ConfigLoader.fromMap(Map.of("BESPOKE_WORKDIR_ROOTS", "/srv,/"), "/h"))
        .hasMessageContaining("whole file system");
  }

  @Test
  void environment_wins_over_the_file_which_wins_over_defaults(@TempDir Path dir) throws Exception {
    Path file = dir.resolve("gw.json");
    Files.writeString(file, "{\"PORT\": 9100, \"BESPOKE_CUSTOMER_MARKUP\": \"1.5\", \"HOST\": \"0.0.0.0\"}");
    GatewayConfig c = ConfigLoader.load(Map.of("BESPOKE_CONFIG_FILE", file.toString(), "PORT", "9200",
        "BESPOKE_ALLOWED_BACKENDS", " Local, e2b ,local", "HOME", "/h"));
    assertThat(c.port()).isEqualTo(9200);
    assertThat(c.host()).isEqualTo("0.0.0.0");
    assertThat(c.customerMarkup()).isEqualTo(new BigDecimal("1.5"));
    assertThat(c.allowedBackends()).contains(List.of("e2b", "local"));
  }

  @Test
  void bad_values_name_the_setting_and_never_echo_secrets(@TempDir Path dir) throws Exception {
    assertThatThrownBy(() -> ConfigLoader.fromMap(Map.of("PORT", "eighty"), "/h"))
        .hasMessage("PORT must be an integer");
    assertThatThrownBy(() -> ConfigLoader.fromMap(Map.of("PORT", "70000"), "/h"))
        .hasMessage("PORT must be between 0 and 65535");
    assertThatThrownBy(() -> ConfigLoader.fromMap(Map.of("BESPOKE_CUSTOMER_MARKUP", "-1"), "/h"))
        .hasMessageContaining("BESPOKE_CUSTOMER_MARKUP");
    Path file = dir.resolve("bad.json");
    Files.writeString(file, "{\"BESPOKE_TYPO\": 1}");
    assertThatThrownBy(() -> ConfigLoader.load(Map.of("BESPOKE_CONFIG_FILE", file.toString())))
        .hasMessageContaining("unknown setting BESPOKE_TYPO");
    GatewayConfig c = ConfigLoader.fromMap(Map.of("BESPOKE_API_KEY_PEPPER", "pepper-value",
        "BESPOKE_DATABASE_URL", "postgresql://u:pw-value@h/db"), "/h");
    assertThat(c.toString()).doesNotContain("pepper-value").doesNotContain("pw-value");
  }

  @Test
  void provider_settings_come_from_the_environment_and_the_file_and_never_print_values(@TempDir Path dir)
      throws Exception {
    Path file = dir.resolve("gw.json");
    Files.writeString(file, "{\"DOCKER_HOST\": \"unix:///run/file.sock\", \"E2B_API_URL\": \"http://file\"}");
    GatewayConfig c = ConfigLoader.load(Map.of("BESPOKE_CONFIG_FILE", file.toString(), "E2B_API_KEY", "e2b-secret",
        "DOCKER_HOST", "unix:///run/env.sock", "UNRELATED", "x"));
    assertThat(c.providers().get("DOCKER_HOST")).contains("unix:///run/env.sock");
    assertThat(c.providers().get("E2B_API_URL")).contains("http://file");
    assertThat(c.providers().secret("E2B_API_KEY").orElseThrow().reveal()).isEqualTo("e2b-secret");
    assertThat(c.providers().get("UNRELATED")).isEmpty();
    assertThat(c.toString()).contains("E2B_API_KEY").doesNotContain("e2b-secret");
  }
}
