package ai.bespokelabs.sandbox.adapters.files;

import io.vertx.core.json.JsonObject;
import java.time.Instant;

/** A file or directory inside a sandbox, as the files API shows it. */
public record FileEntry(String name, String path, boolean isDir, long size, int mode, Instant modified) {
  public JsonObject toJson() {
    return new JsonObject().put("name", name).put("path", path).put("is_dir", isDir).put("size", size)
        .put("mode", String.format("%04o", mode & 07777))
        .put("modified", modified == null ? null : modified.toString());
  }
}
