package ai.bespokelabs.sandbox.core.db;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.bespokelabs.sandbox.core.config.ConfigException;
import io.vertx.core.Vertx;
import io.vertx.sqlclient.Pool;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The embedded server answers only to the gateway's generated password: no trust, no Unix socket, and a data
 * directory made by an earlier version (trust, no password) is locked down at its first start.
 */
class EmbeddedDatabaseTest {
  @TempDir
  Path dataDir;

  static int port(Database db) {
    return db.connectOptions().getPort();
  }

  static Connection connect(int port, String password) throws SQLException {
    return DriverManager.getConnection("jdbc:postgresql://127.0.0.1:" + port + "/postgres", "postgres", password);
  }

  @Test
  void a_new_server_requires_the_generated_password() throws Exception {
    try (Database db = Database.open(Optional.empty(), dataDir)) {
      Path file = dataDir.resolve(Database.PASSWORD_FILE);
      assertThat(Files.getPosixFilePermissions(file)).isEqualTo(PosixFilePermissions.fromString("rw-------"));
      String password = Files.readString(file).trim();
      assertThat(password).hasSizeGreaterThanOrEqualTo(40);

      assertThatThrownBy(() -> connect(port(db), null).close()).isInstanceOf(SQLException.class);
      assertThatThrownBy(() -> connect(port(db), "postgres").close()).isInstanceOf(SQLException.class)
          .hasMessageContaining("password authentication failed");
      try (Connection c = connect(port(db), password); Statement st = c.createStatement();
          var rs = st.executeQuery("SHOW unix_socket_directories")) {
        rs.next();
        assertThat(rs.getString(1)).as("no Unix socket to reach").isEmpty();
      }
      assertThat(Files.readAllLines(dataDir.resolve("postgres/pg_hba.conf")))
          .filteredOn(l -> !l.isBlank() && !l.startsWith("#"))
          .allSatisfy(l -> assertThat(l).endsWith("scram-sha-256"));

      Vertx vertx = Vertx.vertx();
      try {
        Pool pool = db.pool(vertx, 2);
        assertThat(pool.query("SELECT 1").execute().await(30, TimeUnit.SECONDS).iterator().next().getInteger(0))
            .isEqualTo(1);
        pool.close().await(30, TimeUnit.SECONDS);
      } finally {
        vertx.close().await(30, TimeUnit.SECONDS);
      }
    }
    try (Database again = Database.open(Optional.empty(), dataDir)) {
      assertThatThrownBy(() -> connect(port(again), null).close()).isInstanceOf(SQLException.class);
    }
  }

  @Test
  void a_server_created_on_trust_gets_the_password_and_keeps_its_data() throws Exception {
    Path dir = dataDir.resolve("postgres");
    try (EmbeddedPostgres old = EmbeddedPostgres.builder().setDataDirectory(dir).setCleanDataDirectory(false)
        .setRegisterShutdownHook(false).start()) {
      try (Connection c = connect(old.getPort(), null); Statement st = c.createStatement()) {
        st.execute("CREATE SCHEMA earlier");
        st.execute("CREATE TABLE earlier.kept (v text)");
        st.execute("INSERT INTO earlier.kept VALUES ('still here')");
      }
    }
    try (Database db = Database.open(Optional.empty(), dataDir)) {
      assertThatThrownBy(() -> connect(port(db), null).close()).isInstanceOf(SQLException.class);
      String password = Files.readString(dataDir.resolve(Database.PASSWORD_FILE)).trim();
      try (Connection c = connect(port(db), password); Statement st = c.createStatement();
          var rs = st.executeQuery("SELECT v FROM earlier.kept")) {
        rs.next();
        assertThat(rs.getString(1)).isEqualTo("still here");
      }
    }
  }

  @Test
  void a_data_directory_in_use_is_refused_and_its_server_left_running() throws Exception {
    try (Database db = Database.open(Optional.empty(), dataDir)) {
      assertThatThrownBy(() -> Database.open(Optional.empty(), dataDir)).isInstanceOf(ConfigException.class)
          .hasMessageStartingWith("the data directory " + dataDir + " is in use by another gateway (pid "
              + ProcessHandle.current().pid() + " on host ");
      String password = Files.readString(dataDir.resolve(Database.PASSWORD_FILE)).trim();
      try (Connection c = connect(port(db), password); Statement st = c.createStatement();
          var rs = st.executeQuery("SELECT 1")) {
        assertThat(rs.next()).isTrue();
      }
    }
    try (Database again = Database.open(Optional.empty(), dataDir)) {
      assertThat(again.isEmbedded()).as("free again once closed").isTrue();
    }
  }

  @Test
  void the_server_is_postgresql_17() throws Exception {
    assertThat(Database.EMBEDDED_MAJOR_VERSION).isEqualTo("17");
    try (Database db = Database.open(Optional.empty(), dataDir)) {
      String password = Files.readString(dataDir.resolve(Database.PASSWORD_FILE)).trim();
      try (Connection c = connect(port(db), password); Statement st = c.createStatement();
          var rs = st.executeQuery("SHOW server_version")) {
        rs.next();
        assertThat(rs.getString(1)).startsWith(Database.EMBEDDED_MAJOR_VERSION + ".");
      }
    }
    assertThat(Files.readString(dataDir.resolve("postgres/PG_VERSION")).strip())
        .isEqualTo(Database.EMBEDDED_MAJOR_VERSION);
  }

  @Test
  void a_data_directory_of_another_major_version_is_refused_and_left_as_it_was() throws Exception {
    Path dir = Files.createDirectories(dataDir.resolve("postgres"));
    Files.writeString(dir.resolve("PG_VERSION"), "14\n");
    Files.writeString(dir.resolve("postgresql.conf"), "# initialised by PostgreSQL 14\n");
    Files.createDirectories(dir.resolve("base/1"));
    Files.writeString(dir.resolve("base/1/1259"), "rows");
    List<Path> before;
    try (var files = Files.walk(dataDir)) {
      before = files.sorted().toList();
    }

    assertThatThrownBy(() -> Database.open(Optional.empty(), dataDir)).isInstanceOf(ConfigException.class)
        .hasMessageStartingWith("the embedded PostgreSQL data in " + dir + " was created by PostgreSQL 14 and this"
            + " gateway runs PostgreSQL 17, which cannot open it (nothing was changed)")
        .hasMessageContaining("move " + dir + " aside");
    try (var files = Files.walk(dataDir)) {
      assertThat(files.sorted().toList()).as("only the released lock file is new")
          .containsExactlyElementsOf(java.util.stream.Stream.concat(before.stream(),
              java.util.stream.Stream.of(dataDir.resolve(DataDirectoryLock.FILE))).sorted().toList());
    }
    assertThat(Files.readString(dir.resolve("PG_VERSION"))).isEqualTo("14\n");
    assertThat(Files.readString(dir.resolve("base/1/1259"))).isEqualTo("rows");
  }

  @Test
  void a_missing_password_file_is_a_clear_error() throws Exception {
    try (Database db = Database.open(Optional.empty(), dataDir)) {
      assertThat(db.isEmbedded()).isTrue();
    }
    Files.delete(dataDir.resolve(Database.PASSWORD_FILE));
    assertThatThrownBy(() -> Database.open(Optional.empty(), dataDir)).hasMessageContaining("which is missing");
  }
}
