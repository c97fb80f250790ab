package ai.bespokelabs.sandbox.core.db;

import ai.bespokelabs.sandbox.core.config.ConfigException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;

/**
 * Ownership of a gateway's data directory: an exclusive lock on {@code <data dir>/gateway.lock}, held for the
 * gateway's life, with the holder's pid, host, port and start time written in the file. The operating system
 * drops the lock when its process ends, however it ends (SIGKILL included), so a lock that can be taken means no
 * gateway uses the directory any more: only its holder may stop a server an earlier gateway left running there.
 */
public final class DataDirectoryLock implements AutoCloseable {
  /** The lock file's name in the data directory. */
  public static final String FILE = "gateway.lock";

  // A process's file locks are dropped when it closes any channel on the file, so this process never opens the
  // file of a lock it holds: a second acquire in the same process is answered from here.
  private static final Map<Path, String> HELD = new HashMap<>();

  private final Path dir;
  private final Path key;
  private final FileChannel channel;
  private final FileLock lock;

  private DataDirectoryLock(Path dir, Path key, FileChannel channel, FileLock lock) {
    this.dir = dir;
    this.key = key;
    this.channel = channel;
    this.lock = lock;
  }

  /**
   * Takes the data directory {@code dir} (created if missing) for this process, {@code port} being the port it
   * serves (0 when unknown). Throws a {@link ConfigException} naming the running holder when another gateway has
   * it.
   */
  public static DataDirectoryLock acquire(Path dir, int port) {
    try {
      Files.createDirectories(dir);
      Path key = dir.toRealPath();
      synchronized (HELD) {
        String holder = HELD.get(key);
        if (holder != null) {
          throw inUse(dir, holder);
        }
        Path file = key.resolve(FILE);
        FileChannel channel = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.READ,
            StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS);
        FileLock lock;
        try {
          lock = channel.tryLock();
        } catch (IOException | RuntimeException e) {
          channel.close();
          throw e;
        }
        if (lock == null) {
          channel.close();
          throw inUse(dir, describe(Files.readString(file, StandardCharsets.UTF_8)));
        }
        String record = record(port);
        try {
          channel.truncate(0);
          channel.write(ByteBuffer.wrap(record.getBytes(StandardCharsets.UTF_8)), 0);
        } catch (IOException e) {
          channel.close();
          throw e;
        }
        HELD.put(key, describe(record));
        return new DataDirectoryLock(dir, key, channel, lock);
      }
    } catch (IOException e) {
      throw new IllegalStateException("cannot lock the data directory " + dir + ": " + e.getMessage(), e);
    }
  }

  public Path dir() {
    return dir;
  }

  /** Releases the directory (the file stays, emptied). */
  @Override
  public void close() {
    synchronized (HELD) {
      if (!channel.isOpen()) {
        return;
      }
      try {
        channel.truncate(0);
        lock.release();
      } catch (IOException e) {
        // closing the channel below releases the lock all the same
      } finally {
        HELD.remove(key);
        try {
          channel.close();
        } catch (IOException ignored) {
          // nothing left to release
        }
      }
    }
  }

  private static ConfigException inUse(Path dir, String holder) {
    return new ConfigException("the data directory " + dir + " is in use by another gateway (" + holder
        + "); stop that one first, or give this one another directory with BESPOKE_DATA_DIR");
  }

  private static String record(int port) {
    String host;
    try {
      host = java.net.InetAddress.getLocalHost().getHostName();
    } catch (IOException e) {
      host = "unknown";
    }
    return "pid=" + ProcessHandle.current().pid() + "\nhost=" + host + "\nport=" + (port > 0 ? port : "")
        + "\nstarted=" + Instant.now().truncatedTo(ChronoUnit.SECONDS) + "\n";
  }

  /** "pid 12 on host h, port 8000, started ..." from a lock file's text (whatever of it is there). */
  static String describe(String text) {
    Properties p = new Properties();
    try {
      p.load(new java.io.StringReader(text));
    } catch (IOException | IllegalArgumentException e) {
      return "holder unknown";
    }
    String pid = p.getProperty("pid", "");
    if (pid.isBlank()) {
      return "holder unknown";
    }
    StringBuilder out = new StringBuilder("pid ").append(pid.strip());
    String host = p.getProperty("host", "").strip();
    if (!host.isEmpty()) {
      out.append(" on host ").append(host);
    }
    String port = p.getProperty("port", "").strip();
    if (!port.isEmpty()) {
      out.append(", port ").append(port);
    }
    String started = p.getProperty("started", "").strip();
    if (!started.isEmpty()) {
      out.append(", started ").append(started);
    }
    return out.toString();
  }
}
