package ai.bespokelabs.sandbox.gateway.security;

import static org.assertj.core.api.Assertions.assertThat;

import ai.bespokelabs.sandbox.adapters.docker.TestEngine;
import ai.bespokelabs.sandbox.gateway.GatewayExtension;
import ai.bespokelabs.sandbox.gateway.TestGateway;
import ai.bespokelabs.sandbox.gateway.TestGateway.Resp;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@code {"backend":"docker","image":"e"}} (one hex character of an image id) gave organization A a container of
 * organization B's snapshot image, B's files included. {@code image} names images only ({@code repo[:tag]},
 * {@code repo@sha256:...}), never an id or a prefix of one, and never a snapshot: those are reached through
 * {@code snapshot_id} by the organization that took them, and by nobody else.
 */
@Tag("security")
class DockerImageAttackTest {
  @RegisterExtension
  static final GatewayExtension GATEWAY = new GatewayExtension(() -> Map.of(
      "DOCKER_HOST", TestEngine.get().dockerHost(), "BESPOKE_DOCKER_IMAGE", TestEngine.IMAGE));
  static TestGateway gw;
  static TestEngine engine;
  static String victim;
  static String attacker;
  static String secret;
  static String snapshotId;

  @BeforeAll
  static void snapshotOfB() {
    engine = TestEngine.get();
    victim = gw.bootstrap("Victim B");
    attacker = gw.bootstrap("Attacker A");
    secret = "b-secret-" + UUID.randomUUID();
    String id = created(gw.post("/v1/sandboxes", victim, new JsonObject().put("backend", "docker")
        .put("allow_internet", false)));
    assertThat(exec(victim, id, "echo " + secret + " > /workspace/secret.txt").getInteger("exit_code")).isZero();
    Resp snap = gw.post("/v1/sandboxes/" + id + "/snapshot", victim, null);
    assertThat(snap.status()).as(snap.body()).isEqualTo(201);
    snapshotId = snap.json().getString("snapshot_id");
    assertThat(snapshotId).matches("sha256:[0-9a-f]{64}");
    gw.delete("/v1/sandboxes/" + id, victim);
  }

  static String created(Resp r) {
    assertThat(r.status()).as(r.body()).isEqualTo(201);
    return r.json().getString("id");
  }

  static JsonObject exec(String key, String id, String command) {
    Resp r = gw.post("/v1/sandboxes/" + id + "/execute", key, new JsonObject().put("command", command));
    assertThat(r.status()).as(r.body()).isEqualTo(200);
    return r.json();
  }

  /** Every way of naming B's snapshot image but its snapshot id: prefixes of its id, the id, its names. */
  static List<String> namesOfTheSnapshot() {
    String hex = snapshotId.substring("sha256:".length());
    List<String> names = new ArrayList<>(List.of(hex.substring(0, 1), hex.substring(0, 2), hex.substring(0, 12), hex,
        snapshotId, snapshotId.substring(0, 19)));
    JsonObject image = new JsonArray(engine.podman("image", "inspect", hex)).getJsonObject(0);
    for (Object tag : image.getJsonArray("RepoTags", new JsonArray())) {
      String name = (String) tag;
      names.add(name);
      names.add(name.substring(name.indexOf('/') + 1)); // without its registry
      names.add(name.substring(0, name.lastIndexOf(':'))); // without its tag
    }
    return names;
  }

  @Test
  void no_name_an_attacker_gives_as_image_reaches_another_organizations_snapshot() {
    List<String> names = namesOfTheSnapshot();
    assertThat(names).hasSizeGreaterThan(6);
    List<String> before = List.of(engine.podman("ps", "-a", "-q", "--no-trunc").split("\\s+"));
    for (String name : names) {
      Resp r = gw.post("/v1/sandboxes", attacker, new JsonObject().put("backend", "docker").put("image", name)
          .put("allow_internet", false));
      if (r.status() == 201) {
        String leaked = exec(attacker, r.json().getString("id"), "cat /workspace/secret.txt 2>&1").getString("stdout");
        gw.delete("/v1/sandboxes/" + r.json().getString("id"), attacker);
        assertThat(leaked).as("image %s gave A a container of B's snapshot", name).doesNotContain(secret);
      }
      assertThat(r.status()).as("image %s: %s", name, r.body()).isIn(404, 422, 502);
      assertThat(r.body()).as("image %s", name).doesNotContain(secret).doesNotContain("bespoke-snapshots");
    }
    assertThat(List.of(engine.podman("ps", "-a", "-q", "--no-trunc").split("\\s+"))).as("containers left")
        .isSubsetOf(before);
  }

  @Test
  void the_snapshot_id_restores_for_its_organization_only_and_a_prefix_of_it_for_nobody() {
    String restored = created(gw.post("/v1/sandboxes", victim, new JsonObject().put("backend", "docker")
        .put("allow_internet", false).put("snapshot_id", snapshotId)));
    assertThat(exec(victim, restored, "cat /workspace/secret.txt").getString("stdout")).isEqualTo(secret + "\n");
    gw.delete("/v1/sandboxes/" + restored, victim);

    Resp foreign = gw.post("/v1/sandboxes", attacker, new JsonObject().put("backend", "docker")
        .put("snapshot_id", snapshotId));
    assertThat(foreign.status()).as(foreign.body()).isEqualTo(404);
    assertThat(foreign.detail()).isEqualTo("snapshot not found");
    for (String prefix : List.of(snapshotId.substring(0, 19), snapshotId.substring(7, 19))) {
      Resp own = gw.post("/v1/sandboxes", victim, new JsonObject().put("backend", "docker").put("snapshot_id", prefix));
      assertThat(own.status()).as(prefix + ": " + own.body()).isEqualTo(404);
    }
  }

  @Test
  void an_ordinary_image_name_still_works() {
    String id = created(gw.post("/v1/sandboxes", attacker, new JsonObject().put("backend", "docker")
        .put("image", TestEngine.IMAGE).put("allow_internet", false)));
    assertThat(exec(attacker, id, "echo hi").getString("stdout")).isEqualTo("hi\n");
    gw.delete("/v1/sandboxes/" + id, attacker);
  }

  @Test
  void the_operators_image_patterns_allow_some_names_and_refuse_the_others() {
    try (TestGateway narrowed = new TestGateway(Map.of("DOCKER_HOST", engine.dockerHost(),
        "BESPOKE_DOCKER_IMAGE", TestEngine.IMAGE, "BESPOKE_DOCKER_IMAGES", "localhost/sandbox-test:*, ghcr.io/acme/*"))) {
      String key = narrowed.bootstrap("Narrowed");
      Resp allowed = narrowed.post("/v1/sandboxes", key, new JsonObject().put("backend", "docker")
          .put("image", TestEngine.IMAGE).put("allow_internet", false));
      assertThat(allowed.status()).as(allowed.body()).isEqualTo(201);
      narrowed.delete("/v1/sandboxes/" + allowed.json().getString("id"), key);
      Resp byDefault = narrowed.post("/v1/sandboxes", key, new JsonObject().put("backend", "docker")
          .put("allow_internet", false));
      assertThat(byDefault.status()).as(byDefault.body()).isEqualTo(201);
      narrowed.delete("/v1/sandboxes/" + byDefault.json().getString("id"), key);
      for (String refused : List.of("python:3.12", "docker.io/library/python:3.12", "localhost/other:1",
          "ghcr.io/acmecorp/tool:1")) {
        Resp r = narrowed.post("/v1/sandboxes", key, new JsonObject().put("backend", "docker").put("image", refused));
        assertThat(r.status()).as(refused + ": " + r.body()).isEqualTo(422);
        assertThat(r.detail().toString()).contains("is not allowed on this gateway");
      }
    }
  }
}
