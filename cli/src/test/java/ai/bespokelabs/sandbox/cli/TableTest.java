package ai.bespokelabs.sandbox.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** The command's tables: columns padded to their widest cell, two spaces apart, a missing value as "-". */
class TableTest {
  @Test
  void columns_line_up_under_their_widest_cell_and_missing_values_show_as_a_dash() {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    new Table("ID", "BACKEND", "STATUS")
        .row("sbx_1", "local", "running")
        .row("sbx_22222", null, "terminated")
        .print(new PrintStream(bytes, true, StandardCharsets.UTF_8));
    assertThat(bytes.toString(StandardCharsets.UTF_8).lines()).containsExactly(
        "ID         BACKEND  STATUS",
        "sbx_1      local    running",
        "sbx_22222  -        terminated");
  }
}
