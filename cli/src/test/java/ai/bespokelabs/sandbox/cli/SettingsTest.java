package ai.bespokelabs.sandbox.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Where the command finds the gateway and its key: the environment first, else the login file, owner-only. */
class SettingsTest {
  @TempDir
  Path home;

  @Test
  void a_stored_login_is_readable_by_its_owner_only_and_the_environment_overrides_it() throws Exception {
    Map<String, String> env = Map.of("HOME", home.toString());
    Path file = Settings.store(env, new Settings.Login("http://gw:8000", "bsk_live_secret"));
    assertThat(file).isEqualTo(home.resolve(".config/bespoke-sandbox/config.json"));
    assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(file))).isEqualTo("rw-------");
    assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(file.getParent()))).isEqualTo("rwx------");
    assertThat(Settings.resolve(env)).isEqualTo(new Settings.Login("http://gw:8000", "bsk_live_secret"));
    assertThat(Settings.resolve(Map.of("HOME", home.toString(), "BESPOKE_API_KEY", "bsk_live_other")))
        .isEqualTo(new Settings.Login("http://gw:8000", "bsk_live_other"));
    try (var left = Files.list(file.getParent())) {
      assertThat(left.map(p -> p.getFileName().toString())).containsExactly("config.json");
    }
  }

  @Test
  void without_a_login_the_command_says_how_to_log_in() {
    assertThatThrownBy(() -> Settings.resolve(Map.of("XDG_CONFIG_HOME", home.resolve("none").toString())))
        .isInstanceOf(CliException.class).hasMessageContaining("sandbox login");
  }
}
