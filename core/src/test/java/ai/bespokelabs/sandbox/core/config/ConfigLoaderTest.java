package ai.bespokelabs.sandbox.core.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.vertx.core.json.JsonObject;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ConfigLoaderTest {

  @Test
  void defaults_match_the_seed() {
    GatewayConfig c = ConfigLoader.fromMap(Map.of(), "/home/u");
    assertThat(c.http().host()).isEqualTo("127.0.0.1");
    assertThat(c.http().port()).isEqualTo(8000);
    assertThat(c.node().dataDir()).isEqualTo(Path.of("/home/u/.bespoke-sandbox"));
    assertThat(c.ledger().customerMarkup()).isEqualByComparingTo("1");
    assertThat(c.node().supervisionIntervalSecs()).isEqualTo(30);
    assertThat(c.providers().allowed()).isEmpty();
    assertThat(c.database().url()).isEmpty();
    assertThat(c.secrets().pepper()).isEmpty();
    assertThat(c.execution().workdirRoots()).as("no host directory is a workdir unless allowed").isEmpty();
    assertThat(c.execution().gitAllowPrivate()).isFalse();
  }

  /**
   * Every setting's default is written once: the gateway's in conf/gateway.json (null: unset or derived), a
   * backend's where the backend declares it (here the test class path's {@code acme}).
   */
  @Test
  void every_setting_has_its_default_in_conf_gateway_json_or_its_backends_declaration() throws Exception {
    JsonObject defaults;
    try (var in = ConfigLoader.class.getClassLoader().getResourceAsStream(ConfigLoader.DEFAULTS_RESOURCE)) {
      defaults = new JsonObject(new String(in.readAllBytes(), StandardCharsets.UTF_8));
    }
    assertThat(leaves(defaults, "")).containsExactlyElementsOf(Variables.KEYS.values().stream()
        .filter(k -> !k.startsWith("providers." + AcmeBackendSettings.NAME + ".")).toList());
    assertThat(Variables.KEYS).containsEntry("ACME_MAX_CONNECTIONS", "providers.acme.maxConnections");
    GatewayConfig c = ConfigLoader.fromMap(Map.of(), "/home/u");
    assertThat(c.http().maxUploadBytes()).isEqualTo(defaults.getJsonObject("http").getLong("maxUploadBytes"));
    assertThat(c.execution().journalBytes()).isEqualTo(defaults.getJsonObject("execution").getInteger("journalBytes"));
    assertThat(c.http().instances()).as("null: one per core").isEqualTo(Runtime.getRuntime().availableProcessors());
    assertThat(c.providers().settings().get("ACME_HOST")).contains("unix:///var/run/acme.sock");
    assertThat(c.providers().settings().get("ACME_EXACT")).contains("false");
    assertThat(c.providers().settings().get("ACME_API_KEY")).isEmpty();
  }

  @Test
  void a_backend_may_not_declare_a_setting_the_gateway_or_another_backend_names() {
    assertThatThrownBy(() -> new BackendSettings.Setting("bad_name", "key", null))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> new BackendSettings.Setting("ACME_X", "key", List.of()))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void dashboard_settings_have_the_seeds_defaults_and_are_checked() {
    assertThat(ConfigLoader.fromMap(Map.of(), "/home/u").dashboard()).isEqualTo(new DashboardConfig(28800, true, false));
    GatewayConfig c = ConfigLoader.fromMap(Map.of("BESPOKE_DASHBOARD_SESSION_TTL_SECS", "600",
        "BESPOKE_SESSION_COOKIE_SECURE", "0", "BESPOKE_ENABLE_LOCAL_DASHBOARD_LOGIN", "1"), "/home/u");
    assertThat(c.dashboard()).isEqualTo(new DashboardConfig(600, false, true));
    assertThatThrownBy(() -> ConfigLoader.fromMap(Map.of("BESPOKE_DASHBOARD_SESSION_TTL_SECS", "5"), "/home/u"))
        .isInstanceOf(ConfigException.class).hasMessageContaining("BESPOKE_DASHBOARD_SESSION_TTL_SECS");
  }

  /** The HTTP server's connection limits and addresses have safe defaults and are checked at start. */
  @Test
  void http_server_limits_and_addresses_are_checked() {
    HttpConfig d = ConfigLoader.fromMap(Map.of(), "/h").http();
    assertThat(d.idleTimeoutSecs()).isEqualTo(30);
    assertThat(d.maxConnectionsPerClient()).isEqualTo(256);
    assertThat(d.trustedProxies()).as("no proxy is trusted unless named").isEmpty();
    assertThat(d.publicUrl()).isEmpty();
    HttpConfig c = ConfigLoader.fromMap(Map.of("BESPOKE_HTTP_IDLE_TIMEOUT_SECS", "5",
        "BESPOKE_HTTP_MAX_CONNECTIONS_PER_CLIENT", "0", "BESPOKE_TRUSTED_PROXIES", " 10.0.0.0/8, ::1 ,192.0.2.7",
        "BESPOKE_PUBLIC_URL", "https://sandbox.example.com/api/"), "/h").http();
    assertThat(c.idleTimeoutSecs()).isEqualTo(5);
    assertThat(c.maxConnectionsPerClient()).isZero();
    assertThat(c.trustedProxies()).containsExactly(AddressRange.parse("10.0.0.0/8"), AddressRange.parse("::1"),
        AddressRange.parse("192.0.2.7/32"));
    assertThat(c.publicUrl()).contains("https://sandbox.example.com/api");
    for (String bad : new String[] {"sandbox.example.com", "ftp://x.example", "https://user:pw@x.example",
        "https://x.example/?q=1", "https://x.example/#top", "/relative", "http://exa mple"}) {
      assertThatThrownBy(() -> ConfigLoader.fromMap(Map.of("BESPOKE_PUBLIC_URL", bad), "/h")).as(bad)
          .isInstanceOf(ConfigException.class).hasMessageStartingWith("BESPOKE_PUBLIC_URL must be");
    }
    for (String bad : new String[] {"proxy.internal", "10.0.0.0/33", "10.0.0.0/", "::1/129", "1.2.3"}) {
      assertThatThrownBy(() -> ConfigLoader.fromMap(Map.of("BESPOKE_TRUSTED_PROXIES", bad), "/h")).as(bad)
          .isInstanceOf(ConfigException.class).hasMessageStartingWith("BESPOKE_TRUSTED_PROXIES must list");
    }
    assertThatThrownBy(() -> ConfigLoader.fromMap(Map.of("BESPOKE_HTTP_IDLE_TIMEOUT_SECS", "0"), "/h"))
        .isInstanceOf(ConfigException.class).hasMessageContaining("BESPOKE_HTTP_IDLE_TIMEOUT_SECS");
  }

  @Test
  void address_ranges_match_by_prefix() throws Exception {
    AddressRange ten = AddressRange.parse("10.1.2.3/8");
    assertThat(ten).isEqualTo(AddressRange.parse("10.0.0.0/8"));
    assertThat(ten.contains(java.net.InetAddress.getByName("10.200.0.1"))).isTrue();
    assertThat(ten.contains(java.net.InetAddress.getByName("11.0.0.1"))).isFalse();
    assertThat(ten.contains(java.net.InetAddress.getByName("::ffff:10.9.9.9"))).as("IPv4-mapped").isTrue();
    assertThat(AddressRange.parse("fd00::/8").contains(AddressRange.literal("fd12::1"))).isTrue();
    assertThat(AddressRange.parse("fd00::/8").contains(AddressRange.literal("10.0.0.1"))).isFalse();
    assertThat(AddressRange.parse("0.0.0.0/0").contains(AddressRange.literal("203.0.113.9"))).isTrue();
    assertThat(AddressRange.literal("[::1]")).hasSize(16);
    assertThat(AddressRange.literal("example.com")).isNull();
  }

  /** The README's configuration table names every setting: its variable and its key in conf/gateway.json. */
  @Test
  void the_readme_documents_every_setting() throws Exception {
    String readme = Files.readString(Path.of("..", "README.md"));
    String table = readme.substring(readme.indexOf("## Configuration"), readme.indexOf("### Upgrading the embedded"));
    Variables.KEYS.forEach((variable, key) -> {
      if (key.startsWith("providers." + AcmeBackendSettings.NAME + ".")) {
        return; // the test class path's backend
      }
      assertThat(table).as(variable).contains("`" + variable + "`");
      String leaf = key.substring(key.lastIndexOf('.'));
      assertThat(table.contains("`" + key + "`") || table.contains("`" + leaf + "`")).as(key).isTrue();
    });
  }

  private static List<String> leaves(JsonObject section, String prefix) {
    List<String> out = new ArrayList<>();
    section.forEach(e -> {
      if (e.getValue() instanceof JsonObject inner) {
        out.addAll(leaves(inner, prefix + e.getKey() + "."));
      } else {
        out.add(prefix + e.getKey());
      }
    });
    return out;
  }

  /** Clustering is off unless asked for, and needs the external database every node shares. */
  @Test
  void clustering_is_off_by_default_and_refused_with_the_embedded_database() {
    ClusterConfig off = ConfigLoader.fromMap(Map.of(), "/h").cluster();
    assertThat(off.enabled()).isFalse();
    assertThat(off.host()).isEqualTo("127.0.0.1");
    assertThat(off.port()).isEqualTo(5701);
    assertThat(off.members()).isEmpty();
    assertThat(off.drainSecs()).isEqualTo(30);
    assertThatThrownBy(() -> ConfigLoader.fromMap(Map.of("BESPOKE_CLUSTER", "true"), "/h"))
        .isInstanceOf(ConfigException.class).hasMessageContaining("BESPOKE_DATABASE_URL")
        .hasMessageContaining("embedded");
    Map<String, String> tls = Map.of("BESPOKE_CLUSTER_TLS_CA", "/etc/gw/ca.pem", "BESPOKE_CLUSTER_TLS_CERT",
        "/etc/gw/node.pem", "BESPOKE_CLUSTER_TLS_KEY", "/etc/gw/node.key");
    Map<String, String> given = new java.util.HashMap<>(Map.of("BESPOKE_CLUSTER", "true", "BESPOKE_DATABASE_URL",
        "postgresql://u:p@db:5432/gw", "BESPOKE_CLUSTER_MEMBERS", " 10.0.0.1:5701, gw-2:5701 ,",
        "BESPOKE_CLUSTER_PORT", "6000", "BESPOKE_DRAIN_SECS", "5"));
    given.putAll(tls);
    ClusterConfig on = ConfigLoader.fromMap(given, "/h").cluster();
    assertThat(on.enabled()).isTrue();
    assertThat(on.name()).isEqualTo("bespoke-sandbox-gateway");
    assertThat(on.tls()).contains(new ClusterConfig.Tls(java.nio.file.Path.of("/etc/gw/ca.pem"),
        java.nio.file.Path.of("/etc/gw/node.pem"), java.nio.file.Path.of("/etc/gw/node.key")));
    for (String setting : tls.keySet()) {
      Map<String, String> without = new java.util.HashMap<>(given);
      without.remove(setting);
      assertThatThrownBy(() -> ConfigLoader.fromMap(without, "/h")).isInstanceOf(ConfigException.class)
          .hasMessageStartingWith("BESPOKE_CLUSTER=true needs " + setting + ":");
    }
    Map<String, String> badName = new java.util.HashMap<>(given);
    badName.put("BESPOKE_CLUSTER_NAME", "two words");
    assertThatThrownBy(() -> ConfigLoader.fromMap(badName, "/h")).hasMessageContaining("BESPOKE_CLUSTER_NAME");
    assertThat(on.members()).containsExactly("10.0.0.1:5701", "gw-2:5701");
    assertThat(on.port()).isEqualTo(6000);
    assertThat(on.drainSecs()).isEqualTo(5);
    assertThatThrownBy(() -> ConfigLoader.fromMap(Map.of("BESPOKE_CLUSTER_MEMBERS", "gw-2"), "/h"))
        .hasMessageContaining("host:port");
    Map<String, String> kube = new java.util.HashMap<>(tls);
    kube.putAll(Map.of("BESPOKE_CLUSTER", "true", "BESPOKE_DATABASE_URL", "postgresql://db/gw",
        "BESPOKE_CLUSTER_KUBERNETES", "true"));
    assertThatThrownBy(() -> ConfigLoader.fromMap(kube, "/h"))
        .hasMessageContaining("BESPOKE_CLUSTER_KUBERNETES_SERVICE");
  }

  /** The stored output cap has the seed's name; the former name is still read when that one is not set. */
  @Test
  void the_stored_output_cap_is_bespoke_max_output_bytes() {
    assertThat(ConfigLoader.load(Map.of()).execution().outputLimitBytes()).isEqualTo(1 << 20);
    assertThat(ConfigLoader.load(Map.of("BESPOKE_MAX_OUTPUT_BYTES", "8388608")).execution().outputLimitBytes())
        .isEqualTo(8 << 20);
    assertThat(ConfigLoader.load(Map.of("BESPOKE_EXEC_OUTPUT_LIMIT_BYTES", "4096")).execution().outputLimitBytes())
        .isEqualTo(4096);
    assertThat(ConfigLoader.load(Map.of("BESPOKE_EXEC_OUTPUT_LIMIT_BYTES", "4096", "BESPOKE_MAX_OUTPUT_BYTES",
        "8192")).execution().outputLimitBytes()).isEqualTo(8192);
    assertThatThrownBy(() -> ConfigLoader.fromMap(Map.of("BESPOKE_MAX_OUTPUT_BYTES", "0"), "/h"))
        .hasMessageContaining("BESPOKE_MAX_OUTPUT_BYTES");
  }

  @Test
  void workdir_roots_are_absolute_directories_but_never_the_whole_file_system() {
    assertThat(ConfigLoader.fromMap(Map.of("BESPOKE_WORKDIR_ROOTS", " /srv/work/ , /data/../projects,"), "/h")
        .execution().workdirRoots()).containsExactly(Path.of("/srv/work"), Path.of("/projects"));
    assertThatThrownBy(() -> ConfigLoader.fromMap(Map.of("BESPOKE_WORKDIR_ROOTS", "work"), "/h"))
        .hasMessageContaining("absolute");
    assertThatThrownBy(() -> ConfigLoader.fromMap(Map.of("BESPOKE_WORKDIR_ROOTS", "/srv,/"), "/h"))
        .hasMessageContaining("whole file system");
  }

  @Test
  void the_sandboxes_root_is_unset_by_default_and_else_an_absolute_directory() {
    assertThat(ConfigLoader.fromMap(Map.of(), "/h").node().sandboxRoot()).isEmpty();
    assertThat(ConfigLoader.fromMap(Map.of("BESPOKE_SANDBOX_ROOT", "/srv/boxes/"), "/h").node().sandboxRoot())
        .contains(Path.of("/srv/boxes"));
    assertThatThrownBy(() -> ConfigLoader.fromMap(Map.of("BESPOKE_SANDBOX_ROOT", "boxes"), "/h"))
        .isInstanceOf(ConfigException.class).hasMessageStartingWith("BESPOKE_SANDBOX_ROOT");
  }

  @Test
  void sandbox_uids_are_a_range_and_their_locks_an_absolute_directory() {
    ExecutionConfig defaults = ConfigLoader.fromMap(Map.of(), "/h").execution();
    assertThat(defaults.sandboxUidFirst()).isEqualTo(1_000_000);
    assertThat(defaults.sandboxUidCount()).isEqualTo(65_536);
    assertThat(defaults.sandboxUidLocks()).isEqualTo(Path.of("/run/bespoke-sandbox/uids"));
    ExecutionConfig narrowed = ConfigLoader.fromMap(Map.of("BESPOKE_SANDBOX_UIDS", " 1000100 - 1000103 ",
        "BESPOKE_SANDBOX_UID_LOCKS", "/var/run/x/"), "/h").execution();
    assertThat(narrowed.sandboxUidFirst()).isEqualTo(1_000_100);
    assertThat(narrowed.sandboxUidCount()).isEqualTo(4);
    assertThat(narrowed.sandboxUidLocks()).isEqualTo(Path.of("/var/run/x"));
    for (String bad : new String[] {"1000103-1000100", "1000000", "a-b", "0-5"}) {
      assertThatThrownBy(() -> ConfigLoader.fromMap(Map.of("BESPOKE_SANDBOX_UIDS", bad), "/h"))
          .isInstanceOf(ConfigException.class).hasMessageStartingWith("BESPOKE_SANDBOX_UIDS");
    }
    assertThatThrownBy(() -> ConfigLoader.fromMap(Map.of("BESPOKE_SANDBOX_UID_LOCKS", "run/uids"), "/h"))
        .isInstanceOf(ConfigException.class).hasMessageStartingWith("BESPOKE_SANDBOX_UID_LOCKS");
  }

  @Test
  void sandbox_allow_cidrs_are_canonical_ranges_and_anything_else_names_the_setting() {
    assertThat(ConfigLoader.fromMap(Map.of(), "/h").execution().sandboxAllowCidrs()).isEmpty();
    assertThat(ConfigLoader.fromMap(Map.of("BESPOKE_SANDBOX_ALLOW_CIDRS",
            " 10.1.2.3/16, 192.168.7.9 ,FD12:0:0::1/64,,10.1.0.0/16, ::ffff:10.0.0.1/128, ::1"), "/h")
        .execution().sandboxAllowCidrs()).map(Object::toString)
        .containsExactly("10.1.0.0/16", "192.168.7.9/32", "fd12::/64", "::ffff:a00:1/128", "::1/128");
    for (String bad : List.of("10.0.0.0/33", "example.com", "10.0.0/8", "10.0.0.1:80", "fd00::/129", "10.0.0.1/x",
        "300.1.1.1")) {
      assertThatThrownBy(() -> ConfigLoader.fromMap(Map.of("BESPOKE_SANDBOX_ALLOW_CIDRS", "10.9.0.0/16," + bad), "/h"))
          .as(bad).isInstanceOf(ConfigException.class).hasMessageContaining("BESPOKE_SANDBOX_ALLOW_CIDRS")
          .hasMessageContaining(bad);
    }
  }

  @Test
  void environment_wins_over_the_file_which_wins_over_defaults(@TempDir Path dir) throws Exception {
    Path file = dir.resolve("gw.json");
    Files.writeString(file, "{\"PORT\": 9100, \"BESPOKE_CUSTOMER_MARKUP\": \"1.5\", \"HOST\": \"0.0.0.0\"}");
    GatewayConfig c = ConfigLoader.load(Map.of("BESPOKE_CONFIG_FILE", file.toString(), "PORT", "9200",
        "BESPOKE_ALLOWED_BACKENDS", " Local, e2b ,local", "HOME", "/h"));
    assertThat(c.http().port()).isEqualTo(9200);
    assertThat(c.http().host()).isEqualTo("0.0.0.0");
    assertThat(c.ledger().customerMarkup()).isEqualTo(new BigDecimal("1.5"));
    assertThat(c.providers().allowed()).contains(List.of("e2b", "local"));
  }

  /** Precedence, lowest first: conf/gateway.json, the config file, environment, system properties, flags. */
  @Test
  void system_properties_win_over_the_environment(@TempDir Path dir) throws Exception {
    Path file = dir.resolve("gw.json");
    Files.writeString(file, "{\"BESPOKE_EXEC_TIMEOUT_SECS\": 11, \"BESPOKE_DATABASE_POOL_SIZE\": 3}");
    GatewayConfig c = ConfigLoader.load(Map.of("BESPOKE_CONFIG_FILE", file.toString(), "BESPOKE_EXEC_TIMEOUT_SECS",
        "22", "PORT", "9300"), Map.of("BESPOKE_EXEC_TIMEOUT_SECS", "33", "java.home", "/jdk"));
    assertThat(c.execution().timeoutSecs()).isEqualTo(33);
    assertThat(c.database().poolSize()).isEqualTo(3);
    assertThat(c.http().port()).isEqualTo(9300);
    assertThat(c.node().shutdownGraceSecs()).as("from conf/gateway.json").isEqualTo(30);
  }

  /** This process's own system properties are read (under the variable names); flags win over them. */
  @Test
  void the_process_system_properties_and_flags_are_read() {
    System.setProperty("BESPOKE_EXEC_JOURNAL_BYTES", "524288");
    System.setProperty("BESPOKE_SHUTDOWN_GRACE_SECS", "7");
    try {
      GatewayConfig c = ConfigLoader.fromProcess(Map.of("BESPOKE_SHUTDOWN_GRACE_SECS", "9"));
      assertThat(c.execution().journalBytes()).isEqualTo(524288);
      assertThat(c.node().shutdownGraceSecs()).isEqualTo(9);
      System.setProperty("BESPOKE_SHUTDOWN_GRACE_SECS", "soon");
      assertThatThrownBy(() -> ConfigLoader.fromProcess(Map.of()))
          .isInstanceOf(ConfigException.class).hasMessage("BESPOKE_SHUTDOWN_GRACE_SECS must be an integer");
    } finally {
      System.clearProperty("BESPOKE_EXEC_JOURNAL_BYTES");
      System.clearProperty("BESPOKE_SHUTDOWN_GRACE_SECS");
    }
  }

  /** A former name given in a later source still wins over the current name given in an earlier one. */
  @Test
  void a_former_name_is_read_per_source(@TempDir Path dir) throws Exception {
    Path file = dir.resolve("gw.json");
    Files.writeString(file, "{\"BESPOKE_MAX_OUTPUT_BYTES\": 8192}");
    assertThat(ConfigLoader.load(Map.of("BESPOKE_CONFIG_FILE", file.toString(), "BESPOKE_EXEC_OUTPUT_LIMIT_BYTES",
        "4096")).execution().outputLimitBytes()).isEqualTo(4096);
  }

  /** A config file may also use the nested keys of conf/gateway.json; values are checked the same way. */
  @Test
  void a_config_file_may_use_the_nested_keys(@TempDir Path dir) throws Exception {
    Path file = dir.resolve("gw.json");
    Files.writeString(file, "{\"http\": {\"port\": 9400, \"host\": null}, \"providers\": {\"acme\": "
        + "{\"domain\": \"example.test\"}}, \"HOST\": \"0.0.0.0\"}");
    GatewayConfig c = ConfigLoader.load(Map.of("BESPOKE_CONFIG_FILE", file.toString()));
    assertThat(c.http().port()).isEqualTo(9400);
    assertThat(c.http().host()).isEqualTo("0.0.0.0");
    assertThat(c.providers().settings().get("ACME_DOMAIN")).contains("example.test");
    assertThat(c.providers().settings().get("ACME_TEMPLATE")).as("default kept").contains("base");
    Files.writeString(file, "{\"http\": {\"port\": \"eighty\"}}");
    assertThatThrownBy(() -> ConfigLoader.load(Map.of("BESPOKE_CONFIG_FILE", file.toString())))
        .isInstanceOf(ConfigException.class).hasMessage("PORT must be an integer");
    Files.writeString(file, "{\"http\": {\"prot\": 1}}");
    assertThatThrownBy(() -> ConfigLoader.load(Map.of("BESPOKE_CONFIG_FILE", file.toString())))
        .hasMessage(file + ": unknown setting http.prot");
    Files.writeString(file, "[1]");
    assertThatThrownBy(() -> ConfigLoader.load(Map.of("BESPOKE_CONFIG_FILE", file.toString())))
        .hasMessage(file + " is not a JSON object");
    assertThatThrownBy(() -> ConfigLoader.load(Map.of("BESPOKE_CONFIG_FILE", dir.resolve("missing.json").toString())))
        .isInstanceOf(ConfigException.class)
        .hasMessageStartingWith("cannot read BESPOKE_CONFIG_FILE " + dir.resolve("missing.json"))
        .hasMessageNotContaining("\n");
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
    Files.writeString(file, "{\"ACME_HOST\": \"unix:///run/file.sock\", \"ACME_API_URL\": \"http://file\"}");
    GatewayConfig c = ConfigLoader.load(Map.of("BESPOKE_CONFIG_FILE", file.toString(), "ACME_API_KEY", "acme-secret",
        "ACME_HOST", "unix:///run/env.sock", "UNRELATED", "x"));
    assertThat(c.providers().settings().get("ACME_HOST")).contains("unix:///run/env.sock");
    assertThat(c.providers().settings().get("ACME_API_URL")).contains("http://file");
    assertThat(c.providers().settings().secret("ACME_API_KEY").orElseThrow().reveal()).isEqualTo("acme-secret");
    assertThat(c.providers().settings().get("UNRELATED")).isEmpty();
    assertThat(c.toString()).contains("ACME_API_KEY").doesNotContain("acme-secret");
  }

  /** A backend built on its own gets its declared defaults under the settings it is given. */
  @Test
  void provider_settings_with_defaults_are_the_files_defaults_under_the_given_ones() {
    ProviderSettings s = ProviderSettings.withDefaults(Map.of("ACME_DOMAIN", "example.test", "ACME_SCOPE", " ",
        "ACME_API_KEY", "acme-secret", "PORT", "1"));
    assertThat(s.value("ACME_DOMAIN")).isEqualTo("example.test");
    assertThat(s.value("ACME_SCOPE")).as("blank: the default").isEqualTo("default");
    assertThat(s.value("ACME_HOST")).isEqualTo("unix:///var/run/acme.sock");
    assertThat(s.value("ACME_MAX_CONNECTIONS")).isEqualTo("32");
    assertThat(s.get("ACME_TARGET")).as("no default").isEmpty();
    assertThat(s.get("PORT")).as("not a provider setting").isEmpty();
    assertThat(s.toString()).contains("ACME_API_KEY").doesNotContain("acme-secret");
    assertThat(ProviderSettings.withDefaults(Map.of()).toString())
        .isEqualTo(ConfigLoader.fromMap(Map.of(), "/home/u").providers().settings().toString());
    assertThatThrownBy(() -> s.value("ACME_TARGET")).isInstanceOf(ConfigException.class)
        .hasMessageContaining("ACME_TARGET needs a value");
  }
}
