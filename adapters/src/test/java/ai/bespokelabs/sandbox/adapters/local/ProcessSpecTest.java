package ai.bespokelabs.sandbox.adapters.local;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.bespokelabs.sandbox.core.error.ApiException;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class ProcessSpecTest {
  private static final Path DIR = Path.of("/srv/sandboxes/sbx_1");

  @Test
  void environmentIsACleanBaseOverlaidBySandboxThenExecVars() {
    Map<String, String> env = ProcessSpec.environment(DIR, Map.of("A", "sandbox", "B", "sandbox"),
        Map.of("B", "exec", "C", "exec"));

    assertThat(env).containsOnly(
        Map.entry("PATH", "/usr/local/bin:/usr/bin:/bin"),
        Map.entry("HOME", DIR.toString()),
        Map.entry("SANDBOX_ROOT", DIR.toString()),
        Map.entry("LANG", "C.UTF-8"),
        Map.entry("TMPDIR", DIR.toString()),
        Map.entry("A", "sandbox"),
        Map.entry("B", "exec"),
        Map.entry("C", "exec"));
  }

  @Test
  void cwdDefaultsToTheSandboxDirAndResolvesInsideIt() {
    assertThat(ProcessSpec.resolveCwd(DIR, null)).isEqualTo(DIR);
    assertThat(ProcessSpec.resolveCwd(DIR, " ")).isEqualTo(DIR);
    assertThat(ProcessSpec.resolveCwd(DIR, "src/app")).isEqualTo(DIR.resolve("src/app"));
    assertThat(ProcessSpec.resolveCwd(DIR, "a/../b/.")).isEqualTo(DIR.resolve("b"));
    assertThat(ProcessSpec.resolveCwd(DIR, "/srv/sandboxes/sbx_1/lib")).isEqualTo(DIR.resolve("lib"));
  }

  @ParameterizedTest
  @ValueSource(strings = {"..", "../sbx_2", "a/../../x", "/etc", "/srv/sandboxes/sbx_10", "/", "a\0b"})
  void cwdOutsideTheSandboxIsRejected(String cwd) {
    assertThatThrownBy(() -> ProcessSpec.resolveCwd(DIR, cwd))
        .isInstanceOfSatisfying(ApiException.class, e -> {
          assertThat(e.status()).isEqualTo(422);
          assertThat(e.detail()).isEqualTo("cwd must stay inside the sandbox");
        });
  }
}
