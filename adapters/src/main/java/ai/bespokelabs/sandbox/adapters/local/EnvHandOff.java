package ai.bespokelabs.sandbox.adapters.local;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.regex.Pattern;

/**
 * Hands a program its environment without putting a value on any command line or in the environment of
 * a helper that runs before privileges are dropped ({@code LD_PRELOAD} and the like must reach the tenant's
 * program only). The variables go into a file of the gateway's private run directory, which the program
 * is started with open as descriptor 3 (a native spawn opens it, and the gateway removes its name at once;
 * otherwise a shell of the gateway's own user opens it and removes the name, {@link #OPEN}); after the drop,
 * a shell reads it as {@code export} statements and runs the program ({@link #LOAD_FD}, or {@link #LOAD_FILE}
 * where bubblewrap has copied it into the sandbox).
 */
public final class EnvHandOff {
  /** Opens {@code $1} as descriptor 3, removes its name, runs the rest of the arguments. */
  public static final String OPEN = "exec 3<\"$1\" || exit 126; rm -f -- \"$1\"; shift; exec \"$@\"";
  /** Reads the environment from descriptor 3 (as the sandbox's user), closes it, runs the program. */
  public static final String LOAD_FD = "unset OLDPWD; . /proc/self/fd/3 && exec 3<&- && exec \"$@\"";
  /** Where {@link #LOAD_FILE} finds the environment inside a bubblewrap sandbox. */
  public static final String INSIDE_FILE = "/.sandbox-env";
  /** Enters the working directory {@code $1}, reads the environment, runs the program. */
  public static final String LOAD_FILE = "cd -- \"$1\" && unset OLDPWD && . " + INSIDE_FILE
      + " && shift && exec \"$@\"";

  private static final Pattern NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*");
  private static final String SH = "/bin/sh";

  private EnvHandOff() {
  }

  /** {@code /bin/sh -c OPEN sh <file>}: what runs first, as the gateway's user, with only {@code PATH} set. */
  public static List<String> open(Path file) {
    return List.of(SH, "-c", OPEN, "sh", file.toString());
  }

  /** {@code /bin/sh -c LOAD_FD sh argv…}. */
  public static List<String> loadFd(List<String> argv) {
    List<String> out = new ArrayList<>(List.of(SH, "-c", LOAD_FD, "sh"));
    out.addAll(argv);
    return out;
  }

  /** {@code /bin/sh -c LOAD_FILE sh cwd argv…}. */
  public static List<String> loadFile(String cwd, List<String> argv) {
    List<String> out = new ArrayList<>(List.of(SH, "-c", LOAD_FILE, "sh", cwd));
    out.addAll(argv);
    return out;
  }

  /** The environment as {@code export NAME='value'} lines a POSIX shell reads back exactly. */
  static String script(Map<String, String> env) {
    StringBuilder b = new StringBuilder();
    for (Map.Entry<String, String> e : env.entrySet()) {
      if (!NAME.matcher(e.getKey()).matches() || e.getValue().indexOf('\0') >= 0) {
        throw new IllegalArgumentException("not a valid environment variable: " + e.getKey());
      }
      b.append("export ").append(e.getKey()).append("='").append(e.getValue().replace("'", "'\\''")).append("'\n");
    }
    return b.toString();
  }

  /**
   * Writes {@code env} to a new file of {@code runDir} (created 0700), readable only by {@code owner} (the
   * uid that reads it back through its descriptor), or by the gateway's user when {@code owner} is negative.
   */
  public static Path write(Path runDir, Map<String, String> env, int owner) {
    try {
      if (!Files.isDirectory(runDir)) {
        Files.createDirectories(runDir);
      }
      Files.setPosixFilePermissions(runDir, PosixFilePermissions.fromString("rwx------"));
      Path file = runDir.resolve(UUID.randomUUID() + ".env");
      try (var ch = Files.newByteChannel(file, java.util.Set.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE),
          PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")))) {
        java.nio.ByteBuffer buf = java.nio.ByteBuffer.wrap(script(env).getBytes(StandardCharsets.UTF_8));
        while (buf.hasRemaining()) {
          ch.write(buf);
        }
      }
      Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("r--------"));
      if (owner >= 0) {
        Files.setAttribute(file, "unix:uid", owner);
        Files.setAttribute(file, "unix:gid", owner);
      }
      return file;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot hand the environment to a program", e);
    }
  }

  /** Removes what a start that failed before its shell ran left behind. */
  static void discard(Path file) {
    try {
      Files.deleteIfExists(file);
    } catch (IOException ignored) {
      // the run directory is emptied at the next start
    }
  }

  /** Empties the run directory: nothing in it belongs to a program that is still starting. */
  static void clear(Path runDir) {
    if (!Files.isDirectory(runDir)) {
      return;
    }
    try (var files = Files.newDirectoryStream(runDir, "*.env")) {
      for (Path f : files) {
        discard(f);
      }
    } catch (IOException ignored) {
      // best effort
    }
  }
}
