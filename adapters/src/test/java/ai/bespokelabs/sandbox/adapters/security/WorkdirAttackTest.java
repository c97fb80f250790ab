package ai.bespokelabs.sandbox.adapters.security;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.bespokelabs.sandbox.adapters.local.HostWrapper;
import ai.bespokelabs.sandbox.adapters.local.LocalProvider;
import ai.bespokelabs.sandbox.adapters.local.Workdirs;
import ai.bespokelabs.sandbox.core.bus.Messages.CreateSandbox;
import ai.bespokelabs.sandbox.core.bus.Messages.DestroySandbox;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import ai.bespokelabs.sandbox.core.model.SandboxConfig;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A tenant names host directories as its sandbox's {@code workdir} to reach the gateway's data directory (admin
 * token, pepper, every sandbox's directory) or another tenant's sandbox, and destroys its own sandbox after a
 * restart to wipe another's directory. Only directories inside the operator's allowed roots are accepted, never
 * the data directory or anything in or around it, and destroy deletes only the sandbox's own directory.
 */
@Tag("security")
class WorkdirAttackTest {
  @TempDir
  Path tmp;

  Path dataDir;
  Path root;
  Path allowed;
  Workdirs workdirs;
  LocalProvider provider;

  @BeforeEach
  void setUp() throws Exception {
    dataDir = Files.createDirectories(tmp.resolve("data"));
    Files.writeString(dataDir.resolve("admin-token"), "secret\n");
    root = dataDir.resolve("sandboxes");
    allowed = Files.createDirectories(tmp.resolve("projects"));
    workdirs = new Workdirs(List.of(allowed), dataDir);
    provider = provider();
  }

  /** A new provider on the same directories: the node after a restart, with no runtime in memory. */
  LocalProvider provider() {
    return new LocalProvider(LocalProvider.BACKEND, root, Clock.systemUTC(), HostWrapper.NONE, workdirs);
  }

  static CreateSandbox create(String sandboxId, String workdir) {
    SandboxConfig config = new SandboxConfig(null, null, null, null, null, null, null, null, null, null, null,
        null, workdir, null, null);
    return new CreateSandbox(sandboxId, "org_attacker", LocalProvider.BACKEND, "token", config, null);
  }

  static void refused(Runnable create, String detail) {
    assertThatThrownBy(create::run).isInstanceOfSatisfying(ApiException.class, e -> {
      assertThat(e.status()).isEqualTo(422);
      assertThat(String.valueOf(e.detail())).contains(detail);
    });
  }

  @Test
  void host_directories_outside_the_allowed_roots_are_refused() throws Exception {
    String victim = provider.create(create("sbx_victim", null));
    Files.writeString(Path.of(victim, "private.txt"), "victim's\n");
    Path link = Files.createSymbolicLink(allowed.resolve("innocent"), dataDir);

    for (String workdir : List.of("/", "/etc", "/root", tmp.toString())) {
      refused(() -> provider.create(create("sbx_attacker", workdir)), "BESPOKE_WORKDIR_ROOTS");
    }
    for (String workdir : List.of(dataDir.toString(), root.toString(), victim, link.toString(),
        allowed.resolve("../data").toString())) {
      refused(() -> provider.create(create("sbx_attacker", workdir)), "workdir");
    }
    refused(() -> new Workdirs(List.of(tmp), dataDir).resolve(tmp.toString()), "data directory");
    // with a root that holds the data directory, the data directory check alone refuses what lies in it
    Workdirs wide = new Workdirs(List.of(tmp), dataDir);
    for (String workdir : List.of(dataDir.toString(), root.toString(), victim, link.toString())) {
      refused(() -> wide.resolve(workdir), "data directory");
    }
    refused(() -> Workdirs.NONE.resolve(allowed.toString()), "not enabled");
    assertThat(Path.of(victim, "private.txt")).hasContent("victim's");
  }

  @Test
  void a_directory_inside_an_allowed_root_is_used_and_never_deleted() throws Exception {
    Path project = Files.createDirectory(allowed.resolve("project"));
    Files.writeString(project.resolve("keep.txt"), "kept\n");

    String resourceId = provider.create(create("sbx_a", project.toString()));
    assertThat(resourceId).isEqualTo(project.toRealPath().toString());
    provider.destroy(new DestroySandbox("sbx_a", resourceId));
    assertThat(project.resolve("keep.txt")).hasContent("kept");

    provider.create(create("sbx_b", project.toString()));
    LocalProvider restarted = provider();
    restarted.adopt(create("sbx_b", project.toString()), resourceId);
    restarted.destroy(new DestroySandbox("sbx_b", resourceId));
    assertThat(project.resolve("keep.txt")).as("an adopted workdir is not owned either").hasContent("kept");
    provider().destroy(new DestroySandbox("sbx_b", resourceId));
    assertThat(project.resolve("keep.txt")).hasContent("kept");
  }

  /**
   * Before the allow-list, a tenant could create a sandbox whose workdir was another sandbox's directory; its
   * record names that directory. After a restart neither adopting nor destroying it may treat it as owned.
   */
  @Test
  void destroy_after_a_restart_never_deletes_another_sandbox_s_directory() throws Exception {
    String victim = provider.create(create("sbx_victim", null));
    Files.writeString(Path.of(victim, "private.txt"), "victim's\n");

    LocalProvider restarted = provider();
    assertThatThrownBy(() -> restarted.adopt(create("sbx_attacker", null), victim))
        .isInstanceOf(ProviderException.class);
    assertThatThrownBy(() -> restarted.adopt(create("sbx_attacker", victim), victim))
        .isInstanceOf(ProviderException.class);
    restarted.destroy(new DestroySandbox("sbx_attacker", victim));
    provider().destroy(new DestroySandbox("sbx_attacker", victim));

    assertThat(Path.of(victim, "private.txt")).hasContent("victim's");
    provider().destroy(new DestroySandbox("sbx_victim", victim));
    assertThat(Path.of(victim)).as("its own sandbox's destroy still removes it").doesNotExist();
  }

  /**
   * A sandbox whose workdir holds another's could swap a directory on the other's path for a link to the data
   * directory: nested workdirs of live sandboxes are refused, and a workdir whose path changed is not used.
   */
  @Test
  void a_workdir_inside_another_live_one_is_refused_and_a_changed_one_is_not_used() throws Exception {
    Path outer = Files.createDirectory(allowed.resolve("outer"));
    Path inner = Files.createDirectory(outer.resolve("inner"));
    Path sibling = Files.createDirectory(allowed.resolve("sibling"));
    provider.create(create("sbx_outer", outer.toString()));
    assertThatThrownBy(() -> provider.create(create("sbx_inner", inner.toString())))
        .isInstanceOfSatisfying(ApiException.class, e -> assertThat(String.valueOf(e.detail())).contains("another live sandbox"));
    assertThatThrownBy(() -> provider.create(create("sbx_around", allowed.toString())))
        .isInstanceOfSatisfying(ApiException.class, e -> assertThat(String.valueOf(e.detail())).contains("another live sandbox"));
    provider.create(create("sbx_same", outer.toString())); // one directory may be shared
    provider.create(create("sbx_sibling", sibling.toString()));

    // the host (or anything that may write there) swaps the sibling's path for a link to the data directory
    Files.move(sibling, allowed.resolve("moved"));
    Files.createSymbolicLink(sibling, dataDir);
    assertThatThrownBy(() -> provider.start(new ai.bespokelabs.sandbox.core.bus.Messages.ExecSandbox("sbx_sibling",
        "exe_t", null, null, null, "cat admin-token", null, java.util.Map.of(), null, 10, 1024),
        new ai.bespokelabs.sandbox.adapters.host.CapturingSink(1024)))
        .isInstanceOfSatisfying(ApiException.class, e -> assertThat(e.status()).isEqualTo(409));
    assertThatThrownBy(() -> provider.listFiles(new ai.bespokelabs.sandbox.core.bus.Messages.FileOp("list",
        "sbx_sibling", sibling.toString(), ".", null, null, false, false)))
        .isInstanceOfSatisfying(ApiException.class, e -> assertThat(e.status()).isEqualTo(409));

    // once the outer sandbox is gone, the inner directory may be used
    provider.destroy(new DestroySandbox("sbx_outer", outer.toString()));
    provider.destroy(new DestroySandbox("sbx_same", outer.toString()));
    assertThat(provider.create(create("sbx_inner", inner.toString()))).isEqualTo(inner.toRealPath().toString());
  }
}
