package ai.bespokelabs.sandbox.adapters.ray;

import io.vertx.core.Future;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/** The job calls lifecycle and inventory share: list ours, stop, delete. */
final class RayJobs {
  /** The jobs collection: the dashboard registers it with a trailing slash. */
  static final String JOBS = "/api/jobs/";

  private final RayClient client;

  RayJobs(RayClient client) {
    this.client = client;
  }

  static String job(String submissionId) {
    return JOBS + URLEncoder.encode(submissionId, StandardCharsets.UTF_8).replace("+", "%20");
  }

  /** Every job carrying our metadata (Ray cannot filter: the whole list is read and filtered here). */
  Future<List<JsonObject>> ours(String op) {
    return client.expect(op, false, HttpMethod.GET, JOBS, null).map(r -> {
      List<JsonObject> out = new ArrayList<>();
      for (Object o : client.array(op, r)) {
        if (o instanceof JsonObject j && RaySandboxes.sandboxOf(j) != null && j.getString("submission_id") != null) {
          out.add(j);
        }
      }
      return out;
    });
  }

  /** The jobs of one sandbox. */
  Future<List<JsonObject>> of(String sandboxId, String op) {
    return ours(op).map(all -> all.stream().filter(j -> sandboxId.equals(RaySandboxes.sandboxOf(j))).toList());
  }

  /** Stops a job; one already ended or gone is fine. Completes with whether Ray knew the job. */
  Future<Boolean> stop(String submissionId, String op) {
    return client.call(op, true, HttpMethod.POST, job(submissionId) + "/stop", null).compose(r -> {
      if (r.ok() || r.status() == 404) {
        return Future.succeededFuture(r.ok());
      }
      return Future.failedFuture(RayClient.statusError(op, r.status(), r.headers()));
    });
  }

  /** The job's details; null when Ray does not know it. */
  Future<JsonObject> details(String submissionId, String op) {
    return client.call(op, false, HttpMethod.GET, job(submissionId), null).map(r -> {
      if (r.status() == 404) {
        return null;
      }
      if (!r.ok()) {
        throw RayClient.statusError(op, r.status(), r.headers());
      }
      return client.object(op, r, false);
    });
  }

  /** Deletes a terminal job; one already gone is fine. */
  Future<Void> delete(String submissionId, String op) {
    return client.call(op, true, HttpMethod.DELETE, job(submissionId), null).compose(r -> {
      if (r.ok() || r.status() == 404) {
        return Future.succeededFuture();
      }
      return Future.failedFuture(RayClient.statusError(op, r.status(), r.headers()));
    });
  }
}
