package ai.bespokelabs.sandbox.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.core.testing.TestDatabase;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What a user sees when the gateway cannot start: one line saying why and what to do, no stack trace. */
class StartupErrorsTest {
  @Test
  void a_port_in_use_is_one_line_naming_it_and_how_to_choose_another(@TempDir Path dataDir) throws Exception {
    try (ServerSocket taken = new ServerSocket()) {
      taken.bind(new InetSocketAddress("127.0.0.1", 0));
      int port = taken.getLocalPort();
      String javaBin = ProcessHandle.current().info().command().orElse("java");
      ProcessBuilder pb = new ProcessBuilder(List.of(javaBin, "--enable-native-access=ALL-UNNAMED", "-cp",
          System.getProperty("java.class.path"), Main.class.getName(), "--port", String.valueOf(port)))
          .redirectErrorStream(true);
      pb.environment().put("BESPOKE_DATA_DIR", dataDir.toString());
      pb.environment().put("BESPOKE_DATABASE_URL", TestDatabase.newDatabaseUrl());
      Process p = pb.start();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
      assertThat(p.exitValue()).as(out).isEqualTo(2);
      assertThat(out).contains("sandbox-gateway: cannot listen on 127.0.0.1:" + port)
          .contains("choose another port with PORT=<port> or --port <port>")
          .doesNotContain("\tat ").doesNotContain("Exception in thread");
    }
  }

  @Test
  void an_invalid_allowed_range_is_one_line_naming_the_setting(@TempDir Path dataDir) throws Exception {
    String javaBin = ProcessHandle.current().info().command().orElse("java");
    ProcessBuilder pb = new ProcessBuilder(List.of(javaBin, "--enable-native-access=ALL-UNNAMED", "-cp",
        System.getProperty("java.class.path"), Main.class.getName())).redirectErrorStream(true);
    pb.environment().put("BESPOKE_DATA_DIR", dataDir.toString());
    pb.environment().put("BESPOKE_SANDBOX_ALLOW_CIDRS", "10.0.0.0/8,10.1.0.0/99");
    Process p = pb.start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
    assertThat(p.exitValue()).as(out).isEqualTo(2);
    assertThat(out.strip().lines()).as(out).hasSize(1).first().asString()
        .contains("BESPOKE_SANDBOX_ALLOW_CIDRS").contains("10.1.0.0/99");
  }
}
