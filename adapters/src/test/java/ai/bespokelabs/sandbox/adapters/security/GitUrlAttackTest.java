package ai.bespokelabs.sandbox.adapters.security;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.bespokelabs.sandbox.adapters.workspace.DumbGitServer;
import ai.bespokelabs.sandbox.adapters.workspace.GitCloner;
import ai.bespokelabs.sandbox.adapters.workspace.GitUrls;
import java.net.InetAddress;
import java.net.URI;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A tenant's {@code git_repo} carrying a token ({@code https://user:token@host/...}) was stored and shown to every
 * reader; one on 127.0.0.1 made the gateway fetch from a loopback service. Credentials, other schemes and
 * non-public destinations are refused (after DNS too), and git is pinned to the checked addresses so a second
 * lookup cannot move it (DNS rebinding).
 */
@Tag("security")
class GitUrlAttackTest {
  @TempDir
  Path tmp;

  DumbGitServer server;
  int port;

  /** A repository served over git's dumb HTTP protocol on loopback, counting the requests it gets. */
  @BeforeEach
  void serve() throws Exception {
    server = new DumbGitServer(tmp);
    port = server.port();
  }

  @AfterEach
  void stop() {
    server.close();
  }

  static String refusal(String url) {
    try {
      GitUrls.check("git_repo", url, false, false);
    } catch (GitUrls.Refused e) {
      return e.getMessage();
    }
    throw new AssertionError("accepted: " + url);
  }

  @Test
  void credentials_are_refused_without_repeating_them() {
    for (String url : List.of("https://alice:ghp_s3cretT0ken@github.com/org/repo.git",
        "https://ghp_s3cretT0ken@github.com/org/repo.git", "http://alice:ghp_s3cretT0ken@example.com/r.git")) {
      assertThat(refusal(url)).contains("credentials").doesNotContain("ghp_s3cretT0ken").doesNotContain("alice");
    }
  }

  @Test
  void other_schemes_and_odd_hosts_are_refused() {
    for (String url : List.of("file:///etc", "ext::sh -c id", "ssh://git@github.com/x.git", "git://example.com/x",
        "-uhttps://example.com/x", "https://example.com\\@127.0.0.1/x", "https:///x", "https://exa mple.com/x",
        "https://example.com/x#@127.0.0.1", "github.com:org/repo.git")) {
      assertThat(refusal(url)).as(url).startsWith("git_repo must");
    }
  }

  @Test
  void loopback_link_local_private_and_other_internal_addresses_are_refused() {
    for (String url : List.of("http://127.0.0.1:" + port + "/project.git", "http://169.254.169.254/latest/meta-data",
        "https://10.1.2.3/r.git", "https://172.16.0.1/r.git", "https://192.168.1.1/r.git", "https://100.64.0.1/r.git",
        "https://0.0.0.0/r.git", "https://[::1]/r.git", "https://[::ffff:127.0.0.1]/r.git", "https://[fd00::1]/r.git",
        "https://[fe80::1]/r.git", "https://[64:ff9b::a9fe:a9fe]/r.git", "https://224.0.0.1/r.git",
        "https://localhost/r.git", "https://git.localhost/r.git", "https://2130706433/r.git", "https://0x7f.1/r.git",
        "https://127.1/r.git")) {
      assertThat(refusal(url)).as(url).contains("git_repo must");
    }
    assertThat(server.requests()).isZero();
  }

  @Test
  void public_urls_pass_and_names_are_checked_once_resolved() throws Exception {
    URI uri = GitUrls.check("git_repo", "https://github.com/psf/requests", false, false);
    InetAddress github = InetAddress.getByAddress("github.com", new byte[] {(byte) 140, 82, 112, 3});
    assertThat(GitUrls.destinations("git_repo", uri, false, h -> new InetAddress[] {github})).containsExactly(github);
    InetAddress metadata = InetAddress.getByAddress("github.com", new byte[] {(byte) 169, (byte) 254, (byte) 169,
        (byte) 254});
    assertThatThrownBy(() -> GitUrls.destinations("git_repo", uri, false, h -> new InetAddress[] {github, metadata}))
        .hasMessageContaining("public host");
    assertThat(GitUrls.check("git_repo", "http://127.0.0.1:" + port + "/project.git", false, true)).isNotNull();
  }

  @Test
  void the_cloner_refuses_a_name_resolving_to_loopback_and_fetches_nothing() throws Exception {
    GitCloner cloner = new GitCloner(false, false, h -> new InetAddress[] {InetAddress.getLoopbackAddress()});
    assertThatThrownBy(() -> cloner.cloneInto("http://git.example.test:" + port + "/project.git", null,
        tmp.resolve("clone"))).isInstanceOfSatisfying(GitCloner.CloneFailed.class,
            e -> assertThat(e.code()).isEqualTo("git_destination_refused"));
    assertThat(tmp.resolve("clone")).doesNotExist();
    assertThat(server.requests()).isZero();
  }

  /**
   * With private destinations allowed, git connects to the address the gateway checked, not to what a lookup
   * of its own would give: {@code git.example.test} has no DNS entry, so only the pinned address can work.
   */
  @Test
  void git_is_pinned_to_the_checked_address() throws Exception {
    GitCloner cloner = new GitCloner(false, true, h -> new InetAddress[] {InetAddress.getLoopbackAddress()});
    cloner.cloneInto("http://git.example.test:" + port + "/project.git", null, tmp.resolve("clone"));
    assertThat(tmp.resolve("clone/README")).hasContent("internal");
    assertThat(server.requests()).isPositive();
  }

  /** git before 2.37 ignores http.curloptResolve without a word: it is refused rather than left unpinned. */
  @Test
  void only_a_git_that_honours_the_pin_is_trusted_with_a_host_name() {
    assertThat(GitCloner.pins("git version 2.39.5")).isTrue();
    assertThat(GitCloner.pins("git version 2.37.0")).isTrue();
    assertThat(GitCloner.pins("git version 3.0.1")).isTrue();
    assertThat(GitCloner.pins("git version 2.36.6")).isFalse();
    assertThat(GitCloner.pins("git version 1.9.9")).isFalse();
    assertThat(GitCloner.pins("")).isFalse();
  }
}
