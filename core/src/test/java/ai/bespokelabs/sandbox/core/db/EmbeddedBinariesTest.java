package ai.bespokelabs.sandbox.core.db;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedInputStream;
import java.io.InputStream;
import java.net.URL;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;
import org.junit.jupiter.api.Test;
import org.tukaani.xz.XZInputStream;

/**
 * The build ships the embedded server for Linux x86-64, Linux arm64 and macOS arm64, each once (the
 * embedded-server library refuses duplicates), and nothing for other platforms; the macOS archive, repacked at
 * build time, still holds a complete server whose links all lead to files in it.
 */
class EmbeddedBinariesTest {
  private static List<URL> resources(String name) throws Exception {
    return Collections.list(EmbeddedBinariesTest.class.getClassLoader().getResources(name));
  }

  @Test
  void exactly_the_supported_platforms_are_shipped() throws Exception {
    for (String name : List.of("postgres-linux-x86_64.txz", "postgres-linux-arm_64.txz",
        "postgres-darwin-arm_64.txz")) {
      assertThat(resources(name)).as(name).hasSize(1);
    }
    for (String name : List.of("postgres-darwin-x86_64.txz", "postgres-windows-x86_64.txz",
        "postgres-linux-x86_64-alpine_linux.txz")) {
      assertThat(resources(name)).as(name).isEmpty();
    }
  }

  @Test
  void the_repacked_macos_archive_holds_a_complete_server() throws Exception {
    Map<String, String> links = new HashMap<>();
    Map<String, Long> files = new HashMap<>();
    try (InputStream in = new BufferedInputStream(resources("postgres-darwin-arm_64.txz").get(0).openStream());
        TarArchiveInputStream tar = new TarArchiveInputStream(new XZInputStream(in))) {
      TarArchiveEntry e;
      while ((e = tar.getNextEntry()) != null) {
        if (e.isSymbolicLink()) {
          links.put(e.getName(), e.getLinkName());
        } else if (e.isFile()) {
          files.put(e.getName(), e.getSize());
        }
      }
    }
    assertThat(files).containsKeys("bin/postgres", "bin/initdb", "bin/pg_ctl");
    assertThat(links).as("the duplicate libraries became links").containsKey("lib/libicudata.dylib");
    links.forEach((name, target) -> {
      String dir = name.substring(0, name.lastIndexOf('/') + 1);
      assertThat(files).as(name + " -> " + target).containsKey(dir + target);
    });
  }
}
