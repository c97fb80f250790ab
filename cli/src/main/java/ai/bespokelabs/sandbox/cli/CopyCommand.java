package ai.bespokelabs.sandbox.cli;

import ai.bespokelabs.sandbox.client.FileEntry;
import ai.bespokelabs.sandbox.client.SandboxClient;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

/**
 * {@code sandbox cp SRC DST}: one side is {@code ID:PATH} in a sandbox, the other a local path. A file is
 * copied as a file; a directory as a directory (its contents become DST), moved as one tar.gz. Transfers
 * stream (neither side holds a whole file), with a progress line on stderr past 1 MiB.
 */
@Command(name = "cp", description = {"Copy a file or directory into or out of a sandbox.",
    "  sandbox cp ./data.csv sbx_…:work/data.csv      sandbox cp sbx_…:out ./out   (directories too)"})
final class CopyCommand implements Callable<Integer> {
  private static final Pattern REMOTE = Pattern.compile("^(sbx_[A-Za-z0-9]+):(.+)$");

  private final Context ctx;

  @Parameters(index = "0", paramLabel = "SRC", description = "A local path, or ID:PATH in a sandbox.")
  String src;
  @Parameters(index = "1", paramLabel = "DST", description = "ID:PATH in a sandbox, or a local path.")
  String dst;

  CopyCommand(Context ctx) {
    this.ctx = ctx;
  }

  @Override
  public Integer call() throws IOException {
    Matcher from = REMOTE.matcher(src);
    Matcher to = REMOTE.matcher(dst);
    if (from.matches() == to.matches()) {
      throw new CliException("exactly one of SRC and DST must be ID:PATH in a sandbox");
    }
    SandboxClient client = ctx.client();
    long bytes;
    String kind;
    if (to.matches()) {
      Path local = Path.of(src);
      if (Files.isDirectory(local)) {
        kind = "directory";
        bytes = uploadDirectory(client, local, to.group(1), to.group(2));
      } else if (Files.isRegularFile(local)) {
        kind = "file";
        bytes = Files.size(local);
        Progress p = new Progress(ctx.err, "upload " + local.getFileName(), bytes, !ctx.json);
        try (InputStream in = p.wrap(Files.newInputStream(local))) {
          client.upload(to.group(1), to.group(2), in, Files.isExecutable(local));
        }
        p.finish();
      } else {
        throw new CliException("no such file or directory: " + src);
      }
    } else {
      String id = from.group(1);
      String path = from.group(2);
      Path local = Path.of(dst);
      FileEntry file = fileEntry(client, id, path);
      if (file == null) {
        kind = "directory";
        bytes = downloadDirectory(client, id, path, local);
      } else {
        kind = "file";
        Path target = Files.isDirectory(local) ? local.resolve(file.name()) : local;
        Progress p = new Progress(ctx.err, "download " + file.name(), file.size(), !ctx.json);
        bytes = download(target, out -> client.download(id, path, p.wrap(out)));
        p.finish();
        if (file.mode() != null && (Integer.parseInt(file.mode(), 8) & 0111) != 0) {
          target.toFile().setExecutable(true);
        }
      }
    }
    if (ctx.json) {
      Map<String, Object> done = new LinkedHashMap<>();
      done.put("source", src);
      done.put("destination", dst);
      done.put("kind", kind);
      done.put("bytes", bytes);
      ctx.printJson(done);
    }
    return 0;
  }

  /** The entry of {@code path} when it is a file (listing a file lists it alone), null for a directory. */
  private static FileEntry fileEntry(SandboxClient client, String id, String path) {
    String base = Path.of(path).getFileName().toString();
    List<FileEntry> entries = client.listFiles(id, path);
    if (entries.size() == 1) {
      FileEntry e = entries.get(0);
      if (!e.isDir() && e.name().equals(base) && !e.path().endsWith(base + "/" + base)) {
        return e;
      }
    }
    return null;
  }

  private long uploadDirectory(SandboxClient client, Path dir, String id, String path) throws IOException {
    Path tar = Files.createTempFile("sandbox-cp", ".tar.gz");
    try {
      try (OutputStream out = Files.newOutputStream(tar)) {
        Archives.pack(dir, out);
      }
      long size = Files.size(tar);
      Progress p = new Progress(ctx.err, "upload " + dir.getFileName() + "/", size, !ctx.json);
      try (InputStream in = p.wrap(Files.newInputStream(tar))) {
        client.uploadArchive(id, path, in);
      }
      p.finish();
      return size;
    } finally {
      Files.deleteIfExists(tar);
    }
  }

  private long downloadDirectory(SandboxClient client, String id, String path, Path dir) throws IOException {
    Path tar = Files.createTempFile("sandbox-cp", ".tar.gz");
    try {
      Progress p = new Progress(ctx.err, "download " + path + "/", -1, !ctx.json);
      long size;
      try (OutputStream out = p.wrap(Files.newOutputStream(tar))) {
        size = client.downloadArchive(id, path, out);
      }
      p.finish();
      try (InputStream in = Files.newInputStream(tar)) {
        Archives.unpack(in, dir);
      }
      return size;
    } finally {
      Files.deleteIfExists(tar);
    }
  }

  private interface Download {
    long into(OutputStream out) throws IOException;
  }

  /** Downloads into a temporary file beside {@code target}, moved into place once complete. */
  private static long download(Path target, Download download) throws IOException {
    Path parent = target.toAbsolutePath().getParent();
    Path tmp = Files.createTempFile(parent, "." + target.getFileName(), ".part");
    try {
      long n;
      try (OutputStream out = Files.newOutputStream(tmp)) {
        n = download.into(out);
      }
      Files.move(tmp, target, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
      return n;
    } finally {
      Files.deleteIfExists(tmp);
    }
  }
}
