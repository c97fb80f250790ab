package ai.bespokelabs.sandbox.cli;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;

/** A plain text table: a header row and columns padded to their widest cell. */
final class Table {
  private final List<String[]> rows = new ArrayList<>();

  Table(String... header) {
    rows.add(header);
  }

  Table row(Object... cells) {
    String[] r = new String[cells.length];
    for (int i = 0; i < cells.length; i++) {
      r[i] = cells[i] == null ? "-" : String.valueOf(cells[i]);
    }
    rows.add(r);
    return this;
  }

  void print(PrintStream out) {
    int[] width = new int[rows.get(0).length];
    for (String[] r : rows) {
      for (int i = 0; i < r.length; i++) {
        width[i] = Math.max(width[i], r[i].length());
      }
    }
    for (String[] r : rows) {
      StringBuilder line = new StringBuilder();
      for (int i = 0; i < r.length; i++) {
        line.append(r[i]);
        if (i < r.length - 1) {
          line.append(" ".repeat(width[i] - r[i].length() + 2));
        }
      }
      out.println(line);
    }
  }
}
