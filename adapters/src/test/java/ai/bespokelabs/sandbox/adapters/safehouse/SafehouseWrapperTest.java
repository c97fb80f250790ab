package ai.bespokelabs.sandbox.adapters.safehouse;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.bespokelabs.sandbox.adapters.local.LocalProvider;
import ai.bespokelabs.sandbox.core.bus.Messages.CreateSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecResult;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecSandbox;
import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import ai.bespokelabs.sandbox.core.model.SandboxConfig;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Clock;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The safehouse backend's command line, and its plumbing through a stand-in for the macOS-only CLI. */
class SafehouseWrapperTest {
  @TempDir
  Path tmp;

  static final SandboxConfig NONE = new SandboxConfig(null, null, null, null, null, null, null, null, null, null, null,
      null, null, null, null);

  @Test
  void every_program_runs_through_safehouse_with_the_sandbox_as_workdir() {
    assertThat(SafehouseWrapper.command(Path.of("/opt/homebrew/bin/safehouse"), Path.of("/data/sbx_1"),
        List.of("python3", "-c", "print(1)")))
        .containsExactly("/opt/homebrew/bin/safehouse", "--workdir=/data/sbx_1", "--env", "--", "python3", "-c",
            "print(1)");
  }

  @Test
  void a_missing_cli_is_backend_not_installed() {
    LocalProvider provider = new LocalProvider(SafehouseWrapper.BACKEND, tmp, Clock.systemUTC(),
        new SafehouseWrapper(Optional.empty()));
    assertThatThrownBy(() -> provider.create(new CreateSandbox("sbx_x", "org", "safehouse", "t", NONE)))
        .isInstanceOfSatisfying(ProviderException.class, e -> {
          assertThat(e.error().code()).isEqualTo(ErrorCode.BACKEND_NOT_INSTALLED);
          assertThat(e.error().httpStatus()).isEqualTo(422);
        });
  }

  @Test
  void executions_go_through_the_cli_with_the_clean_environment() throws Exception {
    Path cli = tmp.resolve("safehouse");
    Path log = tmp.resolve("calls.log");
    Files.writeString(cli, """
        #!/bin/sh
        echo "$1 $2 $3" >> %s
        workdir="${1#--workdir=}"; shift 3
        cd "$workdir" && exec "$@"
        """.formatted(log));
    Files.setPosixFilePermissions(cli, PosixFilePermissions.fromString("rwxr-xr-x"));
    LocalProvider provider = new LocalProvider(SafehouseWrapper.BACKEND, tmp.resolve("sandboxes"), Clock.systemUTC(),
        new SafehouseWrapper(Optional.of(cli)));
    String dir = provider.create(new CreateSandbox("sbx_s", "org", "safehouse", "t", NONE));
    ExecResult r = provider.exec(new ExecSandbox("sbx_s", "exe_1", dir, null, "python", "echo hi; pwd; echo $HOME",
        null, Map.of(), null, 10, 1 << 16));
    assertThat(r.exitCode()).isZero();
    assertThat(r.stdout()).isEqualTo("hi\n" + dir + "\n" + dir + "\n");
    assertThat(Files.readString(log)).isEqualTo("--workdir=" + dir + " --env --\n");
    ExecResult timedOut = provider.exec(new ExecSandbox("sbx_s", "exe_2", dir, null, "python", "sleep 30", null,
        Map.of(), null, 1, 1024));
    assertThat(timedOut.exitCode()).isEqualTo(124);
  }
}
