package ai.bespokelabs.sandbox.core.agent;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.core.Secret;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class SecretBoxTest {
  private final SecretBox box = new SecretBox(new Secret("server secret of at least some length"));

  @Test
  void a_sealed_value_opens_only_for_its_organization_and_name_and_never_appears_in_clear() {
    String value = "sk-ant-api03-very-secret";
    byte[] sealed = box.seal("org_a", "ANTHROPIC_API_KEY", value);
    assertThat(new String(sealed, StandardCharsets.ISO_8859_1)).doesNotContain("very-secret");
    assertThat(box.open("org_a", "ANTHROPIC_API_KEY", sealed)).map(Secret::reveal).contains(value);
    assertThat(box.open("org_b", "ANTHROPIC_API_KEY", sealed)).as("moved to another organization").isEmpty();
    assertThat(box.open("org_a", "OPENAI_API_KEY", sealed)).as("renamed").isEmpty();
    assertThat(box.seal("org_a", "ANTHROPIC_API_KEY", value)).as("a fresh nonce each time").isNotEqualTo(sealed);
  }

  @Test
  void altered_truncated_or_foreign_values_do_not_open() {
    byte[] sealed = box.seal("org_a", "K", "v");
    byte[] flipped = sealed.clone();
    flipped[flipped.length - 1] ^= 1;
    assertThat(box.open("org_a", "K", flipped)).isEmpty();
    assertThat(box.open("org_a", "K", new byte[] {1, 2, 3})).isEmpty();
    assertThat(box.open("org_a", "K", null)).isEmpty();
    assertThat(new SecretBox(new Secret("another server")).open("org_a", "K", sealed)).isEmpty();
  }
}
