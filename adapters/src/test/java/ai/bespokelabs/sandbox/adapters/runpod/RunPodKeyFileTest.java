package ai.bespokelabs.sandbox.adapters.runpod;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.bespokelabs.sandbox.core.config.ConfigException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Key files the gateway cannot use are one line naming the setting, never the path or a stack trace. */
class RunPodKeyFileTest {
  static final String UNREADABLE = "BESPOKE_RUNPOD_SSH_KEY cannot be read (it must be a readable private key file)";

  @Test
  void a_directory_where_the_key_should_be_is_unreadable(@TempDir Path dir) throws Exception {
    Path key = Files.createDirectory(dir.resolve("id_ed25519"));
    assertThatThrownBy(() -> RunPodSsh.loadOrGenerate(key)).isInstanceOf(ConfigException.class)
        .hasMessage(UNREADABLE);
  }

  @Test
  void an_empty_file_holds_no_key_and_a_missing_one_is_generated_private(@TempDir Path dir) throws Exception {
    Path empty = Files.createFile(dir.resolve("empty"));
    assertThatThrownBy(() -> RunPodSsh.loadOrGenerate(empty)).isInstanceOf(ConfigException.class)
        .hasMessageStartingWith("BESPOKE_RUNPOD_SSH_KEY ").hasMessageNotContaining(dir.toString());
    Path fresh = dir.resolve("keys").resolve("gateway");
    assertThat(RunPodSsh.loadOrGenerate(fresh)).isNotNull();
    assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(fresh))).isEqualTo("rw-------");
    assertThat(RunPodSsh.loadOrGenerate(fresh).getPublic()).as("the same key when read again")
        .isEqualTo(RunPodSsh.loadOrGenerate(fresh).getPublic());
  }
}
