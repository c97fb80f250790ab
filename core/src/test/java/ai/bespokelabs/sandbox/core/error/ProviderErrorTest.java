package ai.bespokelabs.sandbox.core.error;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.core.bus.BusFailure;
import ai.bespokelabs.sandbox.core.bus.BusFailures;
import io.vertx.core.eventbus.ReplyException;
import io.vertx.core.eventbus.ReplyFailure;
import io.vertx.core.json.JsonObject;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ProviderErrorTest {

  @Test
  void payload_has_exactly_the_contract_keys_and_a_fixed_message() {
    JsonObject j = ProviderError.of(ErrorCode.TIMEOUT, "e2b", "create", true, ProviderError.Outcome.FAILED).toJson();
    assertThat(j.fieldNames()).containsExactly("message", "code", "backend", "op", "retryable", "outcome", "context");
    assertThat(j.getString("message")).isEqualTo("Provider request timed out.");
    assertThat(j.getString("code")).isEqualTo("timeout");
    assertThat(ErrorCode.AUTHENTICATION.publicMessage()).isEqualTo("Provider authentication failed.");
    assertThat(ErrorCode.BACKEND_NOT_INSTALLED.httpStatus()).isEqualTo(422);
    assertThat(ErrorCode.CONFIGURATION.httpStatus()).isEqualTo(422);
    assertThat(ErrorCode.TIMEOUT.httpStatus()).isEqualTo(504);
    assertThat(ErrorCode.EXECUTION_FAILED.httpStatus()).isEqualTo(502);
  }

  @Test
  void context_passes_only_the_allow_list() {
    Map<String, Object> raw = new LinkedHashMap<>();
    raw.put("cleanup_status", "deleted");
    raw.put("exit_code", 17);
    raw.put("provider_status", "500");
    raw.put("provider_code", "quota.exceeded");
    raw.put("provider_resource_id", "bsk_live_abc");
    raw.put("api_key", "x");
    raw.put("message", "token=abc");
    ProviderError e = new ProviderError(ErrorCode.UNKNOWN, "x", "execute", false, ProviderError.Outcome.FAILED, raw);
    assertThat(e.context()).containsOnlyKeys("cleanup_status", "exit_code", "provider_code");
    assertThat(new ProviderError(ErrorCode.UNKNOWN, "x", "op", false, ProviderError.Outcome.FAILED,
        Map.of("cleanup_status", "maybe", "provider_code", "has space", "provider_resource_id", "my-secret-id")).context())
        .isEmpty();
  }

  @Test
  void an_ambiguous_create_is_never_retryable() {
    ProviderError e = ProviderError.of(ErrorCode.TIMEOUT, "daytona", "create", true, ProviderError.Outcome.UNKNOWN);
    assertThat(e.retryable()).isFalse();
    assertThat(ProviderError.of(ErrorCode.TIMEOUT, "daytona", "execute", true, ProviderError.Outcome.UNKNOWN)
        .retryable()).isTrue();
  }

  @Test
  void failures_decode_into_the_exception_the_sender_sees() {
    ProviderError e = ProviderError.of(ErrorCode.NOT_FOUND, "docker", "destroy", false, ProviderError.Outcome.FAILED)
        .withContext("provider_status", 404);
    RuntimeException back = BusFailures.decode(new BusFailures.Failed(BusFailure.of(e)), "docker", "destroy");
    assertThat(back).isInstanceOf(ProviderException.class);
    assertThat(((ProviderException) back).error()).isEqualTo(e);
    RuntimeException api = BusFailures.decode(new BusFailures.Failed(BusFailure.of(ApiException.conflict("busy"))),
        "x", "execute");
    assertThat(api).isInstanceOf(ApiException.class);
    assertThat(((ApiException) api).status()).isEqualTo(409);
    assertThat(((ApiException) api).detail()).isEqualTo("busy");
    RuntimeException timeout = BusFailures.decode(new ReplyException(ReplyFailure.TIMEOUT, "t"), "e2b", "create");
    assertThat(((ProviderException) timeout).error().code()).isEqualTo(ErrorCode.TIMEOUT);
    assertThat(((ProviderException) timeout).error().outcome()).isEqualTo(ProviderError.Outcome.UNKNOWN);
    RuntimeException untyped = BusFailures.decode(new ReplyException(ReplyFailure.RECIPIENT_FAILURE, 409, "\"busy\""),
        "local", "execute");
    assertThat(((ProviderException) untyped).error().code()).isEqualTo(ErrorCode.EXECUTION_FAILED);
    RuntimeException odd = BusFailures.decode(new IllegalStateException("boom"), "local", "create");
    assertThat(((ProviderException) odd).error().code()).isEqualTo(ErrorCode.CREATION_FAILED);
    assertThat(odd.getMessage()).doesNotContain("boom");
  }

  @Test
  void a_wait_hint_is_reported_in_milliseconds_and_whole_seconds() {
    ProviderError base = ProviderError.of(ErrorCode.CONNECTION, "e2b", "execute", true, ProviderError.Outcome.FAILED);
    assertThat(base.withContext("retry_after_ms", 1500L).context())
        .containsEntry("retry_after_ms", 1500L).containsEntry("retry_after_secs", 2L);
    assertThat(base.withContext("retry_after_secs", 7).context())
        .containsEntry("retry_after_ms", 7000L).containsEntry("retry_after_secs", 7L);
    assertThat(base.withContext("retry_after_ms", -5L).context()).isEmpty();
    assertThat(base.withContext("retry_after_ms", "soon").context()).isEmpty();
  }
}
