package ai.bespokelabs.sandbox.core.testing;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * One real embedded PostgreSQL per test JVM; each caller gets a fresh, empty database on it, so tests are
 * isolated without paying the server start-up each time.
 */
public final class TestDatabase {
  private static EmbeddedPostgres server;
  private static final AtomicInteger COUNTER = new AtomicInteger();

  private TestDatabase() {}

  /** A {@code postgresql://} URL of a new empty database. */
  public static synchronized String newDatabaseUrl() {
    try {
      if (server == null) {
        server = EmbeddedPostgres.builder().setServerConfig("max_connections", "300").start();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
          try {
            server.close();
          } catch (IOException ignored) {
            // the JVM is exiting
          }
        }));
      }
      String name = "test_" + ProcessHandle.current().pid() + "_" + COUNTER.incrementAndGet();
      try (Connection c = server.getPostgresDatabase().getConnection(); Statement st = c.createStatement()) {
        st.execute("CREATE DATABASE " + name);
      }
      return "postgresql://postgres@localhost:" + server.getPort() + "/" + name;
    } catch (IOException | SQLException e) {
      throw new IllegalStateException("cannot start the test PostgreSQL", e);
    }
  }
}
