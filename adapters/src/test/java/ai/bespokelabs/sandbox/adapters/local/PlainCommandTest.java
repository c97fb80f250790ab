package ai.bespokelabs.sandbox.adapters.local;

import static ai.bespokelabs.sandbox.adapters.local.Fixtures.create;
import static ai.bespokelabs.sandbox.adapters.local.Fixtures.exec;
import static ai.bespokelabs.sandbox.adapters.local.Fixtures.shell;
import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.core.bus.Messages.DestroySandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class PlainCommandTest {
  private static final Map<String, String> ENV = Map.of("PATH", ProcessSpec.BASE_PATH, "HOME", "/tmp");

  @TempDir
  Path data;

  private LocalProvider provider;

  @BeforeEach
  void setUp() {
    provider = new LocalProvider(LocalProvider.BACKEND, data.resolve("sandboxes"), Clock.systemUTC(),
        HostWrapper.NONE, new Workdirs(List.of(data), data.resolve("gateway")));
  }

  @AfterEach
  void destroy() {
    provider.destroy(new DestroySandbox("sbx_a", null));
  }

  /** Verifies that lines of plain words split on blanks into exactly those words. */
  @Test
  void plainWordsAreSplitOnBlanks() {
    assertThat(PlainCommand.words("ls -la /tmp")).contains(List.of("ls", "-la", "/tmp"));
    assertThat(PlainCommand.words("  sleep\t 1  ")).contains(List.of("sleep", "1"));
    assertThat(PlainCommand.words("dd if=/dev/zero of=/dev/null count=1")).isPresent();
    assertThat(PlainCommand.words("git log --format=%H -n 1 origin/main")).isPresent();
    assertThat(PlainCommand.words("python3 -m http.server 8080")).isPresent();
    assertThat(PlainCommand.words("curl -u a@b.c:x,y+z https://example.com:443/a")).isPresent();
    assertThat(PlainCommand.words("/usr/bin/env")).contains(List.of("/usr/bin/env"));
    assertThat(PlainCommand.words("true")).contains(List.of("true"));
    assertThat(PlainCommand.words("false")).contains(List.of("false"));
  }

  /** Verifies that anything bash would read as more than plain words is left to bash. */
  @ParameterizedTest
  @ValueSource(strings = {"", " ", "\t", "ls;", "ls; ls", "ls && ls", "ls || ls", "ls | cat", "ls &", "ls\nls",
      "ls\r", "(ls)", "ls >f", "ls <f", "ls 2>&1", "echo $HOME", "echo ${HOME}", "ls $(pwd)", "ls `pwd`", "ls 'a b'",
      "ls \"a\"", "ls a\\ b", "ls *", "ls a?", "ls [ab]", "ls ~", "ls ~/x", "ls {a,b}", "ls #c", "ls a#b", "! ls",
      "ls !x", "A=1 ls", "A=1", "=x", "ls ^x", "ls x^", "ls \u00e9", "ls \u00a0x", "ls \u2028", "ls \0",
      "echo hi", "printf x", "test -e x", "[ -e x ]", "[[ -e x ]]", "kill 1", "pwd", "cd /", "exit 3", "type ls",
      "command ls", "time ls", "exec ls", "source f", ". f", ": x", "eval ls", "builtin ls", "enable -n ls",
      "true x", "false x", "true --help", "if", "for", "while", "until", "case", "function", "coproc ls", "{", "}",
      "select", "read x", "wait", "trap", "ulimit -a", "umask", "hash", "alias", "export", "set", "shopt",
      "declare", "local", "readonly", "unset", "getopts", "let x", "history", "jobs", "fg", "bg", "disown",
      "suspend", "logout", "return", "break", "continue", "shift", "times", "caller", "help", "mapfile",
      "readarray", "typeset", "compgen", "complete", "compopt", "dirs", "pushd /", "popd", "fc", "bind"})
  void anythingElseNeedsAShell(String line) {
    assertThat(PlainCommand.words(line)).as(line).isEmpty();
  }

  /** Verifies that every name bash resolves itself is on the list (bash's own {@code compgen}). */
  @Test
  void theListHoldsEveryBuiltinAndKeywordOfTheHostsBash() throws Exception {
    Process p = new ProcessBuilder("/bin/bash", "-c", "compgen -b; compgen -k").redirectErrorStream(true).start();
    List<String> names = Arrays.asList(new String(p.getInputStream().readAllBytes()).split("\n"));
    assertThat(p.waitFor()).isZero();
    assertThat(PlainCommand.BASH_NAMES).containsAll(names);
  }

  /** Verifies that variables steering bash's start or search keep the shell. */
  @Test
  void anEnvironmentThatChangesBashKeepsTheShell() {
    assertThat(PlainCommand.plainEnvironment(ENV)).isTrue();
    assertThat(PlainCommand.plainEnvironment(Map.of("PATH", "/usr/bin:/bin/", "SHLVL", "3"))).isTrue();
    for (Map<String, String> env : List.of(Map.of("PATH", "/usr/bin", "BASH_ENV", "/tmp/x"),
        Map.of("PATH", "/usr/bin", "BASH_FUNC_ls%%", "() { echo; }"), Map.of("PATH", "/usr/bin", "ENV", "x"),
        Map.of("PATH", "/usr/bin", "SHELLOPTS", "xtrace"), Map.of("PATH", "/usr/bin", "BASHOPTS", "x"),
        Map.of("PATH", "/usr/bin", "PS4", "x"), Map.of("PATH", "/usr/bin", "POSIXLY_CORRECT", "1"),
        Map.of("PATH", "/usr/bin", "EXECIGNORE", "*"), Map.of("PATH", "/usr/bin", "PWD", "/"),
        Map.of("PATH", "/usr/bin", "OLDPWD", "/"), Map.of("PATH", "/usr/bin", "SHLVL", "abc"),
        Map.of("PATH", "/usr/bin", "SHLVL", "999"), Map.of("PATH", "/usr/bin", "SHLVL", "07"),
        Map.of("PATH", "/usr/bin", "SHLVL", "-1"), Map.of("PATH", ""), Map.of("HOME", "/"),
        Map.of("PATH", ":/usr/bin"), Map.of("PATH", "/usr/bin:"), Map.of("PATH", "/usr/bin::/bin"),
        Map.of("PATH", "bin:/usr/bin"), Map.of("PATH", "/tmp:/usr/bin"), Map.of("PATH", "/usr/../tmp"),
        Map.of("PATH", "/usr/bin/..:/bin"), Map.of("PATH", "/usrx/bin"), Map.of("PATH", "//tmp"))) {
      assertThat(PlainCommand.plainEnvironment(env)).as(env.toString()).isFalse();
    }
  }

  /** Verifies that only root's own programs of the system directories run without bash. */
  @Test
  void onlySystemProgramsRunDirectly() throws Exception {
    assertThat(PlainCommand.systemProgram("env", ProcessSpec.BASE_PATH)).contains("/usr/bin/env");
    assertThat(PlainCommand.systemProgram("/usr/bin/env", ProcessSpec.BASE_PATH)).contains("/usr/bin/env");
    assertThat(PlainCommand.systemProgram("no-such-program-here", ProcessSpec.BASE_PATH)).isEmpty();
    assertThat(PlainCommand.systemProgram("./env", ProcessSpec.BASE_PATH)).isEmpty();
    assertThat(PlainCommand.systemProgram("/tmp/env", ProcessSpec.BASE_PATH)).isEmpty();
    assertThat(PlainCommand.systemProgram("/usr/bin/../../tmp/x", ProcessSpec.BASE_PATH)).isEmpty();
    assertThat(PlainCommand.systemProgram("bin", "/usr")).as("a directory").isEmpty();
    Path script = Files.writeString(data.resolve("plain"), "echo hi\n");
    script.toFile().setExecutable(true, false);
    assertThat(PlainCommand.systemProgram(script.toString(), ProcessSpec.BASE_PATH)).isEmpty();
  }

  /** Verifies that a plain line becomes its program with bash's variables, and anything else stays as it is. */
  @Test
  void directRewritesOnlyPlainLines() throws Exception {
    Path cwd = data.toRealPath();
    ProcessSpec bash = new ProcessSpec(List.of("/bin/bash", "-c", "env -0"), cwd, ENV, 5, 100);
    ProcessSpec direct = PlainCommand.direct(bash, "env -0", false);
    assertThat(direct.argv()).containsExactly("env", "-0");
    assertThat(direct.env()).containsEntry("PWD", cwd.toString()).containsEntry("SHLVL", "0")
        .containsEntry("_", "/usr/local/bin/env".equals(direct.env().get("_")) ? "/usr/local/bin/env" : "/usr/bin/env")
        .containsEntry("HOME", "/tmp");
    assertThat(PlainCommand.direct(bash, "env -0", true).env()).doesNotContainKey("PWD");
    assertThat(PlainCommand.direct(bash, "env $X", false)).isSameAs(bash);
    assertThat(PlainCommand.direct(bash, "no-such-program-here", false)).isSameAs(bash);
    ProcessSpec traced = new ProcessSpec(bash.argv(), cwd, Map.of("PATH", "/usr/bin", "SHELLOPTS", "xtrace"), 5, 100);
    assertThat(PlainCommand.direct(traced, "env", false)).isSameAs(traced);
  }

  /** Verifies that a plain command sees the environment bash would have given it, and bash's exit codes. */
  @Test
  void aDirectProgramSeesWhatBashWouldHaveGivenIt() {
    provider.create(create("sbx_a", Map.of("SANDBOX_VAR", "x y"), null));
    ExecResult direct = provider.exec(shell("sbx_a", "env"));
    ExecResult bash = provider.exec(shell("sbx_a", "'env'")); // quoted: runs under bash
    assertThat(direct.exitCode()).isZero();
    assertThat(sorted(direct.stdout())).isEqualTo(sorted(bash.stdout()));
    assertThat(direct.stdout()).contains("SHLVL=0\n", "_=/usr/bin/env\n", "SANDBOX_VAR=x y\n");

    assertThat(provider.exec(shell("sbx_a", "false")).exitCode()).isEqualTo(1);
    assertThat(provider.exec(shell("sbx_a", "sh -c 'exit 3'")).exitCode()).isEqualTo(3);
    assertThat(provider.exec(shell("sbx_a", "ls no-such-file")).exitCode()).isEqualTo(2);
    ExecResult missing = provider.exec(shell("sbx_a", "no-such-program-here --x"));
    assertThat(missing.exitCode()).isEqualTo(127);
    assertThat(missing.stderr()).isEqualTo("/bin/bash: line 1: no-such-program-here: command not found\n");
    ExecResult sub = provider.exec(exec("sbx_a", null, "env", List.of(), Map.of("SHLVL", "4"), null));
    assertThat(sub.stdout()).contains("SHLVL=4\n");
  }

  private static List<String> sorted(String lines) {
    return Arrays.stream(lines.split("\n")).sorted().toList();
  }
}
