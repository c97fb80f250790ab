package ai.bespokelabs.sandbox.adapters.local;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Runs a command line made only of plain words as its program, without the {@code bash -c} the seed puts in
 * front of every command line, where that gives exactly what bash would have run: bash executes the last simple
 * command of {@code -c} in place, so {@code bash -c 'ls -l /tmp'} is {@code ls} with those words, plus the
 * variables bash exports ({@code PWD}, {@code SHLVL}, {@code _}).
 *
 * <p>A line qualifies only when nothing in it means something to bash: its words are made of letters, digits and
 * {@code _ . / : @ % + , -} (and {@code =} after the first word), separated by spaces or tabs; its first word is
 * no bash builtin or keyword (bare {@code true} and {@code false} excepted, which do nothing but exit) and names a
 * program bash would find first on {@code PATH} in the system directories ({@code /usr}, {@code /bin},
 * {@code /sbin}: the same inside bubblewrap), owned by root, writable by root only, executable by anyone, and a
 * binary or a {@code #!} script. The environment must hold nothing that changes how bash starts or searches
 * ({@code BASH*}, {@code ENV}, {@code SHELLOPTS}, {@code PS4}, {@code POSIXLY_CORRECT}, {@code EXECIGNORE},
 * {@code PWD}, {@code OLDPWD}, an unusual {@code SHLVL}, a {@code PATH} entry outside those directories).
 * Anything else — a missing program (bash's own 127 and message), a program of the sandbox's — runs under bash.
 */
final class PlainCommand {
  /** Names bash resolves itself before looking at {@code PATH}: {@code compgen -b} and {@code compgen -k}. */
  static final Set<String> BASH_NAMES = Set.of(".", ":", "[", "alias", "bg", "bind", "break", "builtin", "caller",
      "cd", "command", "compgen", "complete", "compopt", "continue", "declare", "dirs", "disown", "echo", "enable",
      "eval", "exec", "exit", "export", "false", "fc", "fg", "getopts", "hash", "help", "history", "jobs", "kill",
      "let", "local", "logout", "mapfile", "popd", "printf", "pushd", "pwd", "read", "readarray", "readonly",
      "return", "set", "shift", "shopt", "source", "suspend", "test", "times", "trap", "true", "type", "typeset",
      "ulimit", "umask", "unalias", "unset", "wait", "if", "then", "else", "elif", "fi", "case", "esac", "for",
      "select", "while", "until", "do", "done", "in", "function", "time", "{", "}", "!", "[[", "]]", "coproc");

  /** Builtins whose bare form (no word after them) only exits, as their programs do. */
  private static final Set<String> BARE_EXITS = Set.of("true", "false");

  /** Variables that change what bash does before it runs the program, or how it searches. */
  private static final Set<String> SHELL_VARIABLES = Set.of("ENV", "SHELLOPTS", "PS4", "POSIXLY_CORRECT",
      "EXECIGNORE", "PWD", "OLDPWD");

  /** Directories whose files are the same for the gateway as inside a sandbox, and only root changes. */
  private static final List<String> SYSTEM_ROOTS = List.of("/usr/", "/bin/", "/sbin/");

  /** Whether a system file is a binary or a script the kernel runs (by real path), with the stat it was read at. */
  private record Checked(FileTime modified, long size, boolean runnable) {}

  private static final Map<Path, Checked> CHECKED = new ConcurrentHashMap<>();
  private static final int MAX_CHECKED = 4096;

  private PlainCommand() {}

  /** The words of {@code line} when it is made only of plain words (see the class comment), else empty. */
  static Optional<List<String>> words(String line) {
    List<String> words = new ArrayList<>();
    int i = 0;
    int n = line.length();
    while (i < n) {
      char c = line.charAt(i);
      if (c == ' ' || c == '\t') {
        i++;
        continue;
      }
      int start = i;
      while (i < n && line.charAt(i) != ' ' && line.charAt(i) != '\t') {
        if (!plain(line.charAt(i), words.isEmpty())) {
          return Optional.empty();
        }
        i++;
      }
      words.add(line.substring(start, i));
    }
    if (words.isEmpty()) {
      return Optional.empty();
    }
    String first = words.get(0);
    if (BASH_NAMES.contains(first) && !(words.size() == 1 && BARE_EXITS.contains(first))) {
      return Optional.empty();
    }
    return Optional.of(List.copyOf(words));
  }

  private static boolean plain(char c, boolean firstWord) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
        || c == '_' || c == '.' || c == '/' || c == ':' || c == '@' || c == '%' || c == '+' || c == ',' || c == '-'
        || (c == '=' && !firstWord);
  }

  /** Whether {@code env} leaves bash's start and search as a plain program start would be. */
  static boolean plainEnvironment(Map<String, String> env) {
    for (String name : env.keySet()) {
      if (name.startsWith("BASH") || SHELL_VARIABLES.contains(name)) {
        return false;
      }
    }
    String shlvl = env.get("SHLVL");
    if (shlvl != null && !(shlvl.matches("0|[1-9][0-9]{0,2}") && Integer.parseInt(shlvl) < 999)) {
      return false; // bash would rewrite it (or warn)
    }
    String path = env.get("PATH");
    if (path == null || path.isEmpty()) {
      return false;
    }
    for (String dir : path.split(":", -1)) {
      if (!underSystemRoot(dir)) {
        return false; // an empty entry (the working directory), a relative one, or one a sandbox may own
      }
    }
    return true;
  }

  private static boolean underSystemRoot(String path) {
    if (path.contains("/./") || path.contains("/../") || path.endsWith("/.") || path.endsWith("/..")
        || path.contains("//")) {
      return false;
    }
    String dir = path.endsWith("/") ? path : path + "/";
    return SYSTEM_ROOTS.stream().anyMatch(dir::startsWith);
  }

  /**
   * {@code spec} (a {@code bash -c line} built by {@link ProcessSpec#of}) as the program {@code line} names,
   * when that runs exactly what bash would (see the class comment); else {@code spec} as it is.
   *
   * @param shellFirst whether a POSIX shell starts the program after the drop (it sets {@code PWD} itself)
   */
  static ProcessSpec direct(ProcessSpec spec, String line, boolean shellFirst) {
    if (!ProcessSpec.SHELL.equals("/bin/bash") || !plainEnvironment(spec.env())) {
      return spec;
    }
    Optional<List<String>> words = words(line);
    if (words.isEmpty()) {
      return spec;
    }
    Optional<String> program = systemProgram(words.get().get(0), spec.env().get("PATH"));
    if (program.isEmpty()) {
      return spec;
    }
    Map<String, String> env = new LinkedHashMap<>(spec.env());
    if (!shellFirst) {
      try {
        env.put("PWD", spec.cwd().toRealPath().toString());
      } catch (IOException e) {
        return spec; // bash reports the missing directory its own way
      }
    }
    env.putIfAbsent("SHLVL", "0");
    env.put("_", program.get());
    return new ProcessSpec(words.get(), spec.cwd(), env, spec.timeoutSecs(), spec.outputLimitBytes(), spec.handOff());
  }

  /**
   * What bash runs for {@code name}: the first entry of {@code path} holding it (or {@code name} itself when it
   * holds a slash), when that is a root-owned system program; empty otherwise, also when bash would find
   * something else first.
   */
  static Optional<String> systemProgram(String name, String path) {
    if (name.contains("/")) {
      return name.startsWith("/") && underSystemRoot(name) && trusted(name) ? Optional.of(name) : Optional.empty();
    }
    for (String dir : path.split(":", -1)) {
      String candidate = (dir.endsWith("/") ? dir : dir + "/") + name;
      Path p;
      try {
        p = Path.of(candidate);
      } catch (InvalidPathException e) {
        return Optional.empty();
      }
      if (Files.isDirectory(p) || !Files.exists(p)) {
        continue; // bash skips both and goes on searching
      }
      return trusted(candidate) ? Optional.of(candidate) : Optional.empty();
    }
    return Optional.empty();
  }

  /** A regular file under a system root, root's alone to change, executable by anyone, the kernel runs. */
  private static boolean trusted(String candidate) {
    try {
      Path real = Path.of(candidate).toRealPath();
      if (!underSystemRoot(real.toString()) || real.getParent() == null
          || !rootOnly(Files.readAttributes(real.getParent(), "unix:uid,mode"), false)) {
        return false;
      }
      Map<String, Object> attrs = Files.readAttributes(real, "unix:uid,mode,size,lastModifiedTime,isRegularFile");
      if (!Boolean.TRUE.equals(attrs.get("isRegularFile")) || !rootOnly(attrs, true)) {
        return false;
      }
      FileTime modified = (FileTime) attrs.get("lastModifiedTime");
      long size = (Long) attrs.get("size");
      Checked known = CHECKED.get(real);
      if (known != null && known.modified().equals(modified) && known.size() == size) {
        return known.runnable();
      }
      boolean runnable = kernelRuns(real);
      if (CHECKED.size() >= MAX_CHECKED) {
        CHECKED.clear();
      }
      CHECKED.put(real, new Checked(modified, size, runnable));
      return runnable;
    } catch (IOException | InvalidPathException | UnsupportedOperationException | ClassCastException e) {
      return false;
    }
  }

  /** Owned by root, writable by nobody else, and (when {@code executable}) executable by anyone. */
  private static boolean rootOnly(Map<String, Object> attrs, boolean executable) {
    int mode = (Integer) attrs.get("mode");
    return ((Integer) attrs.get("uid")) == 0 && (mode & 0022) == 0 && (!executable || (mode & 0001) != 0);
  }

  /**
   * Whether the file starts with {@code #!} or is ELF: bash runs any other file as a bash script itself, where a
   * direct start would hand it to {@code /bin/sh}. Only root can change the file, so reading it cannot block.
   */
  private static boolean kernelRuns(Path real) throws IOException {
    byte[] head = new byte[4];
    int n;
    try (InputStream in = Files.newInputStream(real)) {
      n = in.readNBytes(head, 0, 4);
    }
    return (n >= 2 && head[0] == '#' && head[1] == '!')
        || (n == 4 && head[0] == 0x7f && head[1] == 'E' && head[2] == 'L' && head[3] == 'F');
  }
}
