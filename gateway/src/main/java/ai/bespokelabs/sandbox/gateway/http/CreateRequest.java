package ai.bespokelabs.sandbox.gateway.http;

import ai.bespokelabs.sandbox.adapters.spi.PlacementFacts.Isolation;
import ai.bespokelabs.sandbox.adapters.workspace.GitUrls;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.model.SandboxConfig;
import ai.bespokelabs.sandbox.core.model.Workspace;
import ai.bespokelabs.sandbox.gateway.placement.Placement;
import ai.bespokelabs.sandbox.gateway.routing.Backends;
import io.vertx.core.json.JsonObject;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Pattern;

/**
 * A validated {@code POST /v1/sandboxes} body: the sandbox's configuration and what to put in it (the
 * {@code git_repo} clone, then {@code files}, then the {@code workspace} entries, in that order). For
 * {@code backend: "auto"}, {@code backend} is {@link #AUTO} and {@code auto} holds what placement needs beyond the
 * configuration; for a named backend {@code auto} is null.
 */
public record CreateRequest(String backend, SandboxConfig config, Workspace workspace, Auto auto) {
  public static final String AUTO = "auto";
  static final Set<String> FIELDS = Set.of("backend", "preset", "cpu", "memory_mb", "disk_mb", "gpu", "timeout_secs",
      "image", "env_vars", "allow_internet", "app_name", "template", "snapshot_id", "workdir", "git_repo", "git_ref",
      "files", "workspace", "isolation", "max_hourly_usd", "prefer", "exclude");
  private static final List<String> AUTO_FIELDS = List.of("isolation", "max_hourly_usd", "prefer", "exclude");
  private static final int MAX_NAMES = 64;

  /** What {@code backend: "auto"} weighs beside the configuration: a minimum isolation, a price cap, orderings. */
  public record Auto(Isolation isolation, java.math.BigDecimal maxHourlyUsd, List<String> prefer, List<String> exclude) {
    public Auto {
      prefer = prefer == null ? List.of() : List.copyOf(prefer);
      exclude = exclude == null ? List.of() : List.copyOf(exclude);
    }
  }

  public CreateRequest(String backend, SandboxConfig config, Workspace workspace) {
    this(backend, config, workspace, null);
  }

  public boolean isAuto() {
    return auto != null;
  }

  /** This request on {@code chosen}, the backend placement picked. */
  public CreateRequest on(String chosen) {
    return new CreateRequest(chosen, config, workspace, auto);
  }

  /** What placement must honour for this request. */
  public Placement.Requirements requirements() {
    Auto a = auto == null ? new Auto(null, null, null, null) : auto;
    return new Placement.Requirements(config.cpu(), config.memoryMb(), config.gpu(), config.image(), config.template(),
        config.allowInternet(), config.timeoutSecs(), a.isolation(), a.maxHourlyUsd(), a.prefer(), a.exclude());
  }
  private static final int MAX_STEPS = 256;
  private static final Pattern ENV_NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,255}");
  private static final int MAX_ENV_VARS = 512;

  /** An optional string as the seed's providers read it: empty is not given. */
  private static String given(String value) {
    return value == null || value.isEmpty() ? null : value;
  }

  /** As {@link #parse(Body, Backends, boolean, boolean)}, with neither file URLs nor private git hosts allowed. */
  public static CreateRequest parse(Body body, Backends backends) {
    return parse(body, backends, false, false);
  }

  /**
   * Validates a create body. Git URLs are checked as far as possible without a DNS lookup ({@link GitUrls});
   * the node cloning them looks their host up and checks again.
   */
  public static CreateRequest parse(Body body, Backends backends, boolean gitAllowFileUrls, boolean gitAllowPrivate) {
    // the seed types these as bare strings: no length bound of pydantic's applies; an empty optional one is
    // taken as not given (as the seed's providers read it), and every one is bounded here to keep rows sane
    String backend = body.string("backend", true, 0, 64);
    SandboxConfig config = new SandboxConfig(
        given(body.string("preset", false, 0, 255)),
        body.positiveNumber("cpu"),
        body.integer("memory_mb", 0, null),
        body.integer("disk_mb", 0, null),
        given(body.string("gpu", false, 0, 255)),
        body.integer("timeout_secs", 0, null),
        given(body.string("image", false, 0, 1024)),
        body.stringMap("env_vars"),
        body.bool("allow_internet"),
        given(body.string("app_name", false, 0, 255)),
        given(body.string("template", false, 0, 255)),
        given(body.string("snapshot_id", false, 0, 1024)),
        given(body.string("workdir", false, 0, 4096)),
        given(body.string("git_repo", false, 0, 4096)),
        given(body.string("git_ref", false, 0, 255)));
    String isolation = body.string("isolation", false, 1, 32);
    java.math.BigDecimal maxHourly = body.decimal("max_hourly_usd");
    List<String> prefer = body.stringList("prefer");
    List<String> exclude = body.stringList("exclude");
    body.check();
    List<String> unknown = body.presentFields().stream().filter(f -> !FIELDS.contains(f)).sorted().toList();
    if (!unknown.isEmpty()) {
      throw ApiException.invalid("unsupported sandbox configuration: " + String.join(", ", unknown));
    }
    if (config.envVars() != null) {
      if (config.envVars().size() > MAX_ENV_VARS) {
        throw ApiException.invalid("env_vars may hold at most " + MAX_ENV_VARS + " variables");
      }
      for (Map.Entry<String, String> e : config.envVars().entrySet()) {
        if (!ENV_NAME.matcher(e.getKey()).matches()) {
          throw ApiException.invalid("env var names must match [A-Za-z_][A-Za-z0-9_]*");
        }
        if (e.getValue().indexOf('\0') >= 0) {
          throw ApiException.invalid("env var values must not contain NUL characters");
        }
      }
    }
    String name = backend.trim().toLowerCase(Locale.ROOT);
    Auto auto = null;
    if (name.equals(AUTO)) {
      Isolation level = isolation == null ? null : Isolation.of(isolation.trim().toLowerCase(Locale.ROOT))
          .orElseThrow(() -> ApiException.invalid("isolation must be one of process, namespace, container, vm"));
      auto = new Auto(level, maxHourly, names("prefer", prefer), names("exclude", exclude));
    } else {
      List<String> given = AUTO_FIELDS.stream().filter(f -> body.raw(f) != null).toList();
      if (!given.isEmpty()) {
        throw ApiException.invalid("only backend auto takes " + String.join(", ", given));
      }
      if (!backends.isEnabled(name)) {
        throw ApiException.invalid("backend is not enabled: " + name);
      }
    }
    return new CreateRequest(name, config, workspace(body, config, gitAllowFileUrls, gitAllowPrivate), auto);
  }

  /** Backend names of {@code prefer}/{@code exclude}, trimmed and lowercased; names this gateway lacks are kept. */
  private static List<String> names(String field, List<String> given) {
    if (given == null) {
      return List.of();
    }
    if (given.size() > MAX_NAMES) {
      throw ApiException.invalid(field + " may name at most " + MAX_NAMES + " backends");
    }
    List<String> out = new java.util.ArrayList<>();
    for (String g : given) {
      String n = g.trim().toLowerCase(Locale.ROOT);
      if (n.isEmpty() || n.length() > 64) {
        throw ApiException.invalid(field + " must hold backend names");
      }
      if (!out.contains(n)) {
        out.add(n);
      }
    }
    return out;
  }

  /** The steps of {@code git_repo}/{@code git_ref}, {@code files} and {@code workspace}, in that order. */
  static Workspace workspace(Body body, SandboxConfig config, boolean gitAllowFileUrls, boolean gitAllowPrivate) {
    List<Workspace.Step> steps = new java.util.ArrayList<>();
    if (config.gitRepo() != null) {
      gitUrl("git_repo", config.gitRepo(), gitAllowFileUrls, gitAllowPrivate);
      steps.add(Workspace.Step.git(config.gitRepo(), config.gitRef(), repoName(config.gitRepo())));
    } else if (config.gitRef() != null) {
      throw ApiException.invalid("git_ref needs git_repo");
    }
    Object files = body.raw("files");
    if (files != null) {
      if (!(files instanceof JsonObject map)) {
        throw ApiException.invalid("files must map paths to text or {\"content_b64\": ...}");
      }
      for (Map.Entry<String, Object> e : map) {
        steps.add(fileStep(e.getKey(), e.getValue()));
      }
    }
    Object manifest = body.raw("workspace");
    if (manifest != null) {
      if (!(manifest instanceof io.vertx.core.json.JsonArray entries)) {
        throw ApiException.invalid("workspace must be a list of entries");
      }
      for (Object o : entries) {
        if (!(o instanceof JsonObject entry)) {
          throw ApiException.invalid("workspace entries must be objects");
        }
        String type = entry.getValue("type") instanceof String t ? t : "";
        String path = entry.getValue("path") instanceof String p ? p : null;
        switch (type) {
          case "git" -> {
            String repo = entry.getValue("repo") instanceof String r ? r : null;
            if (repo == null || repo.isBlank()) {
              throw ApiException.invalid("workspace git entries need repo");
            }
            Object ref = entry.getValue("ref");
            if (ref != null && !(ref instanceof String)) {
              throw ApiException.invalid("workspace git ref must be a string");
            }
            gitUrl("workspace git repo", repo, gitAllowFileUrls, gitAllowPrivate);
            steps.add(Workspace.Step.git(repo, (String) ref, path == null ? repoName(repo) : requirePath(path)));
          }
          case "file" -> steps.add(fileStep(requirePath(path), entry));
          case "archive" -> steps.add(Workspace.Step.archive(requirePath(path), base64(entry.getValue("content_b64"),
              "workspace archive entries need content_b64 (a tar.gz)")));
          default -> throw ApiException.invalid("workspace entry type must be git, file or archive");
        }
      }
    }
    if (steps.size() > MAX_STEPS) {
      throw ApiException.invalid("at most " + MAX_STEPS + " files and workspace entries");
    }
    return new Workspace(steps, List.of());
  }

  /** Refuses (422) a git URL that carries credentials, has another scheme or names a non-public address. */
  private static void gitUrl(String field, String repo, boolean allowFileUrls, boolean allowPrivate) {
    try {
      GitUrls.check(field, repo, allowFileUrls, allowPrivate);
    } catch (GitUrls.Refused e) {
      throw ApiException.invalid(e.getMessage());
    }
  }

  private static Workspace.Step fileStep(String path, Object value) {
    requirePath(path);
    if (value instanceof String text) {
      return Workspace.Step.file(path, text.getBytes(java.nio.charset.StandardCharsets.UTF_8), false);
    }
    if (value instanceof JsonObject o) {
      Object exec = o.getValue("executable");
      if (exec != null && !(exec instanceof Boolean)) {
        throw ApiException.invalid("executable must be true or false");
      }
      byte[] content = o.containsKey("content_b64") ? base64(o.getValue("content_b64"), "content_b64 must be base64")
          : o.getValue("content") instanceof String t ? t.getBytes(java.nio.charset.StandardCharsets.UTF_8) : null;
      if (content == null) {
        throw ApiException.invalid("file entries need content or content_b64");
      }
      return Workspace.Step.file(path, content, Boolean.TRUE.equals(exec));
    }
    throw ApiException.invalid("files must map paths to text or {\"content_b64\": ...}");
  }

  private static String requirePath(String path) {
    if (path == null || path.isEmpty() || path.length() > 4096 || path.indexOf('\0') >= 0) {
      throw ApiException.invalid("workspace and files paths must be non-empty paths");
    }
    return path;
  }

  private static byte[] base64(Object value, String message) {
    if (!(value instanceof String s)) {
      throw ApiException.invalid(message);
    }
    try {
      return java.util.Base64.getDecoder().decode(s);
    } catch (IllegalArgumentException e) {
      throw ApiException.invalid(message);
    }
  }

  /** Where {@code git_repo} lands: its last path segment without {@code .git}. */
  static String repoName(String repo) {
    String r = repo.replaceAll("/+$", "");
    String last = r.substring(r.lastIndexOf('/') + 1);
    if (last.endsWith(".git")) {
      last = last.substring(0, last.length() - 4);
    }
    if (last.isEmpty() || last.equals(".") || last.equals("..")) {
      throw ApiException.invalid("git_repo must name a repository");
    }
    return last;
  }

  /** This request with a preset's defaults filled in where the request left them out, and its setup. */
  CreateRequest withPreset(ai.bespokelabs.sandbox.core.model.Preset preset) {
    SandboxConfig c = config;
    boolean prebuilt = preset.builtIn() && Presets.IMAGE_BACKENDS.contains(backend) && c.image() == null
        && c.snapshotId() == null;
    SandboxConfig merged = new SandboxConfig(c.preset(), c.cpu() != null ? c.cpu() : preset.cpu(),
        c.memoryMb() != null ? c.memoryMb() : preset.memoryMb(), c.diskMb(), c.gpu(),
        c.timeoutSecs() != null ? c.timeoutSecs() : preset.timeoutSecs(),
        c.image() != null ? c.image() : preset.image() != null && (prebuilt || !preset.builtIn()) ? preset.image()
            : null,
        c.envVars(), c.allowInternet(), c.appName(), c.template(), c.snapshotId(), c.workdir(), c.gitRepo(), c.gitRef());
    // a built-in preset's image already holds what its setup installs
    List<String> setup = prebuilt ? List.of() : preset.setup();
    return new CreateRequest(backend, merged, new Workspace(workspace.steps(), setup), auto);
  }

  /**
   * Canonical JSON of {@code {"backend": ..., **config}} (raw env values included), plus the workspace when
   * there is one, for the fingerprint.
   */
  public String fingerprintInput() {
    JsonObject all = new JsonObject(new TreeMap<>());
    all.put("backend", backend);
    config.toWireJson().forEach(e -> all.put(e.getKey(), e.getValue()));
    if (!workspace.isEmpty()) {
      all.put("workspace", workspace.toJson());
    }
    if (auto != null) {
      all.put("isolation", auto.isolation() == null ? null : auto.isolation().wire());
      all.put("max_hourly_usd", auto.maxHourlyUsd() == null ? null : auto.maxHourlyUsd().stripTrailingZeros()
          .toPlainString());
      all.put("prefer", new io.vertx.core.json.JsonArray(auto.prefer()));
      all.put("exclude", new io.vertx.core.json.JsonArray(auto.exclude()));
    }
    return all.encode();
  }
}
