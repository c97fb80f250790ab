package ai.bespokelabs.sandbox.adapters.spi;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.core.config.BackendSettings;
import ai.bespokelabs.sandbox.core.config.ProviderSettings;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;
import org.junit.jupiter.api.Test;

/** The backends register themselves with their settings; the settings loader and README know each one. */
class BackendSettingsTest {
  static List<BackendFactory> factories() {
    List<BackendFactory> out = new ArrayList<>();
    ServiceLoader.load(BackendSettings.class).forEach(s -> {
      if (s instanceof BackendFactory f) {
        out.add(f);
      }
    });
    return out;
  }

  @Test
  void every_cloud_and_container_backend_registers_itself() {
    assertThat(factories()).map(BackendFactory::name).containsExactlyInAnyOrder("codecapsules", "daytona", "docker",
        "e2b", "modal", "ray", "runpod", "tensorlake");
  }

  @Test
  void their_declared_defaults_are_the_settings_defaults() {
    ProviderSettings s = ProviderSettings.withDefaults(Map.of("E2B_DOMAIN", "example.test"));
    assertThat(s.value("E2B_DOMAIN")).isEqualTo("example.test");
    assertThat(s.value("E2B_TEMPLATE")).isEqualTo("base");
    assertThat(s.value("DOCKER_HOST")).isEqualTo("unix:///var/run/docker.sock");
    assertThat(s.value("BESPOKE_DOCKER_EGRESS_ELSEWHERE")).isEqualTo("false");
    assertThat(s.value("DAYTONA_MAX_CONNECTIONS")).isEqualTo("32");
    assertThat(s.value("MODAL_SERVER_URL")).isEqualTo("https://api.modal.com:443");
    assertThat(s.get("DAYTONA_TARGET")).as("no default").isEmpty();
  }

  @Test
  void the_readme_documents_every_setting_of_every_backend() throws Exception {
    String readme = Files.readString(Path.of("..", "README.md"));
    String table = readme.substring(readme.indexOf("## Configuration"), readme.indexOf("### Upgrading the embedded"));
    for (BackendFactory f : factories()) {
      assertThat(f.settings()).as(f.name() + " declares what it reads").isNotEmpty();
      for (BackendSettings.Setting s : f.settings()) {
        assertThat(table).as(s.variable()).contains("`" + s.variable() + "`");
        assertThat(table.contains("`providers." + f.name() + "." + s.key() + "`") || table.contains("`." + s.key() + "`"))
            .as(f.name() + "." + s.key()).isTrue();
      }
    }
  }
}
