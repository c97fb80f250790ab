package ai.bespokelabs.sandbox.adapters.local;

import java.io.File;
import java.io.FileInputStream;
import java.io.IOException;
import java.util.function.Consumer;

/**
 * The {@code /proc/<pid>/stat} lines of the host's processes, read with plain file reads into one reused buffer
 * and parsed as bytes: a scan of every process costs about half what path and string APIs do, and destroy and
 * timeouts scan on the caller's time.
 */
final class ProcStats {
  /** One process: its state letter ({@code Z} for a zombie), process group and start time (clock ticks). */
  record Stat(long pid, char state, long pgrp, long startTime) {}

  private ProcStats() {}

  /** Whether this host has {@code /proc} to read. */
  static boolean available() {
    return new File("/proc").isDirectory();
  }

  /** Every process that could be read; ones that end meanwhile are skipped. */
  static void forEach(Consumer<Stat> each) {
    String[] names = new File("/proc").list();
    if (names == null) {
      return;
    }
    byte[] buf = new byte[1024];
    for (String name : names) {
      if (name.isEmpty() || name.charAt(0) < '0' || name.charAt(0) > '9') {
        continue;
      }
      Stat s = read(Long.parseLong(name), buf);
      if (s != null) {
        each.accept(s);
      }
    }
  }

  /** One process, or null when it is gone or its line cannot be parsed. */
  static Stat of(long pid) {
    return read(pid, new byte[1024]);
  }

  private static Stat read(long pid, byte[] buf) {
    int n;
    try (FileInputStream in = new FileInputStream("/proc/" + pid + "/stat")) {
      n = in.readNBytes(buf, 0, buf.length);
    } catch (IOException | RuntimeException vanished) {
      return null;
    }
    // pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses, so fields start after the last ')'
    int close = -1;
    for (int i = n - 1; i >= 0; i--) {
      if (buf[i] == ')') {
        close = i;
        break;
      }
    }
    int at = close + 2;
    if (close < 0 || at >= n) {
      return null;
    }
    char state = (char) buf[at];
    long pgrp = -1;
    long start = -1;
    int field = 0; // 0 = state, 1 = ppid, 2 = pgrp, ..., 19 = starttime
    long value = 0;
    boolean inNumber = false;
    for (int i = at; i <= n; i++) {
      byte b = i < n ? buf[i] : (byte) ' ';
      if (b == ' ' || b == '\n') {
        if (field == 2) {
          pgrp = value;
        } else if (field == 19) {
          start = value;
          break;
        }
        field++;
        value = 0;
        inNumber = false;
      } else if (b >= '0' && b <= '9') {
        value = value * 10 + (b - '0');
        inNumber = true;
      } else if (field > 0 && b == '-' && !inNumber) {
        value = 0; // a negative field (none of those read here)
      }
    }
    return pgrp < 0 || start < 0 ? null : new Stat(pid, state, pgrp, start);
  }
}
