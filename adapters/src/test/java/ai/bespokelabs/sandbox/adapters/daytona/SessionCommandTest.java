package ai.bespokelabs.sandbox.adapters.daytona;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The composed lines, run by a real {@code sh} as a session would. */
class SessionCommandTest {
  static String run(String line, Path dir, String stdin) throws Exception {
    Process p = new ProcessBuilder("/bin/sh", "-c", line).directory(dir.toFile()).redirectErrorStream(true).start();
    if (stdin != null) {
      p.getOutputStream().write(stdin.getBytes(StandardCharsets.UTF_8));
    }
    p.getOutputStream().close();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    p.waitFor();
    return out;
  }

  @Test
  void argv_cwd_and_env_survive_any_quoting() throws Exception {
    Path dir = Files.createTempDirectory("session-command");
    Files.createDirectories(dir.resolve("sub dir"));
    String line = SessionCommand.of(List.of("sh", "-c", "pwd; printf '%s|' \"$A\" \"$1\"", "x", "it's \"$HOME\""),
        "sub dir", Map.of("A", "a'b c"), "exe_1", false);
    assertThat(run("TMPDIR=" + dir + "; export TMPDIR; " + line, dir, null))
        .isEqualTo(dir.toRealPath().resolve("sub dir") + "\na'b c|it's \"$HOME\"|");
    assertThat(Files.readString(dir.resolve(".bsk-exe_1.pid")).trim()).matches("[0-9]+");
  }

  @Test
  void kept_stdin_is_relayed_from_base64_lines_until_the_eof_line() throws Exception {
    Path dir = Files.createTempDirectory("session-command");
    String line = SessionCommand.of(List.of("cat"), null, Map.of(), "exe_2", true);
    String in = java.util.Base64.getEncoder().encodeToString("héllo\n".getBytes(StandardCharsets.UTF_8)) + "\n"
        + SessionCommand.EOF_LINE + "ignored\n";
    assertThat(run("TMPDIR=" + dir + "; export TMPDIR; " + line, dir, in)).isEqualTo("héllo\n");
  }

  @Test
  void tags_must_be_shell_safe() {
    assertThatThrownBy(() -> SessionCommand.pidFile("a;rm -rf /")).isInstanceOf(IllegalArgumentException.class);
    assertThat(DaytonaExecutions.tag("exe_ab12")).isEqualTo("exe_ab12");
    assertThat(DaytonaExecutions.tag("$(x)")).matches("[0-9a-f-]{36}");
  }
}
