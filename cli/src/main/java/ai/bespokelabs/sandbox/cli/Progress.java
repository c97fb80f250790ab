package ai.bespokelabs.sandbox.cli;

import java.io.FilterInputStream;
import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintStream;

/**
 * A progress line on stderr for a transfer, redrawn at most five times a second once it passed 1 MiB (small
 * transfers print nothing); {@link #finish()} ends the line.
 */
final class Progress {
  private static final long SHOWN_FROM = 1024 * 1024;

  private final PrintStream err;
  private final String label;
  private final long total;
  private final boolean enabled;
  private long done;
  private long lastDraw;
  private boolean drawn;

  /** {@code total} -1 when unknown; {@code enabled} false draws nothing (JSON output). */
  Progress(PrintStream err, String label, long total, boolean enabled) {
    this.err = err;
    this.label = label;
    this.total = total;
    this.enabled = enabled;
  }

  synchronized void add(long n) {
    done += n;
    long now = System.nanoTime();
    if (enabled && done >= SHOWN_FROM && now - lastDraw > 200_000_000L) {
      lastDraw = now;
      draw();
    }
  }

  synchronized void finish() {
    if (drawn) {
      draw();
      err.println();
    }
  }

  private void draw() {
    drawn = true;
    String line = total > 0
        ? String.format("\r%s  %s / %s  %3d%%", label, mib(done), mib(total), Math.min(100, done * 100 / total))
        : String.format("\r%s  %s", label, mib(done));
    err.print(line);
    err.flush();
  }

  private static String mib(long bytes) {
    return String.format("%.1f MiB", bytes / 1048576.0);
  }

  InputStream wrap(InputStream in) {
    return new FilterInputStream(in) {
      @Override
      public int read() throws IOException {
        int b = super.read();
        if (b >= 0) {
          add(1);
        }
        return b;
      }

      @Override
      public int read(byte[] buf, int off, int len) throws IOException {
        int n = super.read(buf, off, len);
        if (n > 0) {
          add(n);
        }
        return n;
      }
    };
  }

  OutputStream wrap(OutputStream out) {
    return new FilterOutputStream(out) {
      @Override
      public void write(int b) throws IOException {
        out.write(b);
        add(1);
      }

      @Override
      public void write(byte[] buf, int off, int len) throws IOException {
        out.write(buf, off, len);
        add(len);
      }
    };
  }
}
