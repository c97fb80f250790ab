package ai.bespokelabs.sandbox.core.repo;

import ai.bespokelabs.sandbox.core.Ids;
import ai.bespokelabs.sandbox.core.error.ApiException;
import ai.bespokelabs.sandbox.core.error.ProviderError;
import ai.bespokelabs.sandbox.core.model.SandboxConfig;
import ai.bespokelabs.sandbox.core.model.SandboxRecord;
import ai.bespokelabs.sandbox.core.policy.PolicyDecision;
import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.RowSet;
import io.vertx.sqlclient.SqlClient;
import io.vertx.sqlclient.Tuple;
import java.math.BigDecimal;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Sandboxes and their creation attempts. Every state change bumps {@code version} and appends its
 * lifecycle event in the same transaction.
 */
public final class SandboxRepository {
  private static final String SELECT = "SELECT " + SandboxRecord.COLUMNS + " FROM sandboxes s";
  private static final String BY_ID = SELECT + " WHERE s.id = $1";

  /**
   * A state change in one statement: the given CTEs change the sandbox into {@code u} (or change nothing),
   * the change's lifecycle event is appended for it, and the sandbox is returned as it is now, with
   * {@code changed} telling whether this statement changed it. $1 is the sandbox id; the event's id, time
   * and data are the parameters at the positions given.
   */
  private static String changed(String ctes, String type, String status, int eventId, int at, int data) {
    return "WITH " + ctes + """
        , ev AS (
          INSERT INTO lifecycle_events (id, organization_id, sandbox_id, type, status, occurred_at, data)
          SELECT $%d, u.organization_id, u.id, '%s', '%s', $%d, $%d::jsonb FROM u)
        SELECT %s, (SELECT count(*) FROM u) AS changed
        FROM (SELECT * FROM u UNION ALL SELECT * FROM sandboxes WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM u)) s"""
        .formatted(eventId, type, status, at, data, SandboxRecord.COLUMNS);
  }

  private final Pool pool;

  public SandboxRepository(Pool pool) {
    this.pool = pool;
  }

  /** What a create request asks to insert. */
  public record NewSandbox(String id, String organizationId, String backend, SandboxConfig config,
      String idempotencyKey, String fingerprint, String createToken, String nodeId, String creatorKeyId,
      BigDecimal hourlyRateUsd, String pricingSource, OffsetDateTime expiresAt, OffsetDateTime now,
      JsonObject placement) {}

  /**
   * The outcome of {@link #claimCreation}: a fresh row to provision, the original of a replay, or a policy
   * denial (already recorded).
   */
  public record Claim(SandboxRecord sandbox, boolean replay, PolicyDecision.Denial denial, boolean unrestricted) {
    Claim(SandboxRecord sandbox, boolean replay, PolicyDecision.Denial denial) {
      this(sandbox, replay, denial, false);
    }
  }

  /**
   * Claims a create. When the organization's policy sets no guardrail, in one statement (see
   * {@link #INSERT_UNRESTRICTED}); a taken idempotency key then answers the original row (a different
   * fingerprint is a 409). Otherwise {@code beforePolicy} runs (the ledger accrues running costs for spend
   * limits) and then, in one transaction: the row already bound to the idempotency key, else the
   * organization's policy row is locked and evaluated against the active sandboxes, and either a denial is
   * recorded or the sandbox is inserted ({@code creating}, which takes its concurrency slot) with attempt #1
   * and its event. Concurrent creates of one organization are serialized by the policy lock, so limits hold
   * exactly.
   */
  public Future<Claim> claimCreation(NewSandbox n, PolicyDecision.Request request, PolicyDecision.SpendReader spend,
      java.util.function.Supplier<Future<Void>> beforePolicy) {
    return claimIfUnrestricted(n).compose(claim -> claim != null ? Future.succeededFuture(claim)
        : beforePolicy.get().compose(v -> claimUnderPolicy(n, request, spend)));
  }

  /*
   * The common case in one statement: when the organization's policy sets no guardrail at all there is nothing
   * to evaluate or serialize, so the sandbox, attempt #1 and its event are inserted at once; the statement
   * checks the policy itself, so a policy set meanwhile is either seen or ordered after this create.
   */
  private static final String INSERT_UNRESTRICTED = """
      WITH free AS (
        SELECT NOT EXISTS (SELECT 1 FROM organization_policies p WHERE p.organization_id = $2
          AND (p.max_concurrent_sandboxes IS NOT NULL OR p.hourly_spend_limit_usd IS NOT NULL
            OR p.daily_spend_limit_usd IS NOT NULL OR p.allowed_backends IS NOT NULL
            OR p.allowed_gpu_types IS NOT NULL OR p.max_sandbox_lifetime_secs IS NOT NULL)) AS ok),
      """ + insertCtes("FROM free WHERE free.ok")
      + " SELECT free.ok AS unrestricted, c.* FROM free LEFT JOIN (SELECT " + SandboxRecord.COLUMNS + " FROM u s) c ON true";

  /**
   * The claim made in one statement ({@link Claim#unrestricted()}), or null when the organization has a policy
   * to evaluate (then nothing was written).
   */
  public Future<Claim> claimIfUnrestricted(NewSandbox n) {
    return pool.preparedQuery(INSERT_UNRESTRICTED).execute(insertParams(n))
        .compose(rows -> {
          Row r = rows.iterator().next();
          if (!r.getBoolean("unrestricted")) {
            return Future.succeededFuture(null);
          }
          if (r.getString("id") != null) {
            return Future.succeededFuture(new Claim(SandboxRecord.from(r), false, null, true));
          }
          // the idempotency key is taken: a replay, or the same key with a different request
          return existing(pool, n).compose(found -> found != null ? Future.succeededFuture(found)
              : Future.failedFuture(ApiException.conflict("idempotency key was already used with a different request")));
        });
  }

  private Future<Claim> claimUnderPolicy(NewSandbox n, PolicyDecision.Request request,
      PolicyDecision.SpendReader spend) {
    return pool.withTransaction(conn -> existing(conn, n).compose(found -> {
      if (found != null) {
        return Future.succeededFuture(found);
      }
      return PolicyRepository.lockCurrent(conn, n.organizationId())
          .compose(policy -> (policy.maxConcurrentSandboxes() == null ? Future.succeededFuture(0L)
              : PolicyRepository.activeSandboxes(conn, n.organizationId()))
              .compose(active -> spend(conn, policy, n, spend)
                  .map(s -> PolicyDecision.evaluate(policy, request, active, s))))
          .compose(denial -> denial.isPresent()
              ? PolicyRepository.recordDenial(conn, n.organizationId(), n.creatorKeyId(), request, denial.get(), n.now())
                  .map(v -> new Claim(null, false, denial.get()))
              : insert(conn, n));
    }));
  }

  private static Future<PolicyDecision.Spend> spend(SqlClient conn, ai.bespokelabs.sandbox.core.model.Policy policy,
      NewSandbox n, PolicyDecision.SpendReader reader) {
    if (!PolicyDecision.limitsSpend(policy)) {
      return Future.succeededFuture(PolicyDecision.Spend.NONE);
    }
    OffsetDateTime now = n.now();
    OffsetDateTime midnight = now.withOffsetSameInstant(java.time.ZoneOffset.UTC).toLocalDate().atStartOfDay()
        .atOffset(java.time.ZoneOffset.UTC);
    PolicyDecision.SpendReader counted = policy.includeLlmCost() ? withLlmCost(reader) : reader;
    return counted.spend(conn, n.organizationId(), now.minusHours(1), now)
        .compose(hour -> counted.spend(conn, n.organizationId(), midnight, now)
            .map(day -> new PolicyDecision.Spend(hour, day)));
  }

  /** {@code reader}'s spend plus what the organization's agent runs reported as LLM cost in the window. */
  private static PolicyDecision.SpendReader withLlmCost(PolicyDecision.SpendReader reader) {
    return (conn, orgId, from, to) -> reader.spend(conn, orgId, from, to).compose(sandboxes -> conn.preparedQuery(
            "SELECT COALESCE(sum(llm_cost_usd), 0) FROM agent_runs WHERE organization_id = $1 AND created_at >= $2"
                + " AND created_at <= $3")
        .execute(Tuple.of(orgId, from, to)).map(rows -> sandboxes.add(rows.iterator().next().getBigDecimal(0))));
  }

  private static Future<Claim> existing(SqlClient conn, NewSandbox n) {
    if (n.idempotencyKey() == null) {
      return Future.succeededFuture();
    }
    return conn.preparedQuery(SELECT + " WHERE s.organization_id = $1 AND s.idempotency_key = $2")
        .execute(Tuple.of(n.organizationId(), n.idempotencyKey()))
        .map(rows -> ApiKeyRepository.first(rows).map(r -> replay(SandboxRecord.from(r), n)).orElse(null));
  }

  private static Claim replay(SandboxRecord existing, NewSandbox n) {
    if (!existing.requestFingerprint().equals(n.fingerprint())) {
      throw ApiException.conflict("idempotency key was already used with a different request");
    }
    return new Claim(existing, true, null);
  }

  /**
   * CTEs inserting the sandbox ({@code u}), attempt #1 ({@code a}) and its event ({@code ev}); {@code from}
   * ends the sandbox's SELECT (empty: always one row). Parameters as {@link #insertParams}.
   */
  private static String insertCtes(String from) {
    return """
        u AS (
          INSERT INTO sandboxes (id, organization_id, backend, status, config, created_at, idempotency_key,
            request_fingerprint, create_token, node_id, creator_api_key_id, hourly_rate_usd, pricing_source,
            requested_at, provisioning_at, expires_at, version, placement)
          SELECT $1, $2, $3, 'creating', $4, $5, $6, $7, $8, $9, $10, $11, $12, $5, $5, $13, 1, $17::jsonb %s
          ON CONFLICT (organization_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
          RETURNING *),
        a AS (
          INSERT INTO sandbox_creation_attempts (id, sandbox_id, attempt_number, status, started_at, backend)
          SELECT $14, u.id, 1, 'creating', $5, $3 FROM u),
        ev AS (
          INSERT INTO lifecycle_events (id, organization_id, sandbox_id, type, status, occurred_at, data)
          SELECT $15, u.organization_id, u.id, 'sandbox.requested', 'creating', $5, $16::jsonb FROM u)""".formatted(from);
  }

  private static Tuple insertParams(NewSandbox n) {
    return Tuple.of(n.id(), n.organizationId(), n.backend(), n.config().toStoredJson(), n.now(), n.idempotencyKey(),
            n.fingerprint(), n.createToken(), n.nodeId(), n.creatorKeyId(), n.hourlyRateUsd(), n.pricingSource(),
            n.expiresAt())
        .addString(Ids.newId("att")).addString(Ids.newId("evt")).addValue(new JsonObject().put("backend", n.backend()))
        .addValue(n.placement());
  }

  private static final String INSERT = "WITH " + insertCtes("") + " SELECT " + SandboxRecord.COLUMNS + " FROM u s";

  /** Inserts the sandbox with attempt #1 and its event in one statement. */
  private static Future<Claim> insert(SqlClient conn, NewSandbox n) {
    return conn.preparedQuery(INSERT).execute(insertParams(n))
        .compose(rows -> {
          Row r = ApiKeyRepository.first(rows).orElse(null);
          if (r != null) {
            return Future.succeededFuture(new Claim(SandboxRecord.from(r), false, null));
          }
          // a concurrent create with the same key committed first
          return existing(conn, n);
        });
  }

  private static final String COMPLETE_CREATION = changed("""
      u AS (
        UPDATE sandboxes SET status = 'running', running_at = $2, provider_resource_id = $3, node_id = $4,
          hourly_rate_usd = COALESCE($7::numeric, hourly_rate_usd), placement = COALESCE($8::jsonb, placement),
          version = version + 1
        WHERE id = $1 AND status = 'creating' RETURNING *),
      a AS (
        UPDATE sandbox_creation_attempts SET status = 'succeeded', completed_at = $2, provider_resource_id = $3
        WHERE sandbox_id = $1 AND status = 'creating')""", "sandbox.running", "running", 5, 2, 6);

  /**
   * Marks a creation successful: {@code running}, attempt succeeded; a provider's own price quote for the
   * sandbox ({@code quotedHourlyRateUsd}, null for none) replaces the catalog's rate it was inserted with.
   */
  public Future<SandboxRecord> completeCreation(String id, String providerResourceId, String nodeId,
      BigDecimal quotedHourlyRateUsd, OffsetDateTime now) {
    return completeCreation(id, providerResourceId, nodeId, quotedHourlyRateUsd, null, now);
  }

  /** As {@link #completeCreation(String, String, String, BigDecimal, OffsetDateTime)}, recording the placement. */
  public Future<SandboxRecord> completeCreation(String id, String providerResourceId, String nodeId,
      BigDecimal quotedHourlyRateUsd, JsonObject placement, OffsetDateTime now) {
    return current(pool.preparedQuery(COMPLETE_CREATION).execute(Tuple.from(java.util.Arrays.asList(id, now,
        providerResourceId, nodeId, Ids.newId("evt"), new JsonObject().put("provider_resource_id", providerResourceId),
        quotedHourlyRateUsd, placement))));
  }

  private static final String FAIL_CREATION = changed("""
      u AS (
        UPDATE sandboxes SET status = 'failed', failed_at = $2, latest_error = $3, retry_status = $4,
          cleanup_status = $5, error = 'Sandbox operation failed.', placement = COALESCE($8::jsonb, placement),
          version = version + 1
        WHERE id = $1 AND status = 'creating' RETURNING *),
      a AS (
        UPDATE sandbox_creation_attempts SET status = 'failed', completed_at = $2, error = $3, retry_status = $4,
          cleanup_status = $5
        WHERE sandbox_id = $1 AND status = 'creating')""", "sandbox.failed", "failed", 6, 2, 7);

  /** Marks a creation failed with the provider payload; the attempt records the same error. */
  public Future<SandboxRecord> failCreation(String id, ProviderError error, OffsetDateTime now) {
    return failCreation(id, error, null, now);
  }

  /** As {@link #failCreation(String, ProviderError, OffsetDateTime)}, recording the placement. */
  public Future<SandboxRecord> failCreation(String id, ProviderError error, JsonObject placement, OffsetDateTime now) {
    String cleanup = (String) error.context().get("cleanup_status");
    String retry = retryStatus(error, cleanup);
    JsonObject payload = error.toJson();
    return current(pool.preparedQuery(FAIL_CREATION).execute(Tuple.of(id, now, payload, retry, cleanup,
        Ids.newId("evt"), new JsonObject().put("code", error.code().wire()).put("op", error.op()))
        .addValue(placement)));
  }

  private static final String RETARGET = changed("""
      u AS (
        UPDATE sandboxes SET backend = $7, hourly_rate_usd = $8, placement = $9::jsonb, version = version + 1
        WHERE id = $1 AND status = 'creating' RETURNING *),
      a AS (
        UPDATE sandbox_creation_attempts SET status = 'failed', completed_at = $2, error = $3,
          retry_status = 'retryable'
        WHERE sandbox_id = $1 AND status = 'creating' AND EXISTS (SELECT 1 FROM u)),
      n AS (
        INSERT INTO sandbox_creation_attempts (id, sandbox_id, attempt_number, status, started_at, backend)
        SELECT $4, u.id, (SELECT max(attempt_number) + 1 FROM sandbox_creation_attempts WHERE sandbox_id = $1),
          'creating', $2, $7 FROM u)""", "sandbox.retargeted", "creating", 5, 2, 6);

  /**
   * Moves a creating sandbox whose create on its backend failed with nothing allocated to the next backend of
   * its placement: the attempt fails with {@code error}, a new one starts on {@code backend} at its catalog
   * {@code hourlyRateUsd}. Empty when the sandbox is no longer creating.
   */
  public Future<Optional<SandboxRecord>> retarget(String id, ProviderError error, String backend,
      BigDecimal hourlyRateUsd, JsonObject placement, OffsetDateTime now) {
    JsonObject data = new JsonObject().put("from", error.backend()).put("to", backend).put("code", error.code().wire());
    return pool.preparedQuery(RETARGET).execute(Tuple.of(id, now, error.toJson(), Ids.newId("att"), Ids.newId("evt"),
            data, backend).addValue(hourlyRateUsd).addValue(placement))
        .map(rows -> ApiKeyRepository.first(rows).filter(r -> r.getLong("changed") > 0).map(SandboxRecord::from));
  }

  /** The sandbox row a {@link #changed} statement returned. */
  private static Future<SandboxRecord> current(Future<RowSet<Row>> rows) {
    return rows.map(r -> SandboxRecord.from(ApiKeyRepository.first(r).orElseThrow(
        () -> ApiException.notFound("sandbox not found"))));
  }

  static String retryStatus(ProviderError e, String cleanup) {
    if (e.outcome() == ProviderError.Outcome.UNKNOWN || "unknown".equals(cleanup)) {
      return "blocked_cleanup_unknown";
    }
    return e.retryable() ? "retryable" : "not_retryable";
  }

  public Future<Optional<SandboxRecord>> find(String orgId, String id) {
    return pool.preparedQuery(SELECT + " WHERE s.id = $1 AND s.organization_id = $2")
        .execute(Tuple.of(id, orgId))
        .map(rows -> ApiKeyRepository.first(rows).map(SandboxRecord::from));
  }

  static Future<Optional<SandboxRecord>> find(SqlClient conn, String id) {
    return conn.preparedQuery(BY_ID).execute(Tuple.of(id))
        .map(rows -> ApiKeyRepository.first(rows).map(SandboxRecord::from));
  }

  /**
   * What a list keeps: sandboxes in one of {@code statuses} and one of {@code backends} (null: any), created at
   * or after {@code createdAfter} and before {@code createdBefore} (null: unbounded).
   */
  public record ListFilter(List<String> statuses, List<String> backends, OffsetDateTime createdAfter,
      OffsetDateTime createdBefore) {
    public static final ListFilter NONE = new ListFilter(null, null, null, null);
  }

  // The creation-time bounds are always applied (infinite when absent) so that even a generic plan reads them
  // as a range of the (organization_id, created_at, id) index; status and backend only filter the rows read.
  private static final String LIST = SELECT + """
       WHERE s.organization_id = $1
        AND ($3::timestamptz IS NULL OR (s.created_at, s.id) < ($3::timestamptz, $4::text))
        AND s.created_at >= COALESCE($5::timestamptz, '-infinity'::timestamptz)
        AND s.created_at < COALESCE($6::timestamptz, 'infinity'::timestamptz)
        AND ($7::text[] IS NULL OR s.status = ANY ($7::text[]))
        AND ($8::text[] IS NULL OR s.backend = ANY ($8::text[]))
      ORDER BY s.created_at DESC, s.id DESC LIMIT $2""";

  /**
   * A page of the organization's sandboxes, newest first. {@code after} is the last row of the previous
   * page ({@code created_at}, {@code id}); {@code limit <= 0} means all.
   */
  public Future<List<SandboxRecord>> list(String orgId, int limit, OffsetDateTime afterCreatedAt, String afterId) {
    return list(orgId, limit, afterCreatedAt, afterId, ListFilter.NONE);
  }

  /** A page as {@link #list(String, int, OffsetDateTime, String)} of the sandboxes {@code filter} keeps. */
  public Future<List<SandboxRecord>> list(String orgId, int limit, OffsetDateTime afterCreatedAt, String afterId,
      ListFilter filter) {
    return pool.preparedQuery(LIST)
        .execute(Tuple.of(orgId, limit > 0 ? limit : null, afterCreatedAt, afterId, filter.createdAfter(),
            filter.createdBefore(), array(filter.statuses()), array(filter.backends())))
        .map(SandboxRepository::all);
  }

  private static String[] array(List<String> values) {
    return values == null ? null : values.toArray(String[]::new);
  }

  /** Sets a running sandbox's deadline to {@code expiresAt}; empty when it is not running. */
  public Future<Optional<SandboxRecord>> setDeadline(String orgId, String id, OffsetDateTime expiresAt,
      OffsetDateTime now) {
    return pool.withTransaction(conn -> conn.preparedQuery("UPDATE sandboxes SET expires_at = $3,"
            + " version = version + 1 WHERE id = $1 AND organization_id = $2 AND status = 'running' RETURNING id")
        .execute(Tuple.of(id, orgId, expiresAt))
        .compose(rows -> rows.rowCount() == 0 ? Future.succeededFuture(Optional.<SandboxRecord>empty())
            : LifecycleEvents.append(conn, orgId, id, null, "sandbox.deadline", "running", now,
                    new JsonObject().put("expires_at", ai.bespokelabs.sandbox.core.Times.iso(expiresAt)))
                .compose(v -> find(conn, id))));
  }

  /**
   * Records that a running sandbox's provider resource was adopted by node {@code nodeId} (after a restart
   * its runtime lives there now); empty when the sandbox is not running.
   */
  public Future<Optional<SandboxRecord>> adopted(String orgId, String id, String nodeId, OffsetDateTime now) {
    return pool.withTransaction(conn -> conn.preparedQuery("UPDATE sandboxes SET node_id = $3,"
            + " version = version + 1 WHERE id = $1 AND organization_id = $2 AND status = 'running' RETURNING id")
        .execute(Tuple.of(id, orgId, nodeId))
        .compose(rows -> rows.rowCount() == 0 ? Future.succeededFuture(Optional.<SandboxRecord>empty())
            : LifecycleEvents.append(conn, orgId, id, null, "sandbox.adopted", "running", now,
                    new JsonObject().put("node_id", nodeId))
                .compose(v -> find(conn, id))));
  }

  /**
   * Starts an operator termination: checks the expected version and moves the sandbox to {@code stopping}.
   * Returns empty when the sandbox is already destroyed (the caller returns it unchanged).
   */
  public Future<SandboxRecord> beginTermination(String orgId, String id, Integer expectedVersion,
      OffsetDateTime now) {
    return pool.preparedQuery(BEGIN_TERMINATION)
        .execute(Tuple.of(id, orgId, expectedVersion, now, Ids.newId("evt"), new JsonObject()))
        .map(rows -> {
          Row r = ApiKeyRepository.first(rows).orElseThrow(() -> ApiException.notFound("sandbox not found"));
          SandboxRecord s = SandboxRecord.from(r);
          if (r.getLong("changed") == 1 || "destroyed".equals(s.status())) {
            return s;
          }
          if (expectedVersion != null && expectedVersion != s.version()) {
            throw ApiException.conflict("sandbox changed; refresh before terminating");
          }
          throw ApiException.conflict("sandbox termination is already in progress");
        });
  }

  /*
   * cur locks the organization's row; u moves it to stopping unless it is destroyed or stopping already or
   * the expected version ($3, if any) is not the current one.
   */
  private static final String BEGIN_TERMINATION = changed("""
      cur AS (SELECT * FROM sandboxes WHERE id = $1 AND organization_id = $2 FOR UPDATE),
      u AS (
        UPDATE sandboxes t SET status = 'stopping', stopping_at = COALESCE(t.stopping_at, $4), version = t.version + 1
        FROM cur
        WHERE t.id = cur.id AND cur.status NOT IN ('destroyed', 'stopping')
          AND ($3::int IS NULL OR cur.version = $3::int)
        RETURNING t.*)""", "sandbox.stopping", "stopping", 5, 4, 6)
      .replace("SELECT * FROM sandboxes WHERE id = $1 AND NOT EXISTS", "SELECT * FROM cur WHERE NOT EXISTS");

  private static final String FINISH_TERMINATION = changed("""
      u AS (
        UPDATE sandboxes SET status = 'destroyed', terminated_at = $2, destroyed_at = $2, terminated_by_api_key_id = $3,
          termination_reason = $4, version = version + 1
        WHERE id = $1 AND status = 'stopping' RETURNING *)""", "sandbox.destroyed", "destroyed", 5, 2, 6);

  /** The provider confirmed the sandbox is gone. */
  public Future<SandboxRecord> finishTermination(String id, String byKeyId, String reason, OffsetDateTime now) {
    return current(pool.preparedQuery(FINISH_TERMINATION).execute(Tuple.of(id, now, byKeyId, reason,
        Ids.newId("evt"), new JsonObject().put("reason", reason))));
  }

  private static final String FAIL_TERMINATION = changed("""
      u AS (
        UPDATE sandboxes SET status = 'failed', failed_at = $2, latest_error = $3,
          retry_status = 'not_retryable', error = 'Sandbox operation failed.', version = version + 1
        WHERE id = $1 AND status = 'stopping' RETURNING *)""", "sandbox.failed", "failed", 4, 2, 5);

  /** The provider destroy failed: the sandbox is {@code failed} and not retried automatically. */
  public Future<SandboxRecord> failTermination(String id, ProviderError error, OffsetDateTime now) {
    return current(pool.preparedQuery(FAIL_TERMINATION).execute(Tuple.of(id, now, error.toJson(),
        Ids.newId("evt"), new JsonObject().put("code", error.code().wire()).put("op", error.op()))));
  }

  static List<SandboxRecord> all(RowSet<Row> rows) {
    List<SandboxRecord> out = new ArrayList<>(rows.size());
    rows.forEach(r -> out.add(SandboxRecord.from(r)));
    return out;
  }
}
