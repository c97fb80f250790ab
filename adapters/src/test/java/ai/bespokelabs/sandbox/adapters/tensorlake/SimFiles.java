package ai.bespokelabs.sandbox.adapters.tensorlake;

import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;

/** The simulator's daemon files API on a sandbox directory (absolute sandbox paths resolve under it). */
final class SimFiles {
  private SimFiles() {}

  /** A sandbox path under {@code dir}; null when it escapes. */
  static Path resolve(Path dir, String path) {
    String rel = path.startsWith("/") ? path.substring(1) : path;
    Path p = dir.resolve(rel).normalize();
    return p.startsWith(dir) ? p : null;
  }

  private static void status(HttpServerRequest req, int status) {
    req.response().setStatusCode(status).putHeader("Content-Type", "application/json")
        .end(new JsonObject().put("message", "status " + status).encode());
  }

  static void list(TensorlakeSimulator sim, HttpServerRequest req, Path dir) {
    String path = req.getParam("path");
    if (path == null) {
      sim.refuse(req, "path is required");
      return;
    }
    Path p = resolve(dir, path);
    if (p == null || !Files.exists(p)) {
      status(req, p == null ? 400 : 404);
      return;
    }
    if (!Files.isDirectory(p)) {
      status(req, 400);
      return;
    }
    JsonArray entries = new JsonArray();
    try (Stream<Path> s = Files.list(p)) {
      for (Path e : (Iterable<Path>) s::iterator) {
        boolean isDir = Files.isDirectory(e);
        JsonObject o = new JsonObject().put("name", e.getFileName().toString()).put("is_dir", isDir)
            .put("modified_at", Files.getLastModifiedTime(e).toInstant().toString());
        if (!isDir) {
          o.put("size", Files.size(e));
        }
        entries.add(o);
      }
    } catch (IOException e) {
      status(req, 500);
      return;
    }
    req.response().putHeader("Content-Type", "application/json")
        .end(new JsonObject().put("path", path).put("entries", entries).encode());
  }

  static void file(TensorlakeSimulator sim, HttpServerRequest req, Path dir, Buffer body) {
    String path = req.getParam("path");
    if (path == null) {
      sim.refuse(req, "path is required");
      return;
    }
    Path p = resolve(dir, path);
    if (p == null) {
      status(req, 400);
      return;
    }
    try {
      if (req.method() == HttpMethod.GET) {
        if (!Files.exists(p)) {
          status(req, 404);
        } else if (Files.isDirectory(p)) {
          status(req, 400);
        } else {
          req.response().putHeader("Content-Type", "application/octet-stream").end(Buffer.buffer(Files.readAllBytes(p)));
        }
      } else if (req.method() == HttpMethod.PUT) {
        if (Files.isDirectory(p)) {
          status(req, 400);
          return;
        }
        Files.createDirectories(p.getParent());
        Files.write(p, body.getBytes());
        req.response().setStatusCode(200).end();
      } else if (req.method() == HttpMethod.DELETE) {
        if (!Files.exists(p)) {
          status(req, 404);
          return;
        }
        try (Stream<Path> walk = Files.walk(p)) {
          walk.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
        }
        req.response().setStatusCode(200).end();
      } else {
        sim.refuse(req, "no such route");
      }
    } catch (IOException e) {
      status(req, 500);
    }
  }
}
