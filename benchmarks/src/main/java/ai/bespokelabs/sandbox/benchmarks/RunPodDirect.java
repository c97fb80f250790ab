package ai.bespokelabs.sandbox.benchmarks;

import static ai.bespokelabs.sandbox.benchmarks.ProviderBenchmark.expect;
import static ai.bespokelabs.sandbox.benchmarks.ProviderBenchmark.send;

import ai.bespokelabs.sandbox.adapters.exec.CommandLine;
import ai.bespokelabs.sandbox.adapters.runpod.RunPodSimulator;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpRequest;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.time.Duration;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.Map;
import java.util.UUID;
import org.apache.sshd.client.SshClient;
import org.apache.sshd.client.channel.ChannelExec;
import org.apache.sshd.client.channel.ClientChannelEvent;
import org.apache.sshd.client.session.ClientSession;
import org.apache.sshd.common.config.keys.KeyUtils;
import org.apache.sshd.common.config.keys.PublicKeyEntry;
import org.apache.sshd.common.keyprovider.KeyPairProvider;

/**
 * The RunPod adapter's calls made directly to the simulator and its pods' sshd, with the same MINA SSHD client
 * (used synchronously here): create is {@code POST /pods} (the adapter's body, our public key as
 * {@code PUBLIC_KEY}), then {@code GET /pods/{id}} until port 22 is mapped; exec of {@code true} is the
 * adapter's first exec on a pod: {@code GET /pods/{id}} for its SSH endpoint, an SSH connection authenticated
 * by key, one exec channel running {@code true} ({@code echo $$ > pidfile && exec env true}) read to its close
 * and exit status: the plain SSH exec. The adapter runs the program detached instead (one channel that launches
 * it and follows its output files, then a cleanup not waited for), which this benchmark counts as the gateway's
 * overhead. Host keys are accepted, not pinned (the adapter checks and stores a pin per pod). Destroy closes the session and is {@code DELETE /pods/{id}}.
 */
final class RunPodDirect implements ProviderBenchmark.Direct, AutoCloseable {
  static final String KEY = "rp_benchmark_key";
  private static final Duration TIMEOUT = Duration.ofSeconds(30);

  private final RunPodSimulator sim;
  private final KeyPair keyPair;
  private final SshClient ssh = SshClient.setUpDefaultClient();
  private final Map<String, ClientSession> sessions = new HashMap<>();

  RunPodDirect(RunPodSimulator sim) throws GeneralSecurityException {
    this.sim = sim;
    this.keyPair = KeyUtils.generateKeyPair(KeyPairProvider.ECDSA_SHA2_NISTP256, 256);
    ssh.setServerKeyVerifier((session, remote, key) -> true); // accepted, not pinned (and not logged each time)
    ssh.start();
  }

  /** The gateway's settings for the simulator. */
  static Map<String, String> env(RunPodSimulator sim) {
    return Map.of("RUNPOD_API_KEY", KEY, "RUNPOD_API_URL", sim.url());
  }

  private HttpRequest.Builder request(String path) {
    return HttpRequest.newBuilder(URI.create(sim.url() + path)).header("Authorization", "Bearer " + KEY);
  }

  private JsonObject pod(String id) {
    return new JsonObject(expect(send(request("/pods/" + id).GET()), 200, "runpod get").body());
  }

  private static boolean sshMapped(JsonObject pod) {
    return "RUNNING".equals(pod.getString("desiredStatus")) && !pod.getString("publicIp", "").isBlank()
        && pod.getValue("portMappings") instanceof JsonObject m && m.getValue("22") instanceof Number;
  }

  @Override
  public String create() {
    JsonObject body = new JsonObject()
        .put("name", "bsk.sbx_" + UUID.randomUUID().toString().replace("-", "") + ".org_bench.ctk_"
            + UUID.randomUUID().toString().replace("-", ""))
        .put("computeType", "GPU").put("ports", new JsonArray().add("22/tcp"))
        .put("imageName", "runpod/pytorch:2.4.0-py3.11-cuda12.4.1-devel-ubuntu22.04")
        .put("gpuTypeIds", new JsonArray().add("NVIDIA GeForce RTX 4090")).put("gpuCount", 1)
        .put("env", new JsonObject().put("PUBLIC_KEY", PublicKeyEntry.toString(keyPair.getPublic()) + " bench"));
    String id = new JsonObject(expect(send(request("/pods").header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(body.encode()))), 2, "runpod create").body()).getString("id");
    long pause = 100;
    while (!sshMapped(pod(id))) { // polled as the adapter does
      ProviderBenchmark.sleep(pause);
      pause = Math.min(2_000, pause * 3 / 2);
    }
    return id;
  }

  @Override
  public void exec(String id) {
    JsonObject pod = pod(id);
    int port = pod.getJsonObject("portMappings").getInteger("22");
    StringBuilder line = new StringBuilder("echo $$ > /tmp/.bsk-exe_" + UUID.randomUUID().toString().replace("-", "")
        + ".pid && exec env");
    CommandLine.of(null, null, "true", null).forEach(a -> line.append(" '").append(a.replace("'", "'\\''"))
        .append('\''));
    try {
      ClientSession session = ssh.connect("root", pod.getString("publicIp"), port).verify(TIMEOUT).getSession();
      sessions.put(id, session);
      session.addPublicKeyIdentity(keyPair);
      session.auth().verify(TIMEOUT);
      try (ChannelExec channel = session.createExecChannel(line.toString())) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        channel.setOut(out);
        channel.setErr(out);
        channel.open().verify(TIMEOUT);
        channel.waitFor(EnumSet.of(ClientChannelEvent.CLOSED), TIMEOUT);
        Integer exit = channel.getExitStatus();
        if (exit == null || exit != 0) {
          throw new IllegalStateException("runpod exec: true exited " + exit + ": " + out);
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Override
  public void destroy(String id) {
    ClientSession session = sessions.remove(id);
    if (session != null) {
      session.close(true);
    }
    expect(send(request("/pods/" + id).DELETE()), 2, "runpod destroy");
  }

  @Override
  public void close() throws IOException {
    ssh.stop();
  }
}
