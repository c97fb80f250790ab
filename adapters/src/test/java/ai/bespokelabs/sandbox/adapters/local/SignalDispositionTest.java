package ai.bespokelabs.sandbox.adapters.local;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A gateway started where SIGINT is ignored (a background job of a script) still starts programs that INT
 * ends: the native spawn resets every signal to its default action. (Through setsid the ignored signal is
 * inherited, as with any {@link ProcessBuilder} child.)
 */
class SignalDispositionTest {
  @TempDir
  Path dir;

  @Test
  void programsDoNotInheritSignalsTheGatewayIgnores() throws Exception {
    Assumptions.assumeTrue(SessionSpawner.available().isPresent(), "the native spawn is not available here");
    String java = ProcessHandle.current().info().command().orElseThrow();
    String cmd = "trap '' INT HUP; exec \"$0\" --enable-native-access=ALL-UNNAMED -cp \"$1\" "
        + SpawnProbe.class.getName() + " \"$2\"";
    Process p = new ProcessBuilder(List.of("/bin/sh", "-c", cmd, java, System.getProperty("java.class.path"),
        dir.toString())).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.waitFor()).as(out).isZero();

    String line = out.lines().filter(l -> l.startsWith("SigIgn:")).findFirst().orElseThrow(() -> new AssertionError(out));
    long ignored = Long.parseUnsignedLong(line.substring("SigIgn:".length()).trim(), 16);
    assertThat(ignored & 0x7fffffffL).as("signals 1-31 the program ignores").isZero();
  }
}
