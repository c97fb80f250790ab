package ai.bespokelabs.sandbox.adapters.docker;

import ai.bespokelabs.sandbox.core.config.ConfigException;
import ai.bespokelabs.sandbox.core.error.ApiException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.regex.Pattern;

/**
 * Image references as sandboxes may give them: names only ({@code repo[:tag]}, {@code repo@sha256:<digest>},
 * with an optional registry), never an image id or a prefix of one. An engine looks a bare {@code e} up as a
 * name and then as an id prefix, so every name is sent fully qualified, the way Docker reads it
 * ({@code python} is {@code docker.io/library/python:latest}): a qualified name is never taken for an id.
 * The repository of snapshots ({@value #SNAPSHOTS}) is never a name a sandbox may give; snapshots are reached
 * through {@code snapshot_id} only.
 *
 * <p>An operator may restrict names with glob patterns ({@code BESPOKE_DOCKER_IMAGES}): {@code *} is any run
 * of characters, {@code ?} one. A pattern is qualified as a name is ({@code python:*} is
 * {@code docker.io/library/python:*}, {@code python} is {@code docker.io/library/python:latest}) and matched
 * against the whole qualified name; one that starts with {@code *} is taken as it is.
 */
final class ImageNames {
  /** The repository snapshots are committed to (below the engine's local registry). */
  static final String SNAPSHOTS = "bespoke-snapshots";

  private static final String COMPONENT = "[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*";
  private static final Pattern PATH = Pattern.compile(COMPONENT + "(?:/" + COMPONENT + ")*");
  private static final Pattern DOMAIN = Pattern.compile(
      "(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])(?:\\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))*"
          + "(?::[0-9]{1,5})?");
  private static final Pattern TAG = Pattern.compile("[\\w][\\w.-]{0,127}");
  private static final Pattern DIGEST = Pattern.compile("sha256:[a-f0-9]{64}");
  private static final Pattern ID = Pattern.compile("(?:sha256:)?[a-f0-9]{64}");
  private static final Pattern PATTERN_TEXT = Pattern.compile("[A-Za-z0-9._/:@*?-]+");
  private static final int MAX_NAME = 255;

  private final List<Pattern> allowed;

  private ImageNames(List<Pattern> allowed) {
    this.allowed = allowed;
  }

  /** Any name. */
  static final ImageNames ANY = new ImageNames(List.of());

  /**
   * The names {@code patterns} allow: comma-separated globs; blank allows any name.
   *
   * @throws ConfigException naming {@code setting} when a pattern could match no image name
   */
  static ImageNames allowing(String patterns, String setting) {
    if (patterns == null || patterns.isBlank()) {
      return ANY;
    }
    List<Pattern> out = new ArrayList<>();
    for (String part : patterns.split(",")) {
      String glob = part.trim();
      if (glob.isEmpty()) {
        continue;
      }
      if (!PATTERN_TEXT.matcher(glob).matches()) {
        throw new ConfigException(setting + " must list image name patterns separated by commas (letters, digits,"
            + " . _ - / : @ and the wildcards * ?): " + glob);
      }
      out.add(glob(qualifiedPattern(glob)));
    }
    if (out.isEmpty()) {
      throw new ConfigException(setting + " must list image name patterns separated by commas");
    }
    return new ImageNames(List.copyOf(out));
  }

  private static String qualifiedPattern(String glob) {
    if (glob.startsWith("*")) {
      return glob;
    }
    String out = glob;
    int slash = glob.indexOf('/');
    String head = slash < 0 ? "" : glob.substring(0, slash);
    if (slash < 0) {
      out = "docker.io/library/" + glob;
    } else if (head.equals("index.docker.io")) {
      out = "docker.io" + glob.substring(slash);
    } else if (!head.contains(".") && !head.contains(":") && !head.equals("localhost")) {
      out = "docker.io/" + glob;
    }
    int last = out.lastIndexOf('/');
    if (out.indexOf(':', last) < 0 && out.indexOf('@') < 0 && !out.endsWith("*")) {
      out += ":latest";
    }
    return out;
  }

  private static Pattern glob(String glob) {
    StringBuilder re = new StringBuilder();
    for (char c : glob.toCharArray()) {
      switch (c) {
        case '*' -> re.append(".*");
        case '?' -> re.append('.');
        default -> re.append(Pattern.quote(String.valueOf(c)));
      }
    }
    return Pattern.compile(re.toString());
  }

  /** Whether an operator's patterns allow the qualified {@code name}. */
  boolean allows(String name) {
    return allowed.isEmpty() || allowed.stream().anyMatch(p -> p.matcher(name).matches());
  }

  /**
   * The fully qualified form of an image name: registry, repository path, and a tag ({@code latest} when it
   * has neither tag nor digest).
   *
   * @throws ApiException 422 when {@code image} is no image name: an id, a prefix of one only when it is no
   *     name as well (every other string is qualified, so never taken for one), or the snapshots' repository
   */
  static String qualified(String image) {
    String name = image.trim();
    if (ID.matcher(name).matches()) {
      throw new ApiException(422, "image must be an image name (repository[:tag] or repository@sha256:digest),"
          + " not an image id");
    }
    String digest = null;
    int at = name.indexOf('@');
    if (at >= 0) {
      digest = name.substring(at + 1);
      name = name.substring(0, at);
      if (!DIGEST.matcher(digest).matches()) {
        throw invalid();
      }
    }
    String tag = null;
    int slash = name.lastIndexOf('/');
    int colon = name.lastIndexOf(':');
    if (colon > slash) {
      tag = name.substring(colon + 1);
      name = name.substring(0, colon);
      if (!TAG.matcher(tag).matches()) {
        throw invalid();
      }
    }
    String domain = "docker.io";
    int first = name.indexOf('/');
    if (first > 0) {
      String head = name.substring(0, first);
      if (head.contains(".") || head.contains(":") || head.equals("localhost") || !head.equals(head.toLowerCase(Locale.ROOT))) {
        if (!DOMAIN.matcher(head).matches()) {
          throw invalid();
        }
        domain = head.equals("index.docker.io") ? "docker.io" : head;
        name = name.substring(first + 1);
      }
    }
    if (!PATH.matcher(name).matches()) {
      throw invalid();
    }
    if (domain.equals("docker.io") && name.indexOf('/') < 0) {
      name = "library/" + name;
    }
    if (name.equals(SNAPSHOTS) || name.startsWith(SNAPSHOTS + "/")) {
      throw invalid();
    }
    String out = domain + "/" + name;
    if (out.length() > MAX_NAME) {
      throw invalid();
    }
    if (tag != null || digest == null) {
      out += ":" + (tag == null ? "latest" : tag);
    }
    return digest == null ? out : out + "@" + digest;
  }

  private static ApiException invalid() {
    return new ApiException(422, "image is not a valid image reference");
  }
}
