package ai.bespokelabs.sandbox.core.db;

import ai.bespokelabs.sandbox.core.Secret;
import ai.bespokelabs.sandbox.core.config.ConfigException;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.pgclient.PgBuilder;
import io.vertx.pgclient.PgConnectOptions;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.PoolOptions;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import org.flywaydb.core.Flyway;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Where the gateway's PostgreSQL lives: an external server named by a URL, or an embedded server (real
 * PostgreSQL binaries) whose data directory survives restarts. Opening it applies the versioned migrations.
 * Blocking: call from the composition root before deploying verticles.
 */
public final class Database implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(Database.class);

  private final EmbeddedPostgres embedded;
  private final PgConnectOptions connect;

  private Database(EmbeddedPostgres embedded, PgConnectOptions connect) {
    this.embedded = embedded;
    this.connect = connect;
  }

  /** Connects to {@code url} if present, else starts (or reuses) the embedded server under {@code dataDir}. */
  public static Database open(Optional<Secret> url, Path dataDir) {
    Database db = url.isPresent() ? external(url.get()) : embedded(dataDir.resolve("postgres"));
    db.migrate();
    return db;
  }

  static Database external(Secret url) {
    String raw = url.reveal();
    if (raw.startsWith("jdbc:")) {
      raw = raw.substring("jdbc:".length());
    }
    PgConnectOptions opts;
    try {
      opts = PgConnectOptions.fromUri(raw);
    } catch (RuntimeException e) {
      throw new ConfigException("BESPOKE_DATABASE_URL must be a postgresql://user:password@host:port/db URL");
    }
    return new Database(null, opts);
  }

  static Database embedded(Path dir) {
    try {
      Files.createDirectories(dir.getParent());
      stopOrphanedServer(dir);
      EmbeddedPostgres pg = EmbeddedPostgres.builder()
          .setDataDirectory(dir)
          .setCleanDataDirectory(false)
          .setRegisterShutdownHook(false)
          .setServerConfig("max_connections", "200")
          // PostgreSQL's own defaults, which the embedded server's library turns off: a commit is flushed to disk
          // before it is acknowledged and pages are written whole, so a machine crash loses no acknowledged
          // sandbox, execution or ledger entry and leaves no torn page behind
          .setServerConfig("synchronous_commit", "on")
          .setServerConfig("fsync", "on")
          .setServerConfig("full_page_writes", "on")
          .start();
      LOG.info("Embedded PostgreSQL started on port {} with data in {}", pg.getPort(), dir);
      PgConnectOptions opts = new PgConnectOptions()
          .setHost("localhost").setPort(pg.getPort()).setDatabase("postgres").setUser("postgres");
      return new Database(pg, opts);
    } catch (IOException e) {
      throw new IllegalStateException("cannot start the embedded PostgreSQL in " + dir + ": " + e.getMessage(), e);
    }
  }

  /**
   * A gateway killed with SIGKILL leaves its embedded server running on the data directory. Stop it (smart
   * shutdown: its clients died with the gateway) so this start can take the directory over.
   */
  private static void stopOrphanedServer(Path dir) throws IOException {
    Path pidFile = dir.resolve("postmaster.pid");
    if (!Files.exists(pidFile)) {
      return;
    }
    long pid;
    try {
      pid = Long.parseLong(Files.readAllLines(pidFile).get(0).trim());
    } catch (RuntimeException e) {
      return;
    }
    Optional<ProcessHandle> orphan = ProcessHandle.of(pid)
        .filter(p -> p.info().command().map(c -> c.contains("postgres")).orElse(false));
    if (orphan.isEmpty()) {
      return;
    }
    LOG.warn("Stopping an embedded PostgreSQL (pid {}) left running on {} by a previous gateway", pid, dir);
    orphan.get().destroy();
    try {
      orphan.get().onExit().get(60, java.util.concurrent.TimeUnit.SECONDS);
    } catch (Exception e) {
      throw new IOException("the PostgreSQL server left on " + dir + " (pid " + pid + ") did not stop", e);
    }
  }

  private void migrate() {
    String jdbc = "jdbc:postgresql://" + connect.getHost() + ":" + connect.getPort() + "/" + connect.getDatabase();
    Flyway.configure()
        .dataSource(jdbc, connect.getUser(), connect.getPassword())
        .locations("classpath:db/migration")
        .load()
        .migrate();
  }

  /** A reactive pool over this database; owned by the caller. */
  public Pool pool(Vertx vertx, int maxSize) {
    PgConnectOptions opts = new PgConnectOptions(connect).setCachePreparedStatements(true).setPipeliningLimit(256);
    return PgBuilder.pool()
        .with(new PoolOptions().setMaxSize(maxSize).setName("sandbox-gateway").setShared(false))
        .connectingTo(opts)
        .using(vertx)
        .build();
  }

  public PgConnectOptions connectOptions() {
    return new PgConnectOptions(connect);
  }

  public boolean isEmbedded() {
    return embedded != null;
  }

  @Override
  public void close() {
    if (embedded != null) {
      try {
        embedded.close();
      } catch (IOException e) {
        LOG.warn("Embedded PostgreSQL did not stop cleanly: {}", e.getMessage());
      }
    }
  }

  /** Completes when a trivial query succeeds; used at start-up to fail fast on a bad URL. */
  public static Future<Void> ping(Pool pool) {
    return pool.query("SELECT 1").execute().mapEmpty();
  }
}
