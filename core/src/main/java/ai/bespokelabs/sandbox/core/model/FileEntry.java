package ai.bespokelabs.sandbox.core.model;

import io.vertx.core.json.JsonObject;
import java.time.Instant;

/**
 * A file, directory, symbolic link or other entry inside a sandbox, as the files API shows it. {@code type}
 * is {@code file}, {@code directory}, {@code symlink} or {@code other} (a FIFO, socket or device); a link
 * is described itself, never the entry it points to.
 */
public record FileEntry(String name, String path, boolean isDir, long size, int mode, Instant modified, String type) {
  public static final String FILE = "file";
  public static final String DIRECTORY = "directory";
  public static final String SYMLINK = "symlink";
  public static final String OTHER = "other";

  /** A file or a directory (backends that report nothing else). */
  public FileEntry(String name, String path, boolean isDir, long size, int mode, Instant modified) {
    this(name, path, isDir, size, mode, modified, isDir ? DIRECTORY : FILE);
  }

  public JsonObject toJson() {
    return new JsonObject().put("name", name).put("path", path).put("is_dir", isDir).put("type", type)
        .put("size", size).put("mode", String.format("%04o", mode & 07777))
        .put("modified", modified == null ? null : modified.toString());
  }
}
