import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.MessageDigest;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Map;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.apache.commons.compress.archivers.tar.TarConstants;
import org.tukaani.xz.LZMA2Options;
import org.tukaani.xz.XZInputStream;
import org.tukaani.xz.XZOutputStream;

/**
 * Build step: rewrites an embedded-PostgreSQL binaries archive ({@code .txz}) so that a file identical to an
 * earlier one in the same directory (a shared library copied under each of its version names, as in the macOS
 * builds) becomes a symbolic link to it. The server sees the same files; the archive shrinks by the copies.
 * Usage: {@code java RepackPostgresBinaries.java IN.txz OUT.txz}; does nothing when OUT was made from this IN
 * (its size and time, kept beside IN in {@code IN.repacked}). Compression is LZMA2 preset 1: a few MB larger
 * than the default preset, five times faster to build.
 */
public final class RepackPostgresBinaries {
  public static void main(String[] args) throws Exception {
    Path in = Path.of(args[0]);
    Path out = Path.of(args[1]);
    Path stamp = in.resolveSibling(in.getFileName() + ".repacked");
    String source = Files.size(in) + " " + Files.getLastModifiedTime(in).toMillis() + "\n";
    if (Files.exists(out) && Files.exists(stamp) && Files.readString(stamp).equals(source)) {
      return;
    }
    Files.createDirectories(out.toAbsolutePath().getParent());
    Files.deleteIfExists(stamp);
    Path tmp = out.resolveSibling(out.getFileName() + ".tmp");
    int links = 0;
    try (InputStream raw = new BufferedInputStream(Files.newInputStream(in));
        TarArchiveInputStream tarIn = new TarArchiveInputStream(new XZInputStream(raw));
        OutputStream file = new BufferedOutputStream(Files.newOutputStream(tmp));
        XZOutputStream xz = new XZOutputStream(file, new LZMA2Options(1));
        TarArchiveOutputStream tarOut = new TarArchiveOutputStream(xz)) {
      tarOut.setLongFileMode(TarArchiveOutputStream.LONGFILE_POSIX);
      tarOut.setBigNumberMode(TarArchiveOutputStream.BIGNUMBER_POSIX);
      Map<String, String> seen = new HashMap<>();
      TarArchiveEntry entry;
      while ((entry = tarIn.getNextEntry()) != null) {
        String name = entry.getName();
        if (!entry.isFile() || name.startsWith("bin/") || name.startsWith("./bin/")) {
          byte[] content = entry.isFile() ? tarIn.readAllBytes() : null;
          tarOut.putArchiveEntry(entry);
          if (content != null) {
            tarOut.write(content);
          }
          tarOut.closeArchiveEntry();
          continue;
        }
        byte[] content = tarIn.readAllBytes();
        int slash = name.lastIndexOf('/');
        String dir = name.substring(0, slash + 1);
        String key = dir + HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(content));
        String first = seen.putIfAbsent(key, name.substring(slash + 1));
        if (first != null) {
          TarArchiveEntry link = new TarArchiveEntry(name, TarConstants.LF_SYMLINK);
          link.setLinkName(first);
          link.setModTime(entry.getModTime());
          tarOut.putArchiveEntry(link);
          tarOut.closeArchiveEntry();
          links++;
        } else {
          tarOut.putArchiveEntry(entry);
          tarOut.write(content);
          tarOut.closeArchiveEntry();
        }
      }
    }
    Files.move(tmp, out, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    Files.writeString(stamp, source);
    System.out.println("Repacked " + in.getFileName() + ": " + links + " duplicate files became links, "
        + Files.size(in) + " -> " + Files.size(out) + " bytes");
  }
}
