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
  private DataDirectoryLock ownedLock;

  private Database(EmbeddedPostgres embedded, PgConnectOptions connect) {
    this.embedded = embedded;
    this.connect = connect;
  }

  /** The file in the data directory holding the embedded server's superuser password (mode 0600). */
  public static final String PASSWORD_FILE = "postgres-password";
  /** The major version of the embedded PostgreSQL server this build ships (e.g. {@code 17}). */
  public static final String EMBEDDED_MAJOR_VERSION = shippedMajorVersion();

  /** The first line of the {@code pg_hba.conf} the gateway writes; its absence marks a server still on trust. */
  static final String HBA_HEADER = "# Written by the sandbox gateway at every start: passwords (scram-sha-256) only.";

  /**
   * Connects to {@code url} if present, else starts (or reuses) the embedded server in the data directory
   * {@code owner} holds. The caller keeps the lock until this database is closed.
   */
  public static Database open(Optional<Secret> url, DataDirectoryLock owner) {
    Database db = url.isPresent() ? external(url.get()) : embedded(owner);
    try {
      db.migrate();
    } catch (RuntimeException e) {
      db.close();
      throw e;
    }
    return db;
  }

  /**
   * As {@link #open(Optional, DataDirectoryLock)}; for the embedded server this takes the data directory's lock
   * itself and holds it until {@link #close()}.
   */
  public static Database open(Optional<Secret> url, Path dataDir) {
    if (url.isPresent()) {
      return open(url, (DataDirectoryLock) null);
    }
    DataDirectoryLock lock = DataDirectoryLock.acquire(dataDir, 0);
    try {
      Database db = open(url, lock);
      db.ownedLock = lock;
      return db;
    } catch (RuntimeException e) {
      lock.close();
      throw e;
    }
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

  /**
   * Starts the embedded server on {@code dir}. It listens on loopback TCP only (the library it comes from checks
   * readiness over TCP; no Unix socket) and authenticates every connection with the superuser's password
   * (scram-sha-256), generated on first start and kept in {@code passwordFile}: sandbox code sharing the host's
   * network cannot log in. A data directory created by an earlier version (trust authentication, no password)
   * is given the password and the same rules at its first start. Holding the data directory's lock is what
   * allows stopping a server an earlier gateway left running there.
   */
  static Database embedded(DataDirectoryLock owner) {
    Path dir = owner.dir().resolve("postgres");
    Path passwordFile = owner.dir().resolve(PASSWORD_FILE);
    try {
      Files.createDirectories(dir.getParent());
      requireShippedMajorVersion(dir);
      if (!Files.exists(passwordFile) && passwordsOnly(dir)) {
        throw new IllegalStateException("the embedded PostgreSQL in " + dir + " requires the password kept in "
            + passwordFile + ", which is missing");
      }
      Secret password = password(passwordFile);
      stopOrphanedServer(dir);
      boolean onTrust = Files.exists(dir.resolve("postgresql.conf")) && !passwordsOnly(dir);
      if (onTrust) {
        LOG.warn("The embedded PostgreSQL in {} accepted connections without a password; it requires one from now on",
            dir);
        try (EmbeddedPostgres old = server(dir, passwordFile, password, false).start()) {
          setPassword(old, password);
        }
      }
      EmbeddedPostgres pg = server(dir, passwordFile, password, true).start();
      LOG.info("Embedded PostgreSQL started on port {} with data in {}", pg.getPort(), dir);
      PgConnectOptions opts = new PgConnectOptions().setHost("localhost").setPort(pg.getPort())
          .setDatabase("postgres").setUser("postgres").setPassword(password.reveal());
      return new Database(pg, opts);
    } catch (IOException | java.sql.SQLException e) {
      throw new IllegalStateException("cannot start the embedded PostgreSQL in " + dir + ": " + e.getMessage(), e);
    }
  }

  /**
   * A data directory can only be opened by the PostgreSQL major version that initialised it: one made by another
   * (an earlier release of the gateway shipped PostgreSQL 14) is refused before anything in it is touched.
   */
  private static void requireShippedMajorVersion(Path dir) throws IOException {
    Path versionFile = dir.resolve("PG_VERSION");
    if (!Files.exists(versionFile)) {
      return;
    }
    String found = Files.readString(versionFile, java.nio.charset.StandardCharsets.UTF_8).strip();
    if (!found.equals(EMBEDDED_MAJOR_VERSION)) {
      throw new ConfigException("the embedded PostgreSQL data in " + dir + " was created by PostgreSQL " + found
          + " and this gateway runs PostgreSQL " + EMBEDDED_MAJOR_VERSION + ", which cannot open it (nothing was"
          + " changed): dump it with the gateway release that created it and restore the dump into a new data"
          + " directory, or move " + dir + " aside to start with an empty database (see the README, \"Upgrading"
          + " the embedded PostgreSQL\")");
    }
  }

  private static String shippedMajorVersion() {
    java.util.Properties p = new java.util.Properties();
    try (java.io.InputStream in = Database.class.getResourceAsStream("embedded-postgres.properties")) {
      if (in == null) {
        throw new IllegalStateException("embedded-postgres.properties is missing from the build");
      }
      p.load(in);
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
    String version = p.getProperty("version", "");
    return version.substring(0, version.indexOf('.') < 0 ? version.length() : version.indexOf('.'));
  }

  /** The embedded server's settings; {@code passwordsOnly} rewrites its {@code pg_hba.conf} before it starts. */
  private static EmbeddedPostgres.Builder server(Path dir, Path passwordFile, Secret password, boolean passwordsOnly) {
    return EmbeddedPostgres.builder()
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
        .setServerConfig("listen_addresses", "localhost")
        .setServerConfig("unix_socket_directories", "''")
        .setServerConfig("password_encryption", "scram-sha-256")
        .setConnectConfig("password", password.reveal())
        // initdb's options: the library hands its locale settings to initdb as --name=value
        .setLocaleConfig("pwfile", passwordFile.toString())
        .setDataDirectoryCustomizer(d -> {
          if (passwordsOnly) {
            writePasswordsOnlyHba(d.toPath());
          }
        });
  }

  /** The stored superuser password, or a new random one stored with mode 0600 (created so, never wider). */
  static Secret password(Path file) throws IOException {
    if (!Files.exists(file, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
      String value = ai.bespokelabs.sandbox.core.Ids.urlSafeToken(32);
      // written whole under another name, then moved into place: a crash never leaves an empty password file
      // (the data directory's lock makes this start its only writer)
      Path temp = Files.createTempFile(file.getParent(), ".postgres-password-", ".tmp",
          java.nio.file.attribute.PosixFilePermissions.asFileAttribute(
              java.nio.file.attribute.PosixFilePermissions.fromString("rw-------")));
      try {
        Files.writeString(temp, value + "\n", java.nio.charset.StandardCharsets.UTF_8);
        Files.move(temp, file, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
        return new Secret(value);
      } finally {
        Files.deleteIfExists(temp);
      }
    }
    String value = Files.readString(file, java.nio.charset.StandardCharsets.UTF_8).trim();
    if (value.isEmpty() || !value.matches("[A-Za-z0-9_-]+")) {
      throw new IOException(file + " does not hold a generated password; remove it only together with the database");
    }
    return new Secret(value);
  }

  private static boolean passwordsOnly(Path dir) throws IOException {
    Path hba = dir.resolve("pg_hba.conf");
    return Files.exists(hba) && Files.readAllLines(hba).stream().findFirst().orElse("").equals(HBA_HEADER);
  }

  /** Replaces the server's {@code pg_hba.conf}: a password for every connection, nothing trusted. */
  private static void writePasswordsOnlyHba(Path dir) {
    try {
      Files.writeString(dir.resolve("pg_hba.conf"), HBA_HEADER + "\n"
          + "local all all scram-sha-256\n"
          + "host all all 127.0.0.1/32 scram-sha-256\n"
          + "host all all ::1/128 scram-sha-256\n");
    } catch (IOException e) {
      throw new java.io.UncheckedIOException("cannot write " + dir.resolve("pg_hba.conf"), e);
    }
  }

  /** Gives a server still on trust authentication the superuser password (required from its next start). */
  private static void setPassword(EmbeddedPostgres pg, Secret password) throws java.sql.SQLException {
    try (java.sql.Connection c = pg.getPostgresDatabase().getConnection()) {
      // the driver sends only a SCRAM verifier computed here: the password is in no statement a log could hold
      c.unwrap(org.postgresql.PGConnection.class).alterUserPassword("postgres", password.reveal().toCharArray(),
          "scram-sha-256");
    }
  }

  /**
   * A gateway killed with SIGKILL leaves its embedded server running on the data directory. Stop it (smart
   * shutdown: its clients died with the gateway) so this start can take the directory over. Only the holder of
   * the data directory's lock calls this: no other gateway uses the server. A gateway of an earlier version
   * (which took no such lock) still holding the server's own lock file keeps it.
   */
  private static void stopOrphanedServer(Path dir) throws IOException {
    Path pidFile = dir.resolve("postmaster.pid");
    if (!Files.exists(pidFile)) {
      return;
    }
    if (heldByAnotherProcess(dir.resolve(SERVER_LOCK_FILE))) {
      throw new ConfigException("the embedded PostgreSQL in " + dir + " is in use by another gateway process;"
          + " stop that one first, or give this one another directory with BESPOKE_DATA_DIR");
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

  /** The lock file the embedded server's library holds in the server's data directory while it runs it. */
  private static final String SERVER_LOCK_FILE = "epg-lock";

  private static boolean heldByAnotherProcess(Path lockFile) throws IOException {
    if (!Files.exists(lockFile, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
      return false;
    }
    try (java.nio.channels.FileChannel ch = java.nio.channels.FileChannel.open(lockFile,
        java.nio.file.StandardOpenOption.WRITE, java.nio.file.LinkOption.NOFOLLOW_LINKS);
        java.nio.channels.FileLock lock = ch.tryLock()) {
      return lock == null;
    } catch (java.nio.channels.OverlappingFileLockException e) {
      return true;
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
    try {
      if (embedded != null) {
        embedded.close();
      }
    } catch (IOException e) {
      LOG.warn("Embedded PostgreSQL did not stop cleanly: {}", e.getMessage());
    } finally {
      if (ownedLock != null) {
        ownedLock.close();
      }
    }
  }

  /** Completes when a trivial query succeeds; used at start-up to fail fast on a bad URL. */
  public static Future<Void> ping(Pool pool) {
    return pool.query("SELECT 1").execute().mapEmpty();
  }
}
