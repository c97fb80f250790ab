package ai.bespokelabs.sandbox.adapters.local;

import static ai.bespokelabs.sandbox.adapters.local.Handles.enter;
import static ai.bespokelabs.sandbox.adapters.local.Handles.secure;
import static ai.bespokelabs.sandbox.adapters.local.Handles.NOFOLLOW;

import ai.bespokelabs.sandbox.adapters.files.SandboxPaths;
import ai.bespokelabs.sandbox.adapters.files.TarGz;
import ai.bespokelabs.sandbox.adapters.local.Handles.Chain;
import ai.bespokelabs.sandbox.core.error.ApiException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.SecureDirectoryStream;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;

/**
 * A sandbox directory and how the files API resolves paths in it: a path is relative to the directory, or
 * absolute as the sandbox's programs see it; {@code ..} is resolved by name and may not leave the directory.
 * Resolution opens one component at a time from a handle on the directory, never following a link.
 */
final class SandboxTree {
  /** How many levels a path may go down. */
  static final int MAX_DEPTH = TarGz.MAX_DEPTH;

  private final Path root;
  private final String inside;

  /**
   * @param root the sandbox directory
   * @param inside where programs see {@code root}; null when they see its host path
   */
  SandboxTree(Path root, String inside) {
    this.root = root.toAbsolutePath().normalize();
    this.inside = inside == null ? this.root.toString() : inside;
  }

  /** The sandbox directory's host path. */
  Path root() {
    return root;
  }

  /** The components of {@code path} below the sandbox directory (empty for the directory itself). */
  List<String> components(String path) {
    if (path == null || path.isBlank()) {
      throw SandboxPaths.required();
    }
    if (path.indexOf('\0') >= 0) {
      throw ApiException.invalid("path is not a valid path");
    }
    String rel = path;
    if (path.startsWith("/")) {
      String prefix = inside.endsWith("/") ? inside : inside + "/";
      if (path.equals(inside) || path.equals(prefix)) {
        rel = "";
      } else if (path.startsWith(prefix)) {
        rel = path.substring(prefix.length());
      } else {
        throw SandboxPaths.escapes();
      }
    }
    Deque<String> out = new ArrayDeque<>();
    for (String c : rel.split("/")) {
      if (c.isEmpty() || c.equals(".")) {
        continue;
      }
      if (c.equals("..")) {
        if (out.isEmpty()) {
          throw SandboxPaths.escapes();
        }
        out.removeLast();
      } else {
        if (c.getBytes(java.nio.charset.StandardCharsets.UTF_8).length > 255) {
          throw ApiException.invalid("path is not a valid path");
        }
        try {
          Path.of(c);
        } catch (java.nio.file.InvalidPathException e) {
          throw ApiException.invalid("path is not a valid path");
        }
        out.addLast(c);
      }
      if (out.size() > MAX_DEPTH) {
        throw SandboxPaths.tooDeep(MAX_DEPTH);
      }
    }
    return List.copyOf(out);
  }

  /** A handle on the sandbox directory itself (its own name is not followed if it became a link). */
  Chain openRoot() {
    Chain c = new Chain();
    try {
      Path real = root.toRealPath();
      try (SecureDirectoryStream<Path> parent = secure(Files.newDirectoryStream(
          real.getParent() == null ? real : real.getParent()))) {
        c.push(real.getParent() == null ? secure(Files.newDirectoryStream(real))
            : parent.newDirectoryStream(real.getFileName(), NOFOLLOW));
      }
      return c;
    } catch (NoSuchFileException e) {
      c.close();
      throw ApiException.conflict("sandbox directory is gone");
    } catch (IOException e) {
      c.close();
      throw new UncheckedIOException(e);
    } catch (RuntimeException e) {
      c.close();
      throw e;
    }
  }

  /**
   * The directories from the sandbox's down to the parent of the path's last component, or to the deepest
   * one that exists ({@link #complete} tells which).
   */
  record Walk(Chain chain, List<String> parts, int reached) implements AutoCloseable {
    boolean complete() {
      return reached == Math.max(0, parts.size() - 1);
    }

    Path name() {
      return parts.isEmpty() ? null : Path.of(parts.get(parts.size() - 1));
    }

    @Override
    public void close() {
      chain.close();
    }
  }

  Walk walk(List<String> parts, boolean missingIfFile) {
    Chain chain = openRoot();
    int reached = 0;
    try {
      for (; reached < parts.size() - 1; reached++) {
        if (enter(chain, parts.get(reached), missingIfFile) == null) {
          break;
        }
      }
      return new Walk(chain, parts, reached);
    } catch (IOException e) {
      chain.close();
      throw new UncheckedIOException(e);
    } catch (RuntimeException e) {
      chain.close();
      throw e;
    }
  }

  /** How programs see the entry at {@code parts}. */
  String shown(List<String> parts) {
    String rel = String.join("/", parts);
    return rel.isEmpty() ? inside : (inside.endsWith("/") ? inside : inside + "/") + rel;
  }
}
