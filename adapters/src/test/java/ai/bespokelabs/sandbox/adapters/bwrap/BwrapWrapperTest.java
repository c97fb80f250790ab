package ai.bespokelabs.sandbox.adapters.bwrap;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.bespokelabs.sandbox.adapters.local.LocalProvider;
import ai.bespokelabs.sandbox.core.bus.Messages.CreateSandbox;
import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import ai.bespokelabs.sandbox.core.model.SandboxConfig;
import java.nio.file.Path;
import java.time.Clock;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A host without bubblewrap (or prlimit) says what to install, in the create's error and the provider listing. */
class BwrapWrapperTest {
  static final SandboxConfig NONE = new SandboxConfig(null, null, null, null, null, null, null, null, null, null, null,
      null, null, null, null);

  @TempDir
  Path tmp;

  @Test
  void a_missing_tool_is_backend_not_installed_with_what_to_install() {
    Optional<Path> present = Optional.of(Path.of("/usr/bin/true"));
    LocalProvider noBwrap = new LocalProvider(BwrapWrapper.BACKEND, tmp, Clock.systemUTC(),
        new BwrapWrapper(Optional.empty(), present));
    assertThat(noBwrap.unavailable())
        .contains("bwrap is not installed on this host (Debian/Ubuntu: apt-get install bubblewrap)");
    assertThatThrownBy(() -> noBwrap.create(new CreateSandbox("sbx_x", "org", "bwrap", "t",
        NONE)))
        .isInstanceOfSatisfying(ProviderException.class, e -> {
          assertThat(e.error().code()).isEqualTo(ErrorCode.BACKEND_NOT_INSTALLED);
          assertThat(e.error().toJson().getString("message"))
              .isEqualTo("bwrap is not installed on this host (Debian/Ubuntu: apt-get install bubblewrap)");
        });
    LocalProvider noPrlimit = new LocalProvider(BwrapWrapper.BACKEND, tmp, Clock.systemUTC(),
        new BwrapWrapper(present, Optional.empty()));
    assertThat(noPrlimit.unavailable())
        .contains("prlimit is not installed on this host (Debian/Ubuntu: apt-get install util-linux)");
    assertThat(new LocalProvider(BwrapWrapper.BACKEND, tmp, Clock.systemUTC(), new BwrapWrapper(present, present))
        .unavailable()).isEmpty();
  }
}
