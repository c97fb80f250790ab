package ai.bespokelabs.sandbox.core.model;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.List;

/**
 * What a new sandbox is populated with before it is handed out: {@link Step}s applied in order (later ones
 * overlay earlier ones), then setup commands run in order. Travels to the adapter with the create; never
 * stored (file contents may be large or secret).
 */
public record Workspace(List<Step> steps, List<String> setup) {
  public static final Workspace EMPTY = new Workspace(List.of(), List.of());

  /** {@code git}: clone {@code repo} at {@code ref} into {@code path}; {@code file}: write {@code content};
   * {@code archive}: extract the tar.gz {@code content} into the directory {@code path}. */
  public record Step(String kind, String path, byte[] content, boolean executable, String repo, String ref) {
    public static Step file(String path, byte[] content, boolean executable) {
      return new Step("file", path, content, executable, null, null);
    }

    public static Step git(String repo, String ref, String path) {
      return new Step("git", path, null, false, repo, ref);
    }

    public static Step archive(String path, byte[] content) {
      return new Step("archive", path, content, false, null, null);
    }

    JsonObject toJson() {
      return new JsonObject().put("kind", kind).put("path", path).put("content", content)
          .put("executable", executable).put("repo", repo).put("ref", ref);
    }
  }

  public Workspace {
    steps = List.copyOf(steps);
    setup = List.copyOf(setup);
  }

  public boolean isEmpty() {
    return steps.isEmpty() && setup.isEmpty();
  }

  /** The request's workspace as JSON: part of the create's fingerprint. */
  public JsonObject toJson() {
    JsonArray s = new JsonArray();
    steps.forEach(step -> s.add(step.toJson()));
    return new JsonObject().put("steps", s).put("setup", new JsonArray(setup));
  }
}
