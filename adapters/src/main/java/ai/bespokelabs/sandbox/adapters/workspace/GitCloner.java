package ai.bespokelabs.sandbox.adapters.workspace;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;

/**
 * Clones a git repository on this node, with the host's {@code git} and nothing of the gateway's identity:
 * an empty home, no system or global configuration, no prompts, and only the protocols allowed
 * ({@code https} and {@code http}; {@code file} only when the operator enables it, since it reads this
 * host's disk). The tree is then copied into the sandbox, so images need no git.
 */
public final class GitCloner {
  static final long TIMEOUT_SECS = 600;
  private static final Pattern REF = Pattern.compile("[A-Za-z0-9._/@+-]{1,255}");

  private final boolean allowFileUrls;

  public GitCloner(boolean allowFileUrls) {
    this.allowFileUrls = allowFileUrls;
  }

  /** Why a clone failed, in words safe to show the caller (never git's own output). */
  public static final class CloneFailed extends Exception {
    public CloneFailed(String message) {
      super(message, null, false, false);
    }
  }

  /** Clones {@code repo} (at {@code ref} when given: a branch, tag or commit) into the new directory {@code into}. */
  public void cloneInto(String repo, String ref, Path into) throws CloneFailed, IOException, InterruptedException {
    String protocols = allowFileUrls ? "https:http:file" : "https:http";
    String scheme = repo.contains("://") ? repo.substring(0, repo.indexOf("://")) : "";
    if (!List.of(protocols.split(":")).contains(scheme) || repo.startsWith("-")) {
      throw new CloneFailed("git_repo must be an " + (allowFileUrls ? "https, http or file" : "https or http") + " URL");
    }
    if (ref != null && (!REF.matcher(ref).matches() || ref.startsWith("-"))) {
      throw new CloneFailed("git_ref is not a valid branch, tag or commit name");
    }
    Path home = Files.createTempDirectory("git-home-");
    try {
      if (run(home, List.of("git", "clone", "--quiet", "--", repo, into.toString())) != 0) {
        throw new CloneFailed("git clone of git_repo failed");
      }
      if (ref != null && run(home, List.of("git", "-C", into.toString(), "-c", "advice.detachedHead=false",
          "checkout", "--quiet", ref, "--")) != 0) {
        throw new CloneFailed("git_ref was not found in git_repo");
      }
    } finally {
      deleteTree(home);
    }
  }

  private int run(Path home, List<String> argv) throws IOException, InterruptedException {
    ProcessBuilder pb = new ProcessBuilder(argv).redirectErrorStream(true)
        .redirectOutput(ProcessBuilder.Redirect.DISCARD);
    Map<String, String> env = pb.environment();
    env.clear();
    env.put("PATH", "/usr/local/bin:/usr/bin:/bin");
    env.put("HOME", home.toString());
    env.put("GIT_CONFIG_NOSYSTEM", "1");
    env.put("GIT_CONFIG_GLOBAL", "/dev/null");
    env.put("GIT_TERMINAL_PROMPT", "0");
    env.put("GIT_ALLOW_PROTOCOL", allowFileUrls ? "https:http:file" : "https:http");
    env.put("LANG", "C.UTF-8");
    Process p = pb.start();
    if (!p.waitFor(TIMEOUT_SECS, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      return -1;
    }
    return p.exitValue();
  }

  static void deleteTree(Path dir) throws IOException {
    if (!Files.exists(dir)) {
      return;
    }
    try (var walk = Files.walk(dir)) {
      List<Path> all = new ArrayList<>(walk.toList());
      java.util.Collections.reverse(all);
      for (Path p : all) {
        Files.deleteIfExists(p);
      }
    }
  }

}
