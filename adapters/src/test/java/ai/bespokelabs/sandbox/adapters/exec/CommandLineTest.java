package ai.bespokelabs.sandbox.adapters.exec;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.bespokelabs.sandbox.core.error.ApiException;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class CommandLineTest {

  @ParameterizedTest(name = "{0} -> {1} {2}")
  @CsvSource({
      "python, python3, -c",
      "python3, python3, -c",
      "javascript, node, -e",
      "js, node, -e",
      "node, node, -e",
      "bash, bash, -c",
      "sh, sh, -c",
      "zsh, zsh, -c",
      "ruby, ruby, -e",
      "perl, perl, -e",
  })
  void codeRunsThroughTheLanguageInterpreter(String language, String program, String flag) {
    assertThat(CommandLine.forCode("x = 1", language)).containsExactly(program, flag, "x = 1");
  }

  @Test
  void codeWithoutLanguageIsPython() {
    assertThat(CommandLine.of("print(1)", null, null, null)).containsExactly("python3", "-c", "print(1)");
  }

  @ParameterizedTest
  @ValueSource(strings = {"", "Python", "1abc", "py thon", "../bin/sh", "/bin/sh", "a;rm", "cobol", "lua5.4", "g++"})
  void anUnknownLanguageIsTheCallersMistake(String language) {
    assertThatThrownBy(() -> CommandLine.forCode("x", language))
        .isInstanceOfSatisfying(ApiException.class, e -> {
          assertThat(e.status()).isEqualTo(422);
          assertThat(e.detail()).isEqualTo("unsupported language: " + language
              + " (supported: bash, javascript, js, node, perl, python, python3, ruby, sh, zsh)");
        });
  }

  @Test
  void commandWithoutArgsIsAShellCommandLine() {
    assertThat(CommandLine.of(null, null, "ls -la /tmp", null)).containsExactly("/bin/sh", "-c", "ls -la /tmp");
    assertThat(CommandLine.of(null, null, "[[ 1 == 1 ]]", null, "/bin/bash"))
        .containsExactly("/bin/bash", "-c", "[[ 1 == 1 ]]");
  }

  /** The seed treats an empty list as no arguments: the command is a command line. */
  @Test
  void commandWithAnEmptyArgsListIsAShellCommandLine() {
    assertThat(CommandLine.of(null, null, "echo hi", List.of())).containsExactly("/bin/sh", "-c", "echo hi");
  }

  @Test
  void commandWithArgsRunsTheProgramDirectly() {
    assertThat(CommandLine.of(null, null, "grep", List.of("-r", "TODO list", "/app")))
        .containsExactly("grep", "-r", "TODO list", "/app");
  }

  @Test
  void neitherCodeNorCommandIsRejected() {
    assertThatThrownBy(() -> CommandLine.of(null, "python", null, null))
        .isInstanceOfSatisfying(ApiException.class, e -> assertThat(e.status()).isEqualTo(422));
  }
}
