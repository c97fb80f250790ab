package ai.bespokelabs.sandbox.cli;

import ai.bespokelabs.sandbox.client.Json;
import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Where the gateway's URL and key come from: BESPOKE_URL and BESPOKE_API_KEY when set, else the file
 * {@code sandbox login} wrote ({@code $XDG_CONFIG_HOME/bespoke-sandbox/config.json}, by default under
 * {@code ~/.config}), readable by its owner only.
 */
final class Settings {
  private Settings() {
  }

  record Login(String url, String apiKey) {
  }

  static Path file(Map<String, String> env) {
    String xdg = env.get("XDG_CONFIG_HOME");
    Path base = xdg != null && !xdg.isBlank() ? Path.of(xdg)
        : Path.of(env.getOrDefault("HOME", System.getProperty("user.home")), ".config");
    return base.resolve("bespoke-sandbox").resolve("config.json");
  }

  static Login resolve(Map<String, String> env) {
    String url = env.get("BESPOKE_URL");
    String key = env.get("BESPOKE_API_KEY");
    Path file = file(env);
    if ((url == null || key == null) && Files.isRegularFile(file)) {
      try {
        JsonNode stored = Json.MAPPER.readTree(file.toFile());
        url = url != null ? url : stored.path("url").asText(null);
        key = key != null ? key : stored.path("api_key").asText(null);
      } catch (IOException e) {
        throw new UncheckedIOException("cannot read " + file + ": " + e.getMessage(), e);
      }
    }
    if (url == null || key == null) {
      throw new CliException("not logged in: run `sandbox login` or set BESPOKE_URL and BESPOKE_API_KEY");
    }
    return new Login(url, key);
  }

  /** Stores the login in a file only its owner can read (written whole, then moved into place). */
  static Path store(Map<String, String> env, Login login) throws IOException {
    Path file = file(env);
    Files.createDirectories(file.getParent(), PosixFilePermissions.asFileAttribute(
        PosixFilePermissions.fromString("rwx------")));
    Path tmp = Files.createTempFile(file.getParent(), ".config", ".tmp",
        PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
    try {
      Map<String, String> body = new LinkedHashMap<>();
      body.put("url", login.url());
      body.put("api_key", login.apiKey());
      Files.write(tmp, Json.MAPPER.writerWithDefaultPrettyPrinter().writeValueAsBytes(body));
      Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    } finally {
      Files.deleteIfExists(tmp);
    }
    return file;
  }
}
