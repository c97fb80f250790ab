package ai.bespokelabs.sandbox.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** The response check every gateway test runs through: it refuses what the document does not describe. */
class ContractCheckTest {

  @Test
  void answers_are_held_to_the_document() {
    assertThat(ContractCheck.violation("GET", "/healthz", 200, "application/json", "{\"status\":\"ok\"}")).isNull();
    assertThat(ContractCheck.violation("GET", "/healthz", 200, "application/json", "{\"status\":\"sick\"}"))
        .contains("/healthz");
    assertThat(ContractCheck.violation("GET", "/v1/sandboxes/sbx_1", 200, "application/json", "{\"id\":1}"))
        .isNotNull();
    assertThat(ContractCheck.violation("GET", "/v1/sandboxes/sbx_1", 404, "application/json",
        "{\"detail\":\"sandbox not found\"}")).isNull();
    assertThat(ContractCheck.violation("GET", "/v1/sandboxes/sbx_1", 299, "application/json", "{}"))
        .as("an undocumented status").isNotNull();
  }
}
