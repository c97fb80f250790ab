package ai.bespokelabs.sandbox.gateway.security;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.gateway.GatewayExtension;
import ai.bespokelabs.sandbox.gateway.TestGateway;
import ai.bespokelabs.sandbox.gateway.TestGateway.Resp;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * An {@code Idempotency-Key} names one execute request: the same key with another body is a 409 (as for
 * creates), never the first request's result; the same key and body replays it, also after the sandbox ended.
 */
@Tag("security")
@ExtendWith(GatewayExtension.class)
class ExecuteIdempotencyTest {
  static final String CONFLICT = "idempotency key was already used with a different request";
  static TestGateway gw;
  static String key;

  @BeforeAll
  static void start() {
    key = gw.bootstrap("Acme");
  }

  @Test
  void same_key_with_another_body_is_409_and_the_same_body_replays_after_destroy() {
    String id = gw.sandbox(key, null).getString("id");
    String execute = "/v1/sandboxes/" + id + "/execute";
    JsonObject first = new JsonObject().put("command", "echo").put("args", new JsonArray().add("first"));
    Resp ran = gw.post(execute, key, first, "Idempotency-Key", "k-1");
    assertThat(ran.status()).isEqualTo(200);
    assertThat(ran.json().getString("stdout")).isEqualTo("first\n");

    Resp other = gw.post(execute, key, new JsonObject().put("command", "echo").put("args", new JsonArray().add("second")),
        "Idempotency-Key", "k-1");
    assertThat(other.status()).isEqualTo(409);
    assertThat(other.detail()).isEqualTo(CONFLICT);
    Resp otherEnv = gw.post(execute, key, first.copy().put("env", new JsonObject().put("A", "1")),
        "Idempotency-Key", "k-1");
    assertThat(otherEnv.status()).isEqualTo(409);
    Resp started = gw.post("/v1/sandboxes/" + id + "/executions", key, new JsonObject().put("command", "true"),
        "Idempotency-Key", "k-1");
    assertThat(started.status()).isEqualTo(409);
    assertThat(started.detail()).isEqualTo(CONFLICT);

    // the same body, keys in another order, is the same request
    JsonObject reordered = new JsonObject().put("args", new JsonArray().add("first")).put("command", "echo");
    Resp replay = gw.post(execute, key, reordered, "Idempotency-Key", "k-1");
    assertThat(replay.status()).isEqualTo(200);
    assertThat(replay.json()).isEqualTo(ran.json());

    // what runs the same program is the same request: no args and an empty list, a language with a command
    Resp line = gw.post(execute, key, new JsonObject().put("command", "echo line"), "Idempotency-Key", "k-3");
    assertThat(line.status()).isEqualTo(200);
    Resp sameLine = gw.post(execute, key, new JsonObject().put("command", "echo line").put("args", new JsonArray())
        .put("language", "python"), "Idempotency-Key", "k-3");
    assertThat(sameLine.status()).as(sameLine.body()).isEqualTo(200);
    assertThat(sameLine.json()).isEqualTo(line.json());
    Resp otherCwd = gw.post(execute, key, new JsonObject().put("command", "echo line").put("cwd", "sub"),
        "Idempotency-Key", "k-3");
    assertThat(otherCwd.status()).isEqualTo(409);

    assertThat(gw.delete("/v1/sandboxes/" + id, key).status()).isEqualTo(200);
    Resp afterDestroy = gw.post(execute, key, first, "Idempotency-Key", "k-1");
    assertThat(afterDestroy.status()).isEqualTo(200);
    assertThat(afterDestroy.json()).isEqualTo(ran.json());
    Resp otherAfterDestroy = gw.post(execute, key, new JsonObject().put("command", "id"), "Idempotency-Key", "k-1");
    assertThat(otherAfterDestroy.status()).isEqualTo(409);
    assertThat(otherAfterDestroy.detail()).isEqualTo(CONFLICT);
    Resp fresh = gw.post(execute, key, first, "Idempotency-Key", "k-2");
    assertThat(fresh.status()).isEqualTo(409);
    assertThat(fresh.detail()).isEqualTo("sandbox is destroyed");
  }
}
