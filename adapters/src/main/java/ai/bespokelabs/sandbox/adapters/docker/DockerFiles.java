package ai.bespokelabs.sandbox.adapters.docker;

import ai.bespokelabs.sandbox.adapters.host.CapturingSink;
import ai.bespokelabs.sandbox.adapters.spi.FileEntry;
import ai.bespokelabs.sandbox.adapters.files.SpooledUpload;
import ai.bespokelabs.sandbox.adapters.files.ReadableFile;
import ai.bespokelabs.sandbox.adapters.files.SandboxPaths;
import ai.bespokelabs.sandbox.adapters.files.WritableFile;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecResult;
import ai.bespokelabs.sandbox.core.bus.Messages.ExecSandbox;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.error.ErrorCode;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;

/**
 * Files of a container sandbox. Downloads stream out of the engine's archive API (a tar of one entry, read
 * as it arrives); uploads are spooled on this node into a one-entry tar and put with the archive API at
 * commit, so nothing appears in the container before the whole file arrived. Listing and deleting run a
 * small {@code sh} script in the container (images need {@code sh} and {@code stat}). Relative paths are
 * under the sandbox's working directory.
 */
final class DockerFiles {
  private static final Duration CALL = Duration.ofMinutes(10);
  private static final int MAX_LINKS = 8;
  private static final String LIST = """
      p="$1"
      [ -e "$p" ] || [ -L "$p" ] || exit 44
      if [ -d "$p" ] && [ ! -L "$p" ]; then
        cd -- "$p" || exit 45
        for f in .[!.]* ..?* *; do
          [ -e "$f" ] || [ -L "$f" ] || continue
          stat -c '%F|%s|%a|%Y|%n' -- "$f"
        done
      else
        stat -c '%F|%s|%a|%Y|%n' -- "$p"
      fi
      """;
  private static final String DELETE = """
      p="$1"
      [ -e "$p" ] || [ -L "$p" ] || exit 44
      if [ -d "$p" ] && [ ! -L "$p" ]; then
        if [ "$2" = recursive ]; then rm -rf -- "$p"; else rmdir -- "$p" 2>/dev/null || exit 46; fi
      else
        rm -f -- "$p"
      fi
      """;
  private static final String PREPARE = """
      [ -d "$1" ] && exit 45
      mkdir -p -- "$(dirname -- "$1")"
      """;

  private final DockerProvider provider;
  private final DockerEngine engine;

  DockerFiles(DockerProvider provider, DockerEngine engine) {
    this.provider = provider;
    this.engine = engine;
  }

  /** A container path: relative ones are under the working directory. */
  static String resolve(String path) {
    if (path == null || path.isBlank()) {
      throw SandboxPaths.required();
    }
    String p = path.startsWith("/") ? path : DockerProvider.WORKDIR + "/" + path;
    try {
      return Path.of(p).normalize().toString();
    } catch (java.nio.file.InvalidPathException e) {
      throw ApiException.invalid("path is not a valid path");
    }
  }

  private ExecResult script(String sandboxId, String container, String script, String... args) {
    List<String> argv = new ArrayList<>(List.of("-c", script, "sh"));
    argv.addAll(List.of(args));
    CapturingSink sink = new CapturingSink(8 << 20);
    provider.start(new ExecSandbox(sandboxId, "files", container, null, null, "sh", argv, Map.of(), "/", 120,
        8 << 20), sink);
    ExecResult r = sink.await();
    if (r.exitCode() == 44) {
      throw SandboxPaths.notFound();
    }
    return r;
  }

  List<FileEntry> list(String sandboxId, String container, String path) {
    String p = resolve(path);
    ExecResult r = script(sandboxId, container, LIST, p);
    if (r.exitCode() != 0) {
      throw engine.failure(ErrorCode.COMMAND_FAILED, "files", false,
          ai.bespokelabs.sandbox.core.error.ProviderError.Outcome.FAILED, null);
    }
    List<FileEntry> out = new ArrayList<>();
    for (String line : r.stdout().split("\n")) {
      String[] f = line.split("\\|", 5);
      if (f.length < 5) {
        continue;
      }
      String name = f[4].contains("/") ? f[4].substring(f[4].lastIndexOf('/') + 1) : f[4];
      String shown = f[4].startsWith("/") ? f[4] : (p.equals("/") ? "" : p) + "/" + f[4];
      boolean dir = f[0].equals("directory");
      out.add(new FileEntry(name, shown, dir, dir ? 0 : Long.parseLong(f[1]), Integer.parseInt(f[2], 8),
          Instant.ofEpochSecond(Long.parseLong(f[3]))));
    }
    out.sort(java.util.Comparator.comparing(FileEntry::name));
    return out;
  }

  void delete(String sandboxId, String container, String path, boolean recursive) {
    String p = resolve(path);
    if (p.equals("/") || p.equals(DockerProvider.WORKDIR)) {
      throw ApiException.invalid("path must name something inside the sandbox");
    }
    ExecResult r = script(sandboxId, container, DELETE, p, recursive ? "recursive" : "");
    if (r.exitCode() == 46) {
      throw SandboxPaths.notEmpty();
    }
    if (r.exitCode() != 0) {
      throw engine.failure(ErrorCode.COMMAND_FAILED, "files", false,
          ai.bespokelabs.sandbox.core.error.ProviderError.Outcome.FAILED, null);
    }
  }

  /** The engine's tar archive of {@code p}, streamed; 404 is not found. The caller closes its body. */
  private DockerEngine.Streamed archive(String container, String p) {
    DockerEngine.Streamed s = engine.stream("files", "/containers/" + DockerEngine.q(container) + "/archive?path="
        + DockerEngine.q(p), CALL);
    if (s.status() == 404) {
      throw SandboxPaths.notFound();
    }
    if (s.body() == null) {
      throw engine.statusFailure("files", new DockerEngine.Response(s.status(), s.error()), ErrorCode.COMMAND_FAILED);
    }
    return s;
  }

  /** The archive's first entry (null when empty); a broken archive closes the body and fails. */
  private static TarArchiveEntry firstEntry(TarArchiveInputStream tar, DockerEngine.Streamed s) {
    try {
      return tar.getNextEntry();
    } catch (IOException e) {
      s.body().close();
      throw new UncheckedIOException(e);
    }
  }

  /** Opens the file's entry in the engine's archive of it, following symbolic links. */
  ReadableFile openRead(String container, String path) {
    String p = resolve(path);
    for (int hop = 0; hop <= MAX_LINKS; hop++) {
      DockerEngine.Streamed s = archive(container, p);
      TarArchiveInputStream tar = new TarArchiveInputStream(s.body());
      TarArchiveEntry entry = firstEntry(tar, s);
      if (entry == null) {
        s.body().close();
        throw SandboxPaths.notFound();
      }
      if (entry.isSymbolicLink()) {
        String target = entry.getLinkName();
        s.body().close();
        p = Path.of(target.startsWith("/") ? target : Path.of(p).resolveSibling(target).toString()).normalize()
            .toString();
        continue;
      }
      if (entry.isDirectory()) {
        s.body().close();
        throw SandboxPaths.isDirectory();
      }
      // closing the tar stream closes the engine's body, which resets the rest of the transfer
      return ReadableFile.of(tar, entry.getSize());
    }
    throw ApiException.invalid("too many levels of symbolic links");
  }

  /**
   * The directory at {@code path} as a tar.gz of its tree: the engine's archive of it, re-packed as it
   * streams with the directory's own name removed from each entry.
   */
  ReadableFile openArchiveRead(String container, String path) {
    String p = resolve(path);
    DockerEngine.Streamed s = archive(container, p);
    TarArchiveInputStream in = new TarArchiveInputStream(s.body());
    TarArchiveEntry first = firstEntry(in, s);
    if (first == null || !first.isDirectory()) {
      s.body().close();
      throw ApiException.invalid("path is not a directory");
    }
    String prefix = first.getName().endsWith("/") ? first.getName() : first.getName() + "/";
    return ai.bespokelabs.sandbox.adapters.files.TarGz.stream("docker", tar -> {
      try {
        TarArchiveEntry e;
        while ((e = in.getNextEntry()) != null) {
          if (!e.getName().startsWith(prefix) || e.getName().length() == prefix.length()) {
            continue;
          }
          TarArchiveEntry out = e.isSymbolicLink()
              ? new TarArchiveEntry(e.getName().substring(prefix.length()), TarArchiveEntry.LF_SYMLINK)
              : new TarArchiveEntry(e.getName().substring(prefix.length()));
          out.setMode(e.getMode());
          out.setModTime(e.getModTime());
          if (e.isSymbolicLink()) {
            out.setLinkName(e.getLinkName());
            tar.putArchiveEntry(out);
          } else if (e.isDirectory()) {
            tar.putArchiveEntry(out);
          } else if (e.isFile()) {
            out.setSize(e.getSize());
            tar.putArchiveEntry(out);
            in.transferTo(tar);
          } else {
            continue;
          }
          tar.closeArchiveEntry();
        }
      } finally {
        s.body().close();
      }
    });
  }

  /**
   * Receives a tar.gz and, once whole and checked, puts it into the directory at {@code path} (created when
   * missing) with the engine's archive API, which extracts compressed archives itself.
   */
  WritableFile openArchiveWrite(String sandboxId, String container, String path) {
    String p = resolve(path);
    return ai.bespokelabs.sandbox.adapters.files.TarGz.spool((spool, entries) -> {
      ExecResult made = script(sandboxId, container, "[ -e \"$1\" ] && [ ! -d \"$1\" ] && exit 45; mkdir -p -- \"$1\"", p);
      if (made.exitCode() == 45) {
        throw ApiException.invalid("path is not a directory");
      }
      if (made.exitCode() != 0) {
        throw engine.failure(ErrorCode.COMMAND_FAILED, "files", false,
            ai.bespokelabs.sandbox.core.error.ProviderError.Outcome.FAILED, null);
      }
      DockerEngine.Response r = engine.putFile("files", "/containers/" + DockerEngine.q(container) + "/archive?path="
          + DockerEngine.q(p), "application/x-tar", spool, Files.size(spool), CALL);
      if (!r.ok()) {
        throw engine.statusFailure("files", r, ErrorCode.COMMAND_FAILED);
      }
      return new FileEntry(Path.of(p).getFileName() == null ? "" : Path.of(p).getFileName().toString(), p, true, 0,
          0755, Instant.now());
    });
  }

  /**
   * Spools the upload into a one-entry tar on this node (its header written last, once the size is
   * known) and puts it into the container at commit.
   */
  WritableFile openWrite(String sandboxId, String container, String path, boolean executable) {
    String p = resolve(path);
    if (p.equals("/")) {
      throw SandboxPaths.isDirectory();
    }
    // the tar stream the archive API takes: a 512-byte header written once the size is known, the file, padding
    return SpooledUpload.open("docker-upload-", 512, (ch, spool, size) -> {
      String name = Path.of(p).getFileName().toString();
      TarArchiveEntry entry = new TarArchiveEntry(name);
      entry.setSize(size);
      entry.setMode(executable ? 0100755 : 0100644);
      Instant now = Instant.now();
      entry.setModTime(now.toEpochMilli());
      byte[] header = new byte[512];
      entry.writeEntryHeader(header);
      ch.write(ByteBuffer.wrap(header), 0);
      long padding = (512 - size % 512) % 512;
      ch.write(ByteBuffer.allocate((int) padding + 1024), 512 + size);
      ch.close();
      ExecResult prepared = script(sandboxId, container, PREPARE, p);
      if (prepared.exitCode() == 45) {
        throw SandboxPaths.isDirectory();
      }
      if (prepared.exitCode() != 0) {
        throw engine.failure(ErrorCode.COMMAND_FAILED, "files", false,
            ai.bespokelabs.sandbox.core.error.ProviderError.Outcome.FAILED, null);
      }
      String parent = Path.of(p).getParent().toString();
      DockerEngine.Response r = engine.putFile("files", "/containers/" + DockerEngine.q(container)
          + "/archive?path=" + DockerEngine.q(parent), "application/x-tar", spool, 512 + size + padding + 1024,
          CALL);
      if (!r.ok()) {
        throw engine.statusFailure("files", r, ErrorCode.COMMAND_FAILED);
      }
      return new FileEntry(name, p, false, size, executable ? 0755 : 0644, now);
    });
  }
}
