package ai.bespokelabs.sandbox.adapters.local;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Where host sandboxes' directories go, for each way a gateway may be installed. */
class SandboxRootTest {
  @Test
  void an_explicit_root_is_used_as_given() {
    assertThat(SandboxRoot.choose(Path.of("/data"), Optional.of(Path.of("/srv/sandboxes/../boxes")), true))
        .isEqualTo(Path.of("/srv/boxes"));
  }

  @Test
  void a_gateway_that_is_not_root_keeps_them_in_its_data_directory(@TempDir Path dir) throws Exception {
    Path data = Files.createDirectory(dir.resolve("data"));
    Files.setPosixFilePermissions(data, PosixFilePermissions.fromString("rwx------"));
    assertThat(SandboxRoot.choose(data, Optional.empty(), false)).isEqualTo(data);
  }

  @Test
  void as_root_a_data_directory_others_can_traverse_serves(@TempDir Path dir) throws Exception {
    Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx--x--x"));
    Path data = Files.createDirectory(dir.resolve("data"));
    Files.setPosixFilePermissions(data, PosixFilePermissions.fromString("rwx--x--x"));
    assertThat(SandboxRoot.traversable(data)).isTrue();
    assertThat(SandboxRoot.choose(data, Optional.empty(), true)).isEqualTo(data);
  }

  /** Root's default {@code ~/.bespoke-sandbox} under a 0700 home: the sandboxes move out, one place per data dir. */
  @Test
  void as_root_a_closed_data_directory_sends_them_to_the_system_directory(@TempDir Path dir) throws Exception {
    Path home = Files.createDirectory(dir.resolve("home"));
    Files.setPosixFilePermissions(home, PosixFilePermissions.fromString("rwx------"));
    Path data = home.resolve(".bespoke-sandbox");
    assertThat(SandboxRoot.traversable(data)).isFalse();
    Path chosen = SandboxRoot.choose(data, Optional.empty(), true);
    assertThat(chosen.getParent()).isEqualTo(SandboxRoot.SYSTEM);
    assertThat(chosen.getFileName().toString()).matches("sandboxes-[0-9a-f]+");
    assertThat(chosen.startsWith(data)).as("outside the data directory").isFalse();
    assertThat(SandboxRoot.choose(data, Optional.empty(), true)).as("stable").isEqualTo(chosen);
    Path other = Files.createDirectory(dir.resolve("home2"));
    Files.setPosixFilePermissions(other, PosixFilePermissions.fromString("rwx------"));
    Path second = SandboxRoot.choose(other.resolve("data"), Optional.empty(), true);
    assertThat(second).as("another data directory").isNotEqualTo(chosen);
    if (Files.exists(chosen)) { // made when the process may (root)
      assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(chosen))).isEqualTo("rwx--x--x");
    }
    for (Path made : new Path[] {chosen, second}) {
      Files.deleteIfExists(made);
    }
  }
}
