package ai.bespokelabs.sandbox.adapters.local;

import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError;
import ai.bespokelabs.sandbox.core.error.ProviderException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The sandbox uids of a host, allocated across every gateway process on it: a uid is held through a lock file
 * {@code <dir>/<uid>} locked by its holder ({@link FileChannel#tryLock}) for as long as a sandbox has it. The
 * file names the directory the uid owns; the lock goes with the process, so the uids of a gateway that died
 * are free again, except one whose directory is still there and owned by it (its files are the tenant's until
 * that sandbox is destroyed) or that some process still runs as. Every decision is taken under
 * {@code <dir>/.lock}, so one gateway's release (delete, then unlock) never meets another's take.
 *
 * <p>Within one process a lock file is opened once only: closing any other channel of it would drop the lock
 * (POSIX record locks belong to the process), so the channels held live in one map for the whole process.
 */
final class HostUids {
  private static final Logger LOG = LoggerFactory.getLogger(HostUids.class);
  /** Serialises every allocation of this process, whatever its directory. */
  private static final Object PROCESS = new Object();
  /** The lock files this process holds, with the channel holding each; guarded by {@link #PROCESS}. */
  private static final Map<Path, FileChannel> HELD = new HashMap<>();

  private final Path dir;
  private final int first;
  private final int count;

  HostUids(Path dir, int first, int count) {
    this.dir = dir.toAbsolutePath().normalize();
    this.first = first;
    this.count = count;
  }

  boolean inRange(int uid) {
    return uid >= first && uid < first + count;
  }

  /**
   * A uid no sandbox of this host holds and no process runs as, now held until {@link #release}; {@code owner}
   * is the directory it will own (null: none).
   *
   * @throws ProviderException {@code creation_failed} when every uid of the range is taken (context
   *     {@code provider_code: host_uids_exhausted}) or the lock directory cannot be used
   */
  int allocate(String backend, Path owner) {
    synchronized (PROCESS) {
      try (FileChannel guard = guard()) {
        Set<Integer> running = runningUids();
        int start = ThreadLocalRandom.current().nextInt(count);
        for (int i = 0; i < count; i++) {
          int uid = first + (start + i) % count;
          Path file = file(uid);
          if (HELD.containsKey(file) || running.contains(uid)) {
            continue;
          }
          FileChannel held = take(file, uid, true);
          if (held != null) {
            record(held, owner);
            HELD.put(file, held);
            return uid;
          }
        }
      } catch (IOException e) {
        throw failure(backend, "cannot use the uid lock directory " + dir, e);
      }
    }
    LOG.warn("every sandbox uid {}-{} of this host is taken (BESPOKE_SANDBOX_UIDS): a create fails until one is"
        + " free", first, first + count - 1);
    throw new ProviderException(ProviderError.of(ErrorCode.CREATION_FAILED, backend, "create", true,
        ProviderError.Outcome.FAILED).withContext("provider_code", "host_uids_exhausted"));
  }

  /**
   * Takes {@code uid} back for the directory {@code owner} it owns (a sandbox found after a restart), whatever
   * still runs as it; false when it is outside the range or another process holds it.
   */
  boolean claim(String backend, int uid, Path owner) {
    if (!inRange(uid)) {
      return false;
    }
    synchronized (PROCESS) {
      Path file = file(uid);
      if (HELD.containsKey(file)) {
        return true;
      }
      try (FileChannel guard = guard()) {
        FileChannel held = take(file, uid, false);
        if (held == null) {
          LOG.warn("uid {} of the sandbox directory {} is held by another process on this host", uid, owner);
          return false;
        }
        record(held, owner);
        HELD.put(file, held);
        return true;
      } catch (IOException e) {
        throw failure(backend, "cannot use the uid lock directory " + dir, e);
      }
    }
  }

  /** Gives {@code uid} back to the host: its lock file is removed, then unlocked. */
  void release(int uid) {
    synchronized (PROCESS) {
      Path file = file(uid);
      FileChannel held = HELD.remove(file);
      if (held == null) {
        return;
      }
      try (held; FileChannel guard = guard()) {
        Files.deleteIfExists(file);
      } catch (IOException e) {
        LOG.warn("cannot remove the uid lock file {}: {}", file, e.toString());
      }
    }
  }

  /**
   * Stops holding {@code uid} without giving it back: its file stays, naming the directory it owns, so the uid
   * stays reserved for that directory (taken back by {@link #claim} at the next start) and is free once the
   * directory is gone.
   */
  void letGo(int uid) {
    synchronized (PROCESS) {
      FileChannel held = HELD.remove(file(uid));
      if (held != null) {
        try {
          held.close();
        } catch (IOException e) {
          LOG.debug("closing the uid lock file of {}: {}", uid, e.toString());
        }
      }
    }
  }

  private Path file(int uid) {
    return dir.resolve(Integer.toString(uid));
  }

  /** The host-wide lock every take and release is decided under (held until the channel closes). */
  private FileChannel guard() throws IOException {
    if (!Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS)) {
      Files.createDirectories(dir);
      Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx------"));
    }
    FileChannel guard = FileChannel.open(dir.resolve(".lock"), StandardOpenOption.CREATE, StandardOpenOption.WRITE,
        LinkOption.NOFOLLOW_LINKS);
    try {
      guard.lock();
      return guard;
    } catch (IOException | RuntimeException e) {
      guard.close();
      throw e;
    }
  }

  /**
   * The channel holding {@code file}'s lock, or null when another process holds it or (with {@code checkOwner})
   * it still names a directory owned by the uid: its holder died, but its sandbox's files are still there.
   */
  private static FileChannel take(Path file, int uid, boolean checkOwner) throws IOException {
    FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.READ,
        StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS);
    try {
      FileLock lock = ch.tryLock();
      if (lock == null || checkOwner && ownsItsDirectory(ch, uid)) {
        ch.close();
        return null;
      }
      return ch;
    } catch (IOException | RuntimeException e) {
      ch.close();
      throw e;
    }
  }

  private static boolean ownsItsDirectory(FileChannel ch, int uid) throws IOException {
    ByteBuffer buf = ByteBuffer.allocate(4096);
    ch.read(buf, 0);
    String owner = new String(buf.array(), 0, buf.position(), StandardCharsets.UTF_8).strip();
    if (owner.isEmpty()) {
      return false;
    }
    try {
      return SandboxDirs.ownerUid(Path.of(owner)) == uid;
    } catch (NoSuchFileException | java.nio.file.InvalidPathException gone) {
      return false;
    } catch (IOException unknown) {
      return true; // cannot tell: kept for the directory
    }
  }

  private static void record(FileChannel ch, Path owner) throws IOException {
    ch.truncate(0);
    ch.write(ByteBuffer.wrap((owner == null ? "" : owner.toAbsolutePath() + "\n").getBytes(StandardCharsets.UTF_8)), 0);
  }

  /** The uids of the range that some process of this host runs as (real, effective, saved or file system uid). */
  private Set<Integer> runningUids() {
    Set<Integer> out = new HashSet<>();
    try (DirectoryStream<Path> procs = Files.newDirectoryStream(Path.of("/proc"), "[0-9]*")) {
      for (Path p : procs) {
        List<String> status;
        try {
          status = Files.readAllLines(p.resolve("status"), StandardCharsets.US_ASCII);
        } catch (IOException vanished) {
          continue;
        }
        for (String line : status) {
          if (line.startsWith("Uid:")) {
            for (String field : line.substring(4).trim().split("\\s+")) {
              int uid = Integer.parseInt(field);
              if (inRange(uid)) {
                out.add(uid);
              }
            }
            break;
          }
        }
      }
    } catch (IOException | NumberFormatException e) {
      LOG.debug("cannot read the processes of this host: {}", e.toString());
    }
    return out;
  }

  private static ProviderException failure(String backend, String why, IOException e) {
    LOG.warn("{}: {}", why, e.toString());
    return new ProviderException(ProviderError.of(ErrorCode.CREATION_FAILED, backend, "create", true,
        ProviderError.Outcome.FAILED), e);
  }
}
