package ai.bespokelabs.sandbox.adapters.http;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.core.error.ErrorCode;
import ai.bespokelabs.sandbox.core.error.ProviderError;
import ai.bespokelabs.sandbox.core.error.ProviderError.Outcome;
import java.net.ConnectException;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.Test;

class HttpFailuresTest {

  @Test
  void statuses_map_onto_the_contract_the_same_for_every_backend() {
    assertThat(HttpFailures.status("x", "create", 401, null).code()).isEqualTo(ErrorCode.AUTHENTICATION);
    assertThat(HttpFailures.status("x", "create", 403, null).code()).isEqualTo(ErrorCode.AUTHENTICATION);
    assertThat(HttpFailures.status("x", "destroy", 404, null).code()).isEqualTo(ErrorCode.NOT_FOUND);
    ProviderError gatewayTimeout = HttpFailures.status("x", "execute", 504, null);
    assertThat(gatewayTimeout.code()).isEqualTo(ErrorCode.TIMEOUT);
    assertThat(gatewayTimeout.outcome()).isEqualTo(Outcome.UNKNOWN);
    ProviderError limited = HttpFailures.status("x", "execute", 429, "3");
    assertThat(limited.code()).isEqualTo(ErrorCode.EXECUTION_FAILED);
    assertThat(limited.retryable()).isTrue();
    assertThat(limited.context()).containsEntry("retry_after_secs", 3L).containsEntry("retry_after_ms", 3000L)
        .containsEntry("provider_status", 429L);
    ProviderError refused = HttpFailures.status("x", "create", 400, "3");
    assertThat(refused.code()).isEqualTo(ErrorCode.CREATION_FAILED);
    assertThat(refused.retryable()).isFalse();
    assertThat(refused.context()).doesNotContainKey("retry_after_secs");
  }

  @Test
  void a_wait_hint_may_be_seconds_or_an_http_date() {
    String inTenSecs = DateTimeFormatter.RFC_1123_DATE_TIME.format(ZonedDateTime.now().plusSeconds(10));
    assertThat(HttpFailures.retryAfterSecs(inTenSecs)).isBetween(8L, 10L);
    assertThat(HttpFailures.retryAfterSecs(" 7 ")).isEqualTo(7L);
    assertThat(HttpFailures.retryAfterSecs("-4")).isZero();
    assertThat(HttpFailures.retryAfterSecs("soon")).isNull();
    assertThat(HttpFailures.retryAfterSecs(null)).isNull();
  }

  @Test
  void a_request_that_never_left_failed_and_one_that_may_have_acted_is_unknown() {
    ProviderError refused = HttpFailures.transport("x", "create", new ConnectException("refused"), true).error();
    assertThat(refused.code()).isEqualTo(ErrorCode.CONNECTION);
    assertThat(refused.outcome()).isEqualTo(Outcome.FAILED);
    ProviderError lost = HttpFailures.transport("x", "destroy", new TimeoutException("late"), true).error();
    assertThat(lost.code()).isEqualTo(ErrorCode.TIMEOUT);
    assertThat(lost.outcome()).isEqualTo(Outcome.UNKNOWN);
    assertThat(HttpFailures.transport("x", "list", new TimeoutException("late"), false).error().outcome())
        .isEqualTo(Outcome.FAILED);
  }
}
