package ai.bespokelabs.sandbox.adapters.docker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.bespokelabs.sandbox.core.config.ConfigException;
import ai.bespokelabs.sandbox.core.error.ApiException;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

@Tag("security")
class ImageNamesTest {
  static final String HEX = "a".repeat(64);

  @ParameterizedTest
  @CsvSource({
      "python, docker.io/library/python:latest",
      "python:3.12-slim, docker.io/library/python:3.12-slim",
      "e, docker.io/library/e:latest",
      "abc123, docker.io/library/abc123:latest",
      "acme/tool, docker.io/acme/tool:latest",
      "index.docker.io/acme/tool:1, docker.io/acme/tool:1",
      "ghcr.io/acme/tool:v1.2, ghcr.io/acme/tool:v1.2",
      "localhost/sandbox-test:1, localhost/sandbox-test:1",
      "registry.local:5000/a/b/c, registry.local:5000/a/b/c:latest",
      "my__repo.x-y, docker.io/library/my__repo.x-y:latest"})
  void names_are_qualified_the_way_docker_reads_them(String given, String qualified) {
    assertThat(ImageNames.qualified(given)).isEqualTo(qualified);
  }

  @Test
  void a_digest_stays_a_digest() {
    assertThat(ImageNames.qualified("busybox@sha256:" + HEX)).isEqualTo("docker.io/library/busybox@sha256:" + HEX);
    assertThat(ImageNames.qualified("busybox:1@sha256:" + HEX)).isEqualTo("docker.io/library/busybox:1@sha256:" + HEX);
  }

  @ParameterizedTest
  @ValueSource(strings = {"sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
      "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"})
  void an_image_id_is_refused(String id) {
    assertThatThrownBy(() -> ImageNames.qualified(id)).isInstanceOf(ApiException.class)
        .hasMessageContaining("not an image id");
  }

  @ParameterizedTest
  @ValueSource(strings = {"Python", "a b", "", "/x", "x/", "x//y", "x:", "x@sha256:abc", "x@md5:a", "-x", "x--",
      "localhost/bespoke-snapshots/sbx_1:1", "bespoke-snapshots/sbx_1", "docker.io/bespoke-snapshots/x:1",
      "../x", "x:-tag", "x:.tag"})
  void what_is_no_image_name_or_names_a_snapshot_is_refused(String given) {
    assertThatThrownBy(() -> ImageNames.qualified(given)).isInstanceOf(ApiException.class)
        .extracting(e -> ((ApiException) e).status()).isEqualTo(422);
  }

  @Test
  void patterns_match_the_qualified_name_and_blank_allows_any() {
    ImageNames names = ImageNames.allowing("python:*, docker.io/library/busybox:1.?,ghcr.io/acme/*,acme/x,"
        + "localhost/t", "S");
    assertThat(names.allows("docker.io/library/python:3.12")).isTrue();
    assertThat(names.allows("docker.io/library/python3:3.12")).isFalse();
    assertThat(names.allows("docker.io/acme/x:latest")).isTrue();
    assertThat(names.allows("docker.io/acme/x:1")).isFalse();
    assertThat(names.allows("localhost/t:latest")).isTrue();
    assertThat(ImageNames.allowing("*", "S").allows("quay.io/x/y:1")).isTrue();
    assertThat(names.allows("docker.io/library/busybox:1.6")).isTrue();
    assertThat(names.allows("docker.io/library/busybox:1.36")).isFalse();
    assertThat(names.allows("ghcr.io/acme/tool:1")).isTrue();
    assertThat(names.allows("ghcr.io/acmecorp/tool:1")).isFalse();
    assertThat(ImageNames.allowing(" ", "S").allows("anything")).isTrue();
    assertThatThrownBy(() -> ImageNames.allowing("python:*, a b", "BESPOKE_DOCKER_IMAGES"))
        .isInstanceOf(ConfigException.class).hasMessageStartingWith("BESPOKE_DOCKER_IMAGES");
    assertThatThrownBy(() -> ImageNames.allowing(" , ,", "BESPOKE_DOCKER_IMAGES")).isInstanceOf(ConfigException.class);
  }
}
