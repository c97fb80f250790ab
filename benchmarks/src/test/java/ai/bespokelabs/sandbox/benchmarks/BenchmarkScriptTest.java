package ai.bespokelabs.sandbox.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code bin/benchmark} answers {@code --help}, {@code -h} and an unknown benchmark name with its usage and runs
 * nothing: no JDK is looked for, nothing is built, no gateway starts.
 */
class BenchmarkScriptTest {
  private static final Path SCRIPT = Path.of("..", "bin", "benchmark").toAbsolutePath().normalize();

  record Run(int exit, String out, String err) {
  }

  /** Runs the script with a bare environment and a JAVA_HOME that holds no JDK. */
  private static Run run(Path empty, String... args) throws Exception {
    List<String> command = new ArrayList<>(List.of("bash", SCRIPT.toString()));
    command.addAll(List.of(args));
    ProcessBuilder pb = new ProcessBuilder(command);
    pb.environment().clear();
    pb.environment().put("PATH", "/usr/bin:/bin");
    pb.environment().put("JAVA_HOME", empty.toString());
    File out = empty.resolve("out-" + System.nanoTime()).toFile();
    File err = empty.resolve("err-" + System.nanoTime()).toFile();
    pb.redirectOutput(out).redirectError(err);
    Process p = pb.start();
    assertThat(p.waitFor(30, TimeUnit.SECONDS)).as("the script answers at once").isTrue();
    return new Run(p.exitValue(), Files.readString(out.toPath(), StandardCharsets.UTF_8),
        Files.readString(err.toPath(), StandardCharsets.UTF_8));
  }

  @Test
  void help_prints_the_usage_of_every_benchmark_and_runs_nothing(@TempDir Path empty) throws Exception {
    for (String[] args : new String[][] {{"--help"}, {"-h"}, {"help"}, {"stream", "--help"}, {"cluster", "-h"}}) {
      Run r = run(empty, args);
      assertThat(r.exit()).as(String.join(" ", args)).isZero();
      assertThat(r.out()).contains("bin/benchmark [exec]", "bin/benchmark stream", "bin/benchmark ledger",
          "bin/benchmark deadlines", "bin/benchmark backends", "bin/benchmark cluster", "bin/benchmark providers",
          "bin/benchmark --help");
      assertThat(r.out()).doesNotContain("set -euo", "#");
      assertThat(r.err()).isEmpty();
    }
  }

  @Test
  void an_unknown_benchmark_is_refused_with_the_usage(@TempDir Path empty) throws Exception {
    Run r = run(empty, "bogus", "--seconds", "1");
    assertThat(r.exit()).isEqualTo(2);
    assertThat(r.out()).isEmpty();
    assertThat(r.err()).startsWith("error: unknown benchmark 'bogus'").contains("bin/benchmark providers");
  }
}
