package ai.bespokelabs.sandbox.adapters.workspace;

import java.io.IOException;
import java.net.InetAddress;
import java.net.URI;
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
 * host's disk). The URL must pass {@link GitUrls}: its host is looked up here, every address must be public
 * (unless the operator allows private ones), and git is pinned to those addresses
 * ({@code http.curloptResolve}) and follows no redirects, so a second lookup or a redirect cannot send it to
 * a loopback or internal service. The tree is then copied into the sandbox, so images need no git.
 */
public final class GitCloner {
  static final long TIMEOUT_SECS = 600;
  private static final Pattern REF = Pattern.compile("[A-Za-z0-9._/@+-]{1,255}");

  private final boolean allowFileUrls;
  private final boolean allowPrivate;
  private final GitUrls.Resolver resolver;

  public GitCloner(boolean allowFileUrls) {
    this(allowFileUrls, false);
  }

  /** A cloner that also reaches private destinations when {@code allowPrivate}. */
  public GitCloner(boolean allowFileUrls, boolean allowPrivate) {
    this(allowFileUrls, allowPrivate, InetAddress::getAllByName);
  }

  /** As {@link #GitCloner(boolean, boolean)}, looking host names up with {@code resolver}. */
  public GitCloner(boolean allowFileUrls, boolean allowPrivate, GitUrls.Resolver resolver) {
    this.allowFileUrls = allowFileUrls;
    this.allowPrivate = allowPrivate;
    this.resolver = resolver;
  }

  /** Why a clone failed, in words safe to show the caller (never git's own output). */
  public static final class CloneFailed extends Exception {
    private final String code;

    public CloneFailed(String message) {
      this(message, message.contains("git_ref") ? "git_ref_not_found" : "git_clone_failed");
    }

    /** A failure reported with {@code code} as the workspace step's {@code provider_code}. */
    public CloneFailed(String message, String code) {
      super(message, null, false, false);
      this.code = code;
    }

    public String code() {
      return code;
    }
  }

  /** Whether this host's git honours {@code http.curloptResolve} (git 2.37 and later); asked once. */
  private static final java.util.function.Supplier<Boolean> PINS = new java.util.function.Supplier<>() {
    private volatile Boolean known;

    @Override
    public Boolean get() {
      if (known == null) {
        known = pins(version());
      }
      return known;
    }
  };

  /** Whether {@code git --version} output names git 2.37 or later. */
  public static boolean pins(String versionLine) {
    java.util.regex.Matcher m = Pattern.compile("git version (\\d+)\\.(\\d+)").matcher(versionLine);
    if (!m.find()) {
      return false;
    }
    int major = Integer.parseInt(m.group(1));
    int minor = Integer.parseInt(m.group(2));
    return major > 2 || major == 2 && minor >= 37;
  }

  private static String version() {
    try {
      Process p = new ProcessBuilder("git", "--version").redirectErrorStream(true).start();
      String out = new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
      return p.waitFor(10, TimeUnit.SECONDS) ? out : "";
    } catch (IOException e) {
      return "";
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return "";
    }
  }

  /** Clones {@code repo} (at {@code ref} when given: a branch, tag or commit) into the new directory {@code into}. */
  public void cloneInto(String repo, String ref, Path into) throws CloneFailed, IOException, InterruptedException {
    List<String> clone = new ArrayList<>(List.of("git", "-c", "http.followRedirects=false"));
    try {
      URI uri = GitUrls.check("git_repo", repo, allowFileUrls, allowPrivate);
      if (!"file".equalsIgnoreCase(uri.getScheme())) {
        InetAddress[] addresses = GitUrls.destinations("git_repo", uri, allowPrivate, resolver);
        if (!GitUrls.hostIsAddress(uri)) {
          if (!allowPrivate && !PINS.get()) {
            // an older git ignores the pin without a word: a second lookup could send it anywhere
            throw new CloneFailed("git on this host is older than 2.37 and cannot be held to the checked addresses",
                "git_destination_refused");
          }
          // git (curl) connects to exactly these addresses instead of looking the name up again
          int port = uri.getPort() != -1 ? uri.getPort() : "https".equalsIgnoreCase(uri.getScheme()) ? 443 : 80;
          StringBuilder pin = new StringBuilder(uri.getHost()).append(':').append(port).append(':');
          for (int i = 0; i < addresses.length; i++) {
            String a = addresses[i].getHostAddress();
            pin.append(i == 0 ? "" : ",").append(a.contains(":") ? "[" + a + "]" : a);
          }
          clone.addAll(List.of("-c", "http.curloptResolve=" + pin));
        }
      }
    } catch (GitUrls.Refused e) {
      throw e.destination() ? new CloneFailed(e.getMessage(), "git_destination_refused")
          : new CloneFailed(e.getMessage());
    }
    if (ref != null && (!REF.matcher(ref).matches() || ref.startsWith("-"))) {
      throw new CloneFailed("git_ref is not a valid branch, tag or commit name");
    }
    clone.addAll(List.of("clone", "--quiet", "--", repo, into.toString()));
    Path home = Files.createTempDirectory("git-home-");
    try {
      if (run(home, clone) != 0) {
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
