package ai.bespokelabs.sandbox.ledger;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class ExportsTest {
  @Test
  void formula_cells_get_a_leading_quote() {
    for (String risky : new String[] {"=1+1", "+cmd", "-2", "@x", "\tx", "\rx", "\nx"}) {
      assertThat(Exports.neutralize(risky)).isEqualTo("'" + risky);
    }
    assertThat(Exports.neutralize("safe")).isEqualTo("safe");
    assertThat(Exports.neutralize("")).isEmpty();
  }

  @Test
  void csv_quoting_follows_rfc_4180() {
    assertThat(Exports.quote("a,b")).isEqualTo("\"a,b\"");
    assertThat(Exports.quote("say \"hi\"")).isEqualTo("\"say \"\"hi\"\"\"");
    assertThat(Exports.quote("line\nbreak")).isEqualTo("\"line\nbreak\"");
    assertThat(Exports.quote("plain")).isEqualTo("plain");
  }
}
