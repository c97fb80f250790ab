package ai.bespokelabs.sandbox.adapters.local;

import ai.bespokelabs.sandbox.core.error.ApiException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.List;

/**
 * Which host directories a host-process sandbox may use as its {@code workdir}: only directories inside the roots
 * the operator allowed ({@code BESPOKE_WORKDIR_ROOTS}), with symlinks resolved, and never the gateway's data
 * directory, anything in it (its secrets, its database, every sandbox's own directory) or anything containing
 * it. With no roots, {@code workdir} is refused. A workdir is never owned: destroy leaves it in place.
 */
public final class Workdirs {
  /** Refuses every workdir. */
  public static final Workdirs NONE = new Workdirs(List.of(), null);

  private final List<Path> roots;
  private final Path dataDir;
  /** The workdirs of live sandboxes (of every host backend sharing this instance). */
  private final java.util.Map<Path, Integer> live = new java.util.HashMap<>();

  /**
   * @param roots the allowed directories (absolute)
   * @param dataDir the gateway's data directory, never a workdir nor inside or around one
   */
  public Workdirs(List<Path> roots, Path dataDir) {
    this.roots = List.copyOf(roots);
    this.dataDir = dataDir;
  }

  /**
   * The real path of {@code workdir} when a sandbox may use it.
   *
   * @throws ApiException 422 saying why not
   */
  public Path resolve(String workdir) {
    if (roots.isEmpty()) {
      throw new ApiException(422, "workdir is not enabled on this gateway: the operator allows host directories "
          + "with BESPOKE_WORKDIR_ROOTS");
    }
    Path given;
    try {
      given = Path.of(workdir);
    } catch (InvalidPathException e) {
      throw notADirectory();
    }
    if (!given.isAbsolute()) {
      throw notADirectory();
    }
    // checked before the path is looked at, so a refused path's existence is never revealed
    if (!insideRoot(given.normalize(), false)) {
      throw outsideRoots();
    }
    Path real;
    try {
      real = given.toRealPath();
    } catch (IOException e) {
      throw notADirectory();
    }
    if (!Files.isDirectory(real)) {
      throw notADirectory();
    }
    if (!insideRoot(real, true)) {
      throw outsideRoots();
    }
    Path data = realOrNormal(dataDir);
    if (data != null && (real.startsWith(data) || data.startsWith(real))) {
      throw new ApiException(422, "workdir must not be the gateway's data directory, inside it or around it");
    }
    return real;
  }

  /**
   * Takes {@code real} (as {@link #resolve} gave it) for a live sandbox. Sandboxes may share one directory, but
   * none may lie inside another's: the outer one's programs could swap a directory on the inner one's path
   * for a link to anywhere.
   *
   * @throws ApiException 422 when it lies inside or around another live sandbox's workdir
   */
  public synchronized Path claim(Path real) {
    for (Path other : live.keySet()) {
      if (!other.equals(real) && (other.startsWith(real) || real.startsWith(other))) {
        throw new ApiException(422, "workdir must not lie inside or around the workdir of another live sandbox");
      }
    }
    live.merge(real, 1, Integer::sum);
    return real;
  }

  /** Gives back what {@link #claim} took. */
  public synchronized void release(Path real) {
    live.computeIfPresent(real, (k, n) -> n == 1 ? null : n - 1);
  }

  /**
   * Whether {@code workdir} still resolves to {@code real}, the directory checked when the sandbox was created:
   * a path the sandbox's neighbours or the host changed since is not used.
   */
  public boolean stillAt(String workdir, Path real) {
    try {
      return resolve(workdir).equals(real);
    } catch (ApiException e) {
      return false;
    }
  }

  /**
   * A workdir is used only while its path still leads where it led when the sandbox was created.
   *
   * @throws ApiException 409 when it changed
   */
  void requireUnchanged(SandboxRuntime runtime) {
    if (!runtime.owned && !stillAt(runtime.config.workdir(), runtime.dir)) {
      throw new ApiException(409, "the sandbox's workdir changed since it was created");
    }
  }

  /** Whether {@code dir} lies in a root: as resolved ({@code real}), else as the root is written or resolved. */
  private boolean insideRoot(Path dir, boolean real) {
    return roots.stream().anyMatch(r -> dir.startsWith(realOrNormal(r)) || !real && dir.startsWith(r.normalize()));
  }

  private static Path realOrNormal(Path p) {
    if (p == null) {
      return null;
    }
    try {
      return p.toRealPath();
    } catch (IOException e) {
      return p.toAbsolutePath().normalize();
    }
  }

  private static ApiException notADirectory() {
    return new ApiException(422, "workdir must be an existing absolute directory");
  }

  private static ApiException outsideRoots() {
    return new ApiException(422, "workdir must be inside a directory the operator allowed (BESPOKE_WORKDIR_ROOTS)");
  }
}
