package ai.bespokelabs.sandbox.gateway.http;

import ai.bespokelabs.sandbox.core.Times;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.model.Preset;
import ai.bespokelabs.sandbox.core.repo.PresetRepository;
import ai.bespokelabs.sandbox.gateway.auth.Principal;
import ai.bespokelabs.sandbox.gateway.auth.Scopes;
import io.vertx.core.Future;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.ext.web.RoutingContext;
import java.time.Clock;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * Presets: named sandbox defaults ({@code cpu}, {@code memory_mb}, {@code timeout_secs}, {@code image}) with
 * setup commands run after the workspace is in place. The seed's built-ins ({@code codex}, {@code claude-code},
 * {@code claude-code-codex}: 2 GB, 30 minutes, an npm install) plus each organization's own
 * ({@code GET/POST /v1/presets}, {@code DELETE /v1/presets/{name}}). Fields given at create win over the
 * preset's. On backends that run images, a built-in preset uses its prebuilt image and skips its setup.
 */
public final class Presets {
  /** Backends whose sandboxes run an OCI image. */
  static final Set<String> IMAGE_BACKENDS = Set.of("docker", "daytona", "modal");
  private static final Pattern NAME = Pattern.compile("[a-z0-9][a-z0-9._-]{0,62}");
  private static final int MAX_SETUP = 32;

  static final Map<String, Preset> BUILT_IN = builtIn();

  private static Map<String, Preset> builtIn() {
    Map<String, Preset> m = new LinkedHashMap<>();
    m.put("claude-code", new Preset("claude-code", "Claude Code CLI", null, 2048, 1800,
        "ghcr.io/bespokelabsai/sandbox/claude-code:v2", List.of("npm install -g @anthropic-ai/claude-code"), true));
    m.put("claude-code-codex", new Preset("claude-code-codex", "Claude Code and Codex CLIs", null, 2048, 1800,
        "ghcr.io/bespokelabsai/sandbox/claude-code-codex:v2",
        List.of("npm install -g @anthropic-ai/claude-code @openai/codex"), true));
    m.put("codex", new Preset("codex", "Codex CLI", null, 2048, 1800, "ghcr.io/bespokelabsai/sandbox/codex:v2",
        List.of("npm install -g @openai/codex"), true));
    return Map.copyOf(m);
  }

  private final PresetRepository presets;
  private final Clock clock;

  public Presets(PresetRepository presets, Clock clock) {
    this.presets = presets;
    this.clock = clock;
  }

  public void register(Api api) {
    api.authed(HttpMethod.GET, "/v1/presets", Scopes.SANDBOXES_READ, this::list);
    api.authed(HttpMethod.POST, "/v1/presets", Scopes.POLICIES_WRITE, this::create);
    api.authed(HttpMethod.DELETE, "/v1/presets/{name}", Scopes.POLICIES_WRITE, this::delete);
  }

  /** The preset {@code name} of the organization (its own, else built-in); 422 when there is none. */
  Future<Preset> resolve(String organizationId, String name) {
    Preset builtIn = BUILT_IN.get(name);
    if (builtIn != null) {
      return Future.succeededFuture(builtIn);
    }
    return presets.find(organizationId, name)
        .map(found -> found.orElseThrow(() -> ApiException.invalid("unknown preset: " + name)));
  }

  private Future<Reply> list(RoutingContext ctx, Principal p) {
    return presets.list(p.organizationId()).map(own -> {
      JsonArray out = new JsonArray();
      BUILT_IN.values().stream().sorted(java.util.Comparator.comparing(Preset::name))
          .forEach(b -> out.add(b.toJson()));
      own.forEach(o -> out.add(o.toJson()));
      return Reply.ok(out);
    });
  }

  private Future<Reply> create(RoutingContext ctx, Principal p) {
    Body body = Body.parse(Api.body(ctx));
    String name = body.string("name", true, 1, 63);
    String description = body.string("description", false, 0, 1000);
    Double cpu = body.positiveNumber("cpu");
    Integer memory = body.integer("memory_mb", 0, null);
    Integer timeout = body.integer("timeout_secs", 0, null);
    String image = body.string("image", false, 1, 1024);
    List<String> setup = body.stringList("setup_commands");
    body.check();
    List<String> unknown = body.presentFields().stream().filter(f -> !Set.of("name", "description", "cpu", "memory_mb",
        "timeout_secs", "image", "setup_commands").contains(f)).sorted().toList();
    if (!unknown.isEmpty()) {
      throw ApiException.invalid("unsupported preset field: " + String.join(", ", unknown));
    }
    if (!NAME.matcher(name).matches()) {
      throw ApiException.invalid("preset names are 1-63 characters of a-z, 0-9, '.', '_' or '-'");
    }
    if (BUILT_IN.containsKey(name)) {
      throw ApiException.conflict("preset name is built in: " + name);
    }
    List<String> commands = setup == null ? List.of() : setup;
    if (commands.size() > MAX_SETUP || commands.stream().anyMatch(c -> c.isBlank() || c.length() > 4096)) {
      throw ApiException.invalid("setup_commands holds at most " + MAX_SETUP + " non-empty commands");
    }
    Preset preset = new Preset(name, description, cpu, memory, timeout, image, commands, false);
    return presets.insert(p.organizationId(), preset, p.keyId(), Times.now(clock)).map(created -> {
      if (!created) {
        throw ApiException.conflict("preset already exists: " + name);
      }
      return Reply.of(201, preset.toJson());
    });
  }

  private Future<Reply> delete(RoutingContext ctx, Principal p) {
    String name = ctx.pathParam("name");
    if (BUILT_IN.containsKey(name)) {
      throw ApiException.conflict("built-in presets cannot be deleted");
    }
    return presets.delete(p.organizationId(), name).map(deleted -> {
      if (!deleted) {
        throw ApiException.notFound("preset not found");
      }
      return Reply.of(204, null);
    });
  }

  static Optional<Preset> builtIn(String name) {
    return Optional.ofNullable(BUILT_IN.get(name));
  }
}
