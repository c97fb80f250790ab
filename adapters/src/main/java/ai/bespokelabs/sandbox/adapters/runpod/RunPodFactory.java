package ai.bespokelabs.sandbox.adapters.runpod;

import ai.bespokelabs.sandbox.adapters.spi.Backend;
import ai.bespokelabs.sandbox.adapters.spi.BackendFactory;
import java.util.List;
import java.util.Optional;

/** Registers the {@code runpod} backend ({@link BackendFactory}). */
public final class RunPodFactory implements BackendFactory {
  @Override
  public String name() {
    return RunPodProvider.BACKEND;
  }

  @Override
  public boolean nodeBound() {
    return false;
  }

  /** What this backend reads (its defaults included); README's settings table documents each. */
  @Override
  public List<Setting> settings() {
    return List.of(
        Setting.of("RUNPOD_API_KEY", "apiKey"),
        Setting.of("RUNPOD_API_URL", "apiUrl", "https://rest.runpod.io/v1"),
        Setting.of("RUNPOD_IMAGE", "image", "runpod/pytorch:2.4.0-py3.11-cuda12.4.1-devel-ubuntu22.04"),
        Setting.of("RUNPOD_GPU_TYPE", "gpuType", "NVIDIA GeForce RTX 4090"),
        Setting.of("BESPOKE_RUNPOD_SSH_KEY", "sshKey"),
        Setting.of("RUNPOD_CREATE_TIMEOUT_SECS", "createTimeoutSecs", 600),
        Setting.of("RUNPOD_REQUEST_TIMEOUT_SECS", "requestTimeoutSecs", 30));
  }

  @Override
  public Optional<Backend> create(Environment e) {
    return RunPodSettings.from(e.settings(), e.dataDir()).map(s -> new RunPodProvider(e.vertx(), s, e.clock()));
  }
}
