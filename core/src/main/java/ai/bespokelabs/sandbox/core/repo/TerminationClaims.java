package ai.bespokelabs.sandbox.core.repo;

import io.vertx.core.Future;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.Tuple;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The sandboxes due to end, claimed by whoever ends them: the supervisor (deadlines passed, terminations left
 * unfinished) and a node's host backends (sandboxes whose node stopped). A claim moves the sandbox to
 * {@code stopping} under its owner and appends the lifecycle event, in one statement; the ending itself is
 * {@link ai.bespokelabs.sandbox.core.sandbox.Terminations}'.
 */
public final class TerminationClaims {
  private final Pool pool;

  public TerminationClaims(Pool pool) {
    this.pool = pool;
  }

  /** A sandbox the supervisor claimed for termination; {@code expired}: claimed for its deadline. */
  public record Claimed(String id, String organizationId, String backend, String nodeId, String providerResourceId,
      boolean expired) {}

  private static final String CLAIM = """
      WITH due AS (
        SELECT id FROM sandboxes
        WHERE (expires_at <= $1 AND status IN ('creating', 'running')
               AND (supervision_claimed_at IS NULL OR supervision_claimed_at < $2))
           OR (status = 'stopping' AND COALESCE(supervision_claimed_at, stopping_at, expires_at) < $2)
        ORDER BY expires_at NULLS LAST
        LIMIT $4
        FOR UPDATE SKIP LOCKED),
      claimed AS (
        UPDATE sandboxes s SET status = 'stopping', stopping_at = COALESCE(s.stopping_at, $1),
          supervision_owner = $3, supervision_claimed_at = $1, version = s.version + 1
        FROM due WHERE s.id = due.id
        RETURNING s.id, s.organization_id, s.backend, s.node_id, s.provider_resource_id,
                  (s.expires_at IS NOT NULL AND s.expires_at <= $1) AS expired),
      ev AS (
        INSERT INTO lifecycle_events (id, organization_id, sandbox_id, type, status, occurred_at, data)
        SELECT 'evt_' || md5(random()::text || claimed.id), claimed.organization_id, claimed.id, 'sandbox.stopping',
               'stopping', $1, jsonb_build_object('claimed_by', $3::text)
        FROM claimed)
      SELECT * FROM claimed""";

  /**
   * Claims, in one statement, sandboxes past their deadline and terminations left unfinished (a claim or an
   * operator DELETE older than {@code staleBefore}), skipping rows another supervisor holds. Claimed rows are
   * {@code stopping} with this owner, so a dead supervisor's claims are taken over once stale.
   */
  public Future<List<Claimed>> claimForTermination(String owner, OffsetDateTime now, OffsetDateTime staleBefore,
      int limit) {
    return pool.preparedQuery(CLAIM).execute(Tuple.of(now, staleBefore, owner, limit)).map(rows -> {
      List<Claimed> out = new ArrayList<>();
      for (Row r : rows) {
        out.add(new Claimed(r.getString("id"), r.getString("organization_id"), r.getString("backend"),
            r.getString("node_id"), r.getString("provider_resource_id"), r.getBoolean("expired")));
      }
      return out;
    });
  }

  /**
   * A live sandbox of a node that stopped (or is stopping), claimed to be ended: {@code endedAt} is when it
   * stopped being usable, and {@code expired} whether its deadline came first.
   */
  public record Stranded(String id, String organizationId, String backend, String providerResourceId,
      OffsetDateTime endedAt, boolean expired) {}

  /*
   * $1 node, $2 backends, $3 now, $4 owner, $5 whether the node's last heartbeat (not now) is when it stopped.
   * A sandbox ends when the node stopped, or at its deadline if that came first, never before it started.
   */
  private static final String CLAIM_STRANDED = """
      WITH stopped AS (
        SELECT LEAST($3, COALESCE(CASE WHEN $5 THEN
          (SELECT heartbeat_at FROM gateway_nodes WHERE node_id = $1) END, $3)) AS at),
      due AS (
        SELECT s.id, s.expires_at IS NOT NULL AND s.expires_at <= stopped.at AS expired,
               GREATEST(COALESCE(s.running_at, s.provisioning_at, s.created_at),
                        LEAST(stopped.at, COALESCE(s.expires_at, stopped.at))) AS at
        FROM sandboxes s, stopped
        WHERE s.node_id = $1 AND s.backend = ANY($2)
          AND (s.status IN ('creating', 'running') OR (s.status = 'stopping' AND s.supervision_owner = $4))
        ORDER BY s.id
        FOR UPDATE OF s SKIP LOCKED),
      claimed AS (
        UPDATE sandboxes s SET status = 'stopping', stopping_at = COALESCE(s.stopping_at, due.at),
          supervision_owner = $4, supervision_claimed_at = $3, version = s.version + 1
        FROM due WHERE s.id = due.id
        RETURNING s.id, s.organization_id, s.backend, s.provider_resource_id, due.at, due.expired),
      ev AS (
        INSERT INTO lifecycle_events (id, organization_id, sandbox_id, type, status, occurred_at, data)
        SELECT 'evt_' || md5(random()::text || claimed.id), claimed.organization_id, claimed.id, 'sandbox.stopping',
               'stopping', claimed.at, jsonb_build_object('claimed_by', $4::text)
        FROM claimed)
      SELECT * FROM claimed""";

  /**
   * Claims, as {@code stopping}, the live sandboxes of {@code backends} on node {@code nodeId}: their runtime
   * lived in that node's process, which stopped ({@code sinceHeartbeat}: it was killed or crashed, and its last
   * heartbeat is the latest moment it is known to have run) or is stopping now. Sandboxes an earlier claim of
   * {@code owner} left {@code stopping} (a stop cut short) are claimed again.
   */
  public Future<List<Stranded>> claimStranded(String nodeId, java.util.Collection<String> backends,
      OffsetDateTime now, String owner, boolean sinceHeartbeat) {
    return pool.preparedQuery(CLAIM_STRANDED)
        .execute(Tuple.tuple().addString(nodeId).addArrayOfString(backends.toArray(String[]::new))
            .addValue(now).addString(owner).addBoolean(sinceHeartbeat))
        .map(rows -> {
          List<Stranded> out = new ArrayList<>();
          for (Row r : rows) {
            out.add(new Stranded(r.getString("id"), r.getString("organization_id"), r.getString("backend"),
                r.getString("provider_resource_id"), r.getOffsetDateTime("at"), r.getBoolean("expired")));
          }
          return out;
        });
  }

  /** The earliest deadline of a live sandbox, if any. */
  public Future<Optional<OffsetDateTime>> nextDeadline() {
    return pool.query("SELECT min(expires_at) FROM sandboxes WHERE status IN ('creating', 'running')"
            + " AND expires_at IS NOT NULL")
        .execute()
        .map(rows -> Optional.ofNullable(rows.iterator().next().getOffsetDateTime(0)));
  }
}
