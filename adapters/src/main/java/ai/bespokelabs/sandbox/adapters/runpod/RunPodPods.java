package ai.bespokelabs.sandbox.adapters.runpod;

import io.vertx.core.Future;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Predicate;

/** The pod calls of REST v1 that several parts share: get, list by our marks, terminate. */
final class RunPodPods {
  private final RunPodClient client;

  RunPodPods(RunPodClient client) {
    this.client = client;
  }

  String url(String podId) {
    return client.api("/pods/" + RunPodClient.encode(podId));
  }

  /** {@code GET /pods/{id}}: the pod, or a {@code not_found} failure. */
  Future<JsonObject> get(String podId, String op) {
    return client.expect(op, false, HttpMethod.GET, url(podId), null).map(r -> client.json(op, r, false));
  }

  /** {@code GET /pods}: our pods (their name carries our marks) that {@code filter} accepts. */
  Future<List<JsonObject>> list(String op, Predicate<RunPodMarks> filter) {
    return client.expect(op, false, HttpMethod.GET, client.api("/pods"), null).map(r -> {
      JsonArray all = client.array(op, r);
      List<JsonObject> out = new ArrayList<>();
      for (Object o : all) {
        if (o instanceof JsonObject pod) {
          RunPodMarks marks = RunPodMarks.parse(pod.getString("name"));
          if (marks != null && !"TERMINATED".equals(pod.getString("desiredStatus")) && filter.test(marks)) {
            out.add(pod);
          }
        }
      }
      return out;
    });
  }

  /** {@code DELETE /pods/{id}}; completes true when the pod was already gone. */
  Future<Boolean> delete(String podId, String op) {
    return client.call(op, true, HttpMethod.DELETE, url(podId), null).map(r -> {
      if (r.status() == 404) {
        return true;
      }
      if (!r.ok()) {
        throw client.httpError(op, r.status(), r.headers());
      }
      return false;
    });
  }

  /** The SSH endpoint of a running pod: its public IP and the public port mapped to 22, or null while unmapped. */
  static SshEndpoint sshEndpoint(JsonObject pod) {
    if (pod == null || !"RUNNING".equals(pod.getString("desiredStatus"))) {
      return null;
    }
    String ip = pod.getString("publicIp");
    Object mappings = pod.getValue("portMappings");
    if (ip == null || ip.isBlank() || !(mappings instanceof JsonObject m) || !(m.getValue("22") instanceof Number p)) {
      return null;
    }
    return new SshEndpoint(ip, p.intValue());
  }

  /** Where a pod's sshd listens. */
  record SshEndpoint(String host, int port) {}
}
